// RelayBell's server SDK for Node, version 1.2.0.
//
// `RelayBell.api` is an openapi-fetch client typed by gen/openapi.ts, which
// openapi-typescript generates from api/openapi.json: every route a key can
// call, with its request and answer types. The methods of RelayBell wrap
// the main routes and throw a RelayBellError for any error answer. Every
// request carries the key and the SDK's User-Agent; idempotent calls and
// POST /events with an Idempotency-Key are retried on 429 (after
// Retry-After) and 5xx with exponential backoff.
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "../gen/openapi.js";

export type { components, paths } from "../gen/openapi.js";
export { verifyWebhook, verifyOriginalSignature, WebhookVerificationError, identityHash, DEFAULT_TOLERANCE_SECONDS } from "./webhook.js";
export type { VerifyOptions } from "./webhook.js";

export const VERSION = "1.2.0";
export const USER_AGENT = `relaybell-node/${VERSION}`;

export type Schemas = components["schemas"];

/** An error answer of the API (spec 7). */
export class RelayBellError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The catalog's code, for example "insufficient_scope". */
  readonly code: string;
  /** The scope a 403 insufficient_scope lacked. */
  readonly required: string | undefined;
  readonly requestId: string;
  /** Retry-After of a 429, in seconds. */
  readonly retryAfter: number | undefined;
  /** The whole error body. */
  readonly body: unknown;

  constructor(status: number, body: unknown, headers: Headers) {
    const b = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
    const code = typeof b["error"] === "string" ? b["error"] : `http_${status}`;
    const message = typeof b["message"] === "string" ? b["message"] : undefined;
    const requestId = typeof b["request_id"] === "string" ? b["request_id"] : (headers.get("X-Request-Id") ?? "");
    const required = typeof b["required"] === "string" ? b["required"] : undefined;
    super(`relaybell: ${status} ${code}${message ? `: ${message}` : ""}${required ? ` (required ${required})` : ""}${requestId ? ` [request ${requestId}]` : ""}`);
    this.name = "RelayBellError";
    this.status = status;
    this.code = code;
    this.required = required;
    this.requestId = requestId;
    this.retryAfter = parseRetryAfter(headers.get("Retry-After"));
    this.body = body;
  }
}

function parseRetryAfter(v: string | null): number | undefined {
  if (v === null || v.trim() === "") return undefined;
  const n = Number(v);
  if (Number.isFinite(n) && n >= 0) return n;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, (t - Date.now()) / 1000);
}

export interface Options {
  /** The service's base URL, without /api/v1. */
  baseUrl: string;
  apiKey: string;
  /** Retries of a retryable call (default 3; 0 turns them off). */
  maxRetries?: number;
  /** First backoff in milliseconds when no Retry-After (default 500), doubled each retry up to maxBackoffMs (default 30000). */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Waits between retries; tests replace it. */
  sleep?: (ms: number) => Promise<void>;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: (input: Request) => Promise<Response>;
}

const idempotentMethods = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);

/** Whether a request may be sent again: idempotent methods, and POST /events with an Idempotency-Key. */
export function isRetryable(request: Request): boolean {
  // PUT /settings may rotate the commerce signing secret: a retry of one
  // that was applied, its answer lost, would rotate again.
  if (request.method === "PUT" && new URL(request.url).pathname.endsWith("/api/v1/settings")) return false;
  if (idempotentMethods.has(request.method)) return true;
  return request.method === "POST" && new URL(request.url).pathname.endsWith("/api/v1/events") && request.headers.has("Idempotency-Key");
}

/** A fetch that retries retryable requests on 429 and 5xx. */
export function retryingFetch(opts: Options): (input: Request) => Promise<Response> {
  const inner = opts.fetch ?? ((r: Request) => globalThis.fetch(r));
  const maxRetries = opts.maxRetries ?? 3;
  const base = opts.baseBackoffMs ?? 500;
  const cap = opts.maxBackoffMs ?? 30000;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  return async (request: Request) => {
    const retryable = isRetryable(request);
    for (let attempt = 0; ; attempt++) {
      const req = retryable && attempt < maxRetries ? request.clone() : request;
      let response: Response;
      try {
        response = await inner(req);
      } catch (err) {
        if (!retryable || attempt >= maxRetries) throw err;
        await sleep(backoff(base, cap, attempt));
        continue;
      }
      if (!retryable || attempt >= maxRetries || !(response.status === 429 || response.status >= 500)) {
        return response;
      }
      const after = parseRetryAfter(response.headers.get("Retry-After"));
      await response.body?.cancel();
      await sleep(after !== undefined ? after * 1000 : backoff(base, cap, attempt));
    }
  };
}

function backoff(base: number, cap: number, attempt: number): number {
  const d = Math.min(cap, base * 2 ** attempt);
  return d / 2 + Math.random() * (d / 2);
}

type Answer<T> = { data?: T; error?: unknown; response: Response };

/** The data of an openapi-fetch answer, or a RelayBellError for an error answer. */
export async function unwrap<T>(p: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await p;
  if (!response.ok) {
    throw new RelayBellError(response.status, error, response.headers);
  }
  return data as T;
}

