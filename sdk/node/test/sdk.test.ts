// The Node SDK's suite. The unit tests run alone; the rest run against
// the RelayBell server that server/serversdk_test.go starts, named by
// RELAYBELL_URL, RELAYBELL_API_KEY and RELAYBELL_WEBHOOK_RECEIVER (a
// loopback receiver the server may deliver to, which shows what it got at
// <receiver>/captured). A browser is subscribed there as "user-1".
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { RelayBell, RelayBellError, USER_AGENT, identityHash, retryingFetch, unwrap, verifyOriginalSignature, verifyWebhook, WebhookVerificationError } from "../src/index.js";

const url = process.env["RELAYBELL_URL"];
const apiKey = process.env["RELAYBELL_API_KEY"] ?? "";
const receiver = process.env["RELAYBELL_WEBHOOK_RECEIVER"] ?? "";
const live = { skip: url ? false : "RELAYBELL_URL is not set" };

function scripted(statuses: number[], seen: string[]) {
  let n = 0;
  return async (req: Request) => {
    seen.push(`${req.method} ${new URL(req.url).pathname} ${req.headers.get("User-Agent")} ${req.headers.get("Idempotency-Key") ?? ""} ${await req.text()}`);
    const status = statuses[n++] ?? 200;
    const headers = new Headers({ "Content-Type": "application/json", "X-Request-Id": `req-${n - 1}` });
    if (status === 429) headers.set("Retry-After", "7");
    const body = status === 200 ? { ok: true, eventId: "ev1" } : { error: status === 429 ? "rate_limited" : "internal", request_id: `req-${n - 1}` };
    return new Response(JSON.stringify(body), { status, headers });
  };
}

test("retries POST /events with an Idempotency-Key on 429 (Retry-After) and 5xx", async () => {
  const seen: string[] = [];
  const waits: number[] = [];
  const rb = new RelayBell({ baseUrl: "http://relaybell.invalid", apiKey: "k", fetch: scripted([429, 503, 200], seen), baseBackoffMs: 100, sleep: async (ms) => void waits.push(ms) });
  const out = await rb.track({ event: "purchase" }, "order-1");
  assert.equal(out.eventId, "ev1");
  assert.deepEqual(seen, Array(3).fill('POST /api/v1/events relaybell-node/1.2.0 order-1 {"event":"purchase"}'));
  assert.equal(waits.length, 2);
  assert.equal(waits[0], 7000);
  assert.ok(waits[1]! >= 100 && waits[1]! <= 200, `second wait ${waits[1]}`);
});

test("does not retry a POST without a key, nor a send", async () => {
  const seen: string[] = [];
  const rb = new RelayBell({ baseUrl: "http://relaybell.invalid", apiKey: "k", fetch: scripted([503, 200], seen), sleep: async () => {} });
  await assert.rejects(rb.track({ event: "purchase" }), (e: unknown) => e instanceof RelayBellError && e.status === 503 && e.code === "internal" && e.requestId === "req-0");
  assert.equal(seen.length, 1);
  const f = retryingFetch({ baseUrl: "", apiKey: "", fetch: scripted([500, 200], []), sleep: async () => {} });
  assert.equal((await f(new Request("http://x/api/v1/notifications", { method: "POST", body: "{}" }))).status, 500);
});

test("a send whose target came out undefined is refused, never sent to everyone", () => {
  const seen: string[] = [];
  const rb = new RelayBell({ baseUrl: "http://relaybell.invalid", apiKey: "k", fetch: scripted([202], seen), sleep: async () => {} });
  for (const k of ["externalId", "externalIds", "segmentId", "topicId"]) {
    assert.throws(() => rb.send({ title: "x", [k]: undefined } as never), TypeError);
  }
  assert.equal(seen.length, 0);
});

test("retries a GET up to maxRetries", async () => {
  const seen: string[] = [];
  const rb = new RelayBell({ baseUrl: "http://relaybell.invalid", apiKey: "k", maxRetries: 2, fetch: scripted([500, 502, 503, 200], seen), sleep: async () => {} });
  await assert.rejects(rb.listTopics(), (e: unknown) => e instanceof RelayBellError && e.status === 503 && e.requestId === "req-2");
  assert.equal(seen.length, 3);
});

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const body = '{"event":"webhook.test","data":{"webhookId":"wh_1","message":"hello"},"projectId":"prj_1","at":"2023-11-14T22:13:20Z"}';
// The vector of webhooks/signature's ExampleSign.
const header = "t=1700000000,v1=7cb961530578c1f9a07e3e6a3ad31767596119cfdb5b59d83185e657fc6bcbad";
const at = 1700000000 * 1000;

test("webhook verifier: tolerance, extra keys, tampering, legacy header", () => {
  verifyWebhook(header, body, { secrets: [secret], now: at });
  verifyWebhook(header, Buffer.from(body), { secrets: ["whsec_old", secret], now: at + 300_000 });
  verifyWebhook(`t=1700000000,v0=abc,k=v,v1=${"0".repeat(64)},v1=7cb961530578c1f9a07e3e6a3ad31767596119cfdb5b59d83185e657fc6bcbad,v2=zz`, body, { secrets: [secret], now: at });
  const fails = (h: string | null, b: string, now: number, reason: string) =>
    assert.throws(() => verifyWebhook(h, b, { secrets: [secret], now }), (e: unknown) => e instanceof WebhookVerificationError && e.reason === reason);
  fails(header, body, at + 301_000, "timestamp");
  fails(header, body, at - 301_000, "timestamp");
  fails(header, body.replace("hello", "HELLO"), at, "mismatch");
  fails(null, body, at, "no_signature");
  fails("sha256=2e82fc3d4374980d666349ffd28338b37802b2e94d5b77d32e65ce5531091599", body, at, "malformed");
  fails("t=1,t=2,v1=" + "0".repeat(64), body, at, "malformed");
});

test("webhook verifier: the shared vectors of webhooks/signature", () => {
  const vectors = JSON.parse(readFileSync(new URL("../../../../webhooks/signature/testdata/vectors.json", import.meta.url), "utf8")) as
    { name: string; secret: string; t: number; body: string; webhookSignature: string }[];
  assert.ok(vectors.length > 0);
  for (const v of vectors) verifyWebhook(v.webhookSignature, v.body, { secrets: [v.secret], now: v.t * 1000 });
});

test("original header verifier (opt-in): valid, tampered, other secret, malformed, missing, shared vectors", () => {
  const original = "sha256=2e82fc3d4374980d666349ffd28338b37802b2e94d5b77d32e65ce5531091599";
  verifyOriginalSignature(original, body, { secrets: ["whsec_old", secret] });
  verifyOriginalSignature(` ${original} `, Buffer.from(body), { secrets: [secret] });
  const fails = (h: string | null | undefined, b: string, secrets: string[], reason: string) =>
    assert.throws(() => verifyOriginalSignature(h, b, { secrets }), (e: unknown) => e instanceof WebhookVerificationError && e.reason === reason);
  fails(original, body.replace("hello", "HELLO"), [secret], "mismatch");
  fails(original, body, ["whsec_other"], "mismatch");
  fails(original, body, [], "mismatch");
  fails(null, body, [secret], "no_signature");
  fails(undefined, body, [secret], "no_signature");
  fails("", body, [secret], "no_signature");
  fails(original.slice("sha256=".length), body, [secret], "malformed");
  fails("sha1=" + original.slice("sha256=".length), body, [secret], "malformed");
  fails(original.slice(0, -2), body, [secret], "malformed");
  fails(header, body, [secret], "malformed");
  const vectors = JSON.parse(readFileSync(new URL("../../../../webhooks/signature/testdata/vectors.json", import.meta.url), "utf8")) as
    { name: string; secret: string; body: string; legacySignature: string }[];
  assert.ok(vectors.length > 0);
  for (const v of vectors) verifyOriginalSignature(v.legacySignature, v.body, { secrets: [v.secret] });
});

test("unwrap turns an error answer of RelayBell.api into a RelayBellError", async () => {
  const rb = new RelayBell({
    baseUrl: "http://relaybell.invalid", apiKey: "k", sleep: async () => {},
    fetch: async () => new Response(JSON.stringify({ error: "insufficient_scope", required: "settings:write", request_id: "req-9" }), { status: 403, headers: { "Content-Type": "application/json" } }),
  });
  await assert.rejects(unwrap(rb.api.POST("/api/v1/templates", { body: { name: "x" } })), (e: unknown) =>
    e instanceof RelayBellError && e.status === 403 && e.code === "insufficient_scope" && e.required === "settings:write" && e.requestId === "req-9");
});