export type Notification = Schemas["Notification"];
export type SendRequest = Schemas["SendRequest"];
export type EventRequest = Schemas["EventRequest"];
export type NotificationsQuery = NonNullable<paths["/api/v1/notifications"]["get"]["parameters"]["query"]>;

export class RelayBell {
  /** The typed client over every route (openapi-fetch); its answers are { data, error, response }. */
  readonly api: Client<paths>;
  readonly baseUrl: string;

  constructor(opts: Options) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.api = createClient<paths>({
      baseUrl: this.baseUrl,
      fetch: retryingFetch(opts),
      headers: { Authorization: `Bearer ${opts.apiKey}`, "User-Agent": USER_AGENT },
    });
  }

  // Notifications (spec 4.1).
  /**
   * Sends a notification. A targeting member given as undefined or null
   * (a user id that came out missing) is refused here: JSON would drop it
   * and the send would reach every subscriber.
   */
  send(body: SendRequest) {
    for (const k of ["externalId", "externalIds", "segmentId", "topicId", "filters"]) {
      if (k in body && (body as Record<string, unknown>)[k] == null) {
        throw new TypeError(`send: ${k} is ${(body as Record<string, unknown>)[k]}; leave it out to send to everyone`);
      }
    }
    return unwrap(this.api.POST("/api/v1/notifications", { body }));
  }
  listNotifications(query: NotificationsQuery = {}) {
    return unwrap(this.api.GET("/api/v1/notifications", { params: { query } }));
  }
  /** Every notification matching query, following nextCursor page by page. */
  async *notifications(query: NotificationsQuery = {}): AsyncGenerator<Notification> {
    let cursor: string | undefined;
    for (;;) {
      const q: NotificationsQuery = cursor === undefined ? { ...query } : { ...query, cursor };
      const page = await this.listNotifications(q);
      for (const n of page.items ?? []) yield n;
      if (!page.nextCursor) return;
      cursor = page.nextCursor;
    }
  }
  getNotification(id: string) {
    return unwrap(this.api.GET("/api/v1/notifications/{id}", { params: { path: { id } } }));
  }
  cancelNotification(id: string) {
    return unwrap(this.api.POST("/api/v1/notifications/{id}/cancel", { params: { path: { id } } }));
  }

  // Events (spec 4.2). With an idempotencyKey the call is retried and stored once.
  track(body: EventRequest, idempotencyKey?: string) {
    const params = idempotencyKey === undefined ? {} : { header: { "Idempotency-Key": idempotencyKey } };
    return unwrap(this.api.POST("/api/v1/events", { body, params }));
  }
  listEvents() {
    return unwrap(this.api.GET("/api/v1/events", {}));
  }

  // Subscribers and people.
  subscriberProfile(externalId: string) {
    return unwrap(this.api.GET("/api/v1/subscribers/{externalId}/profile", { params: { path: { externalId } } }));
  }
  deleteSubscriber(externalId: string) {
    return unwrap(this.api.DELETE("/api/v1/subscribers/{externalId}", { params: { path: { externalId } } }));
  }

  // Segments, topics.
  listSegments() {
    return unwrap(this.api.GET("/api/v1/segments", {}));
  }
  createSegment(body: Schemas["SegmentBody"]) {
    return unwrap(this.api.POST("/api/v1/segments", { body }));
  }
  listTopics() {
    return unwrap(this.api.GET("/api/v1/topics", {}));
  }
  saveTopic(body: { name: string; slug?: string }) {
    return unwrap(this.api.POST("/api/v1/topics", { body }));
  }

  // Automations, journeys, templates, feeds, schedules, webhooks, stats.
  listAutomations() {
    return unwrap(this.api.GET("/api/v1/automations", {}));
  }
  listJourneys() {
    return unwrap(this.api.GET("/api/v1/journeys", {}));
  }
  listTemplates() {
    return unwrap(this.api.GET("/api/v1/templates", {}));
  }
  listFeeds() {
    return unwrap(this.api.GET("/api/v1/feeds", {}));
  }
  listSchedules() {
    return unwrap(this.api.GET("/api/v1/schedules", {}));
  }
  listWebhooks() {
    return unwrap(this.api.GET("/api/v1/webhooks", {}));
  }
  createWebhook(body: Schemas["WebhookBody"]) {
    return unwrap(this.api.POST("/api/v1/webhooks", { body }));
  }
  testWebhook(id: string) {
    return unwrap(this.api.POST("/api/v1/webhooks/{id}/test", { params: { path: { id } } }));
  }
  /** Every delivery of a webhook, newest first, following nextCursor. */
  async *webhookDeliveries(id: string): AsyncGenerator<Schemas["WebhookDelivery"]> {
    let cursor: string | undefined;
    for (;;) {
      const query = cursor === undefined ? {} : { cursor };
      const page = await unwrap(this.api.GET("/api/v1/webhooks/{id}/deliveries", { params: { path: { id }, query } }));
      for (const d of page.deliveries ?? []) yield d;
      if (!page.nextCursor) return;
      cursor = page.nextCursor;
    }
  }
  stats(query: NonNullable<paths["/api/v1/stats"]["get"]["parameters"]["query"]> = {}) {
    return unwrap(this.api.GET("/api/v1/stats", { params: { query } }));
  }
}