test("identityHash is the hex HMAC-SHA256 of the id", () => {
  assert.equal(identityHash("key", "The quick brown fox jumps over the lazy dog"), "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
});

test("against RelayBell: sends, pages, detail, cancel, typed errors", live, async () => {
  const rb = new RelayBell({ baseUrl: url!, apiKey });
  const ids: string[] = [];
  for (const title of ["One", "Two", "Three"]) {
    const acc = await rb.send({ title, externalId: "user-1" });
    assert.equal(acc.status, "queued");
    ids.push(acc.notificationId);
  }
  const titles: string[] = [];
  for await (const n of rb.notifications({ limit: 1 })) titles.push(n.title ?? "");
  assert.deepEqual(titles, ["Three", "Two", "One"]);
  const detail = await rb.getNotification(ids[0]!);
  assert.equal(detail.notification?.title, "One");

  const later = await rb.send({ title: "Later", externalId: "user-1", sendAt: new Date(Date.now() + 48 * 3600_000).toISOString() });
  assert.equal(later.status, "scheduled");
  await rb.cancelNotification(later.notificationId);
  assert.equal((await rb.getNotification(later.notificationId)).notification?.status, "canceled");

  await assert.rejects(rb.getNotification("00000000-0000-4000-8000-000000000000"), (e: unknown) =>
    e instanceof RelayBellError && e.status === 404 && e.code === "not_found" && e.requestId !== "");
  await assert.rejects(rb.send({ title: "" }), (e: unknown) => e instanceof RelayBellError && e.code === "title_required");
  const eventsOnly = new RelayBell({ baseUrl: url!, apiKey: process.env["RELAYBELL_EVENTS_KEY"] ?? "" });
  await assert.rejects(eventsOnly.send({ title: "x" }), (e: unknown) =>
    e instanceof RelayBellError && e.status === 403 && e.code === "insufficient_scope" && e.required === "send" && e.requestId !== "");
});

test("against RelayBell: events, segments, topics, lists, stats, User-Agent", live, async () => {
  const rb = new RelayBell({ baseUrl: url!, apiKey });
  const ev = { event: "purchase", externalId: "user-1", properties: { value: 12.5, currency: "EUR" } };
  const first = await rb.track(ev, "order-2001");
  const again = await rb.track(ev, "order-2001");
  assert.equal(again.eventId, first.eventId);
  const events = await rb.listEvents();
  assert.equal(events.events?.filter((e) => e.id === first.eventId).length, 1);

  const seg = await rb.createSegment({ name: "French speakers", filters: { match: "all", rules: [{ field: "language", op: "is", value: "fr" }] } });
  assert.ok((await rb.listSegments()).segments?.some((s) => s.id === seg.id && s.name === "French speakers"));
  await rb.saveTopic({ name: "Sales" });
  assert.ok((await rb.listTopics()).topics?.some((t) => t.name === "Sales"));
  for (const list of [rb.listAutomations(), rb.listJourneys(), rb.listTemplates(), rb.listFeeds(), rb.listSchedules(), rb.listWebhooks(), rb.stats()]) {
    await list;
  }
  // Any other key route, typed, through RelayBell.api and unwrap.
  const tpl = await unwrap(rb.api.POST("/api/v1/templates", { body: { name: "Welcome", title: "Hello {name|there}" } }));
  assert.equal((await unwrap(rb.api.GET("/api/v1/templates/{id}", { params: { path: { id: tpl.id } } }))).title, "Hello {name|there}");
  await unwrap(rb.api.DELETE("/api/v1/templates/{id}", { params: { path: { id: tpl.id } } }));
  await assert.rejects(unwrap(rb.api.GET("/api/v1/templates/{id}", { params: { path: { id: tpl.id } } })), (e: unknown) =>
    e instanceof RelayBellError && e.status === 404 && e.code === "not_found");
  assert.ok((await unwrap(rb.api.GET("/api/v1/reports", {}))).frequency);
  assert.equal(USER_AGENT, "relaybell-node/1.2.0");
});

test("against RelayBell: the verifier accepts a delivery RelayBell signed", live, async () => {
  const rb = new RelayBell({ baseUrl: url!, apiKey });
  const created = await rb.createWebhook({ url: `${receiver}/in`, events: ["webhook.test"] });
  const hook = created.webhook!;
  await rb.testWebhook(hook.id!);
  let got: { header: Record<string, string>; body: string } | undefined;
  for (let i = 0; i < 600 && !got; i++) {
    const all = (await (await fetch(`${receiver}/captured`)).json()) as { header: Record<string, string>; body: string }[];
    got = all.find((d) => d.body.includes(hook.id!));
    if (!got) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(got, "no delivery");
  const sig = got.header["X-Relaybell-Webhook-Signature"] ?? null;
  verifyWebhook(sig, got.body, { secrets: [hook.secret!] });
  const original = got.header["X-Relaybell-Signature"] ?? null;
  verifyOriginalSignature(original, got.body, { secrets: [hook.secret!] });
  assert.throws(() => verifyOriginalSignature(original, got.body + " ", { secrets: [hook.secret!] }), WebhookVerificationError);
  assert.throws(() => verifyOriginalSignature(original, got.body, { secrets: ["whsec_other"] }), WebhookVerificationError);
  assert.throws(() => verifyWebhook(sig, got.body + " ", { secrets: [hook.secret!] }), WebhookVerificationError);
  assert.throws(() => verifyWebhook(sig, got.body, { secrets: ["whsec_other"] }), WebhookVerificationError);
  // The delivery log lists it, through the pager.
  const deliveries = [];
  for await (const d of rb.webhookDeliveries(hook.id!)) deliveries.push(d);
  assert.equal(deliveries.length, 1);
  assert.equal(createHmac("sha256", "x").update("").digest("hex").length, 64);
});
