// Verifying RelayBell's webhook deliveries (spec 6 and 9) and computing
// identity verification hashes.
import { createHmac, timingSafeEqual } from "node:crypto";

export const DEFAULT_TOLERANCE_SECONDS = 300;

export class WebhookVerificationError extends Error {
  readonly reason: "no_signature" | "malformed" | "timestamp" | "mismatch";
  constructor(reason: WebhookVerificationError["reason"], message: string) {
    super(`relaybell webhook: ${message}`);
    this.name = "WebhookVerificationError";
    this.reason = reason;
  }
}

export interface VerifyOptions {
  /** The webhook's secrets ("whsec_…"); more than one while rotating. */
  secrets: string[];
  /** Default 300 seconds. */
  toleranceSeconds?: number;
  /** Current time in ms; default Date.now(). */
  now?: number;
}

/**
 * Verifies the X-RelayBell-Webhook-Signature header, "t=<unix>,v1=<hex>[,…]":
 * the HMAC-SHA256 of "<t>.<raw body>" keyed with the whole secret. Keys
 * other than t and v1 are ignored; comparisons are constant-time. The
 * original X-RelayBell-Signature header (no timestamp) is never enough
 * here; verifyOriginalSignature checks it for receivers that opt in.
 * Pass the raw body, as received, before any JSON parsing. Throws a
 * WebhookVerificationError when the delivery is not RelayBell's.
 */
export function verifyWebhook(header: string | null | undefined, body: string | Uint8Array, opts: VerifyOptions): void {
  if (!header || header.trim() === "") {
    throw new WebhookVerificationError("no_signature", "no X-RelayBell-Webhook-Signature header");
  }
  let t: number | undefined;
  const sigs: Buffer[] = [];
  for (const part of header.split(",")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    const k = part.slice(0, i).trim();
    const v = part.slice(i + 1).trim();
    if (k === "t") {
      if (t !== undefined || !/^-?\d{1,15}$/.test(v)) {
        throw new WebhookVerificationError("malformed", "malformed timestamp");
      }
      t = Number(v);
    } else if (k === "v1" && /^[0-9a-fA-F]{64}$/.test(v)) {
      sigs.push(Buffer.from(v, "hex"));
    }
  }
  if (t === undefined || sigs.length === 0) {
    throw new WebhookVerificationError("malformed", "the header needs t and v1");
  }
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = (opts.now ?? Date.now()) / 1000;
  if (Math.abs(now - t) > tolerance) {
    throw new WebhookVerificationError("timestamp", `timestamp ${Math.round(now - t)}s off, tolerance ${tolerance}s`);
  }
  const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  let match = false;
  for (const secret of opts.secrets) {
    const want = createHmac("sha256", secret).update(`${t}.`).update(raw).digest();
    for (const s of sigs) {
      if (timingSafeEqual(s, want)) match = true;
    }
  }
  if (!match) {
    throw new WebhookVerificationError("mismatch", "no v1 signature matches");
  }
}

/**
 * Verifies the original X-RelayBell-Signature header, "sha256=<hex>": the
 * HMAC-SHA256 of the raw body alone, keyed with the whole secret, against
 * each secret in constant time. An explicit opt-in for receivers that
 * cannot read X-RelayBell-Webhook-Signature: the original header has no
 * timestamp, so it gives no replay protection (a captured delivery
 * verifies for ever). Prefer verifyWebhook. Throws a
 * WebhookVerificationError when the delivery is not RelayBell's.
 */
export function verifyOriginalSignature(header: string | null | undefined, body: string | Uint8Array, opts: Pick<VerifyOptions, "secrets">): void {
  const h = (header ?? "").trim();
  if (h === "") {
    throw new WebhookVerificationError("no_signature", "no X-RelayBell-Signature header");
  }
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(h);
  if (!m) {
    throw new WebhookVerificationError("malformed", 'the header is not "sha256=<hex>"');
  }
  const got = Buffer.from(m[1]!, "hex");
  const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  let match = false;
  for (const secret of opts.secrets) {
    if (timingSafeEqual(got, createHmac("sha256", secret).update(raw).digest())) match = true;
  }
  if (!match) {
    throw new WebhookVerificationError("mismatch", "the sha256 signature does not match");
  }
}

/**
 * The externalIdHash a browser sends with an externalId when the website
 * verifies identities: the hex HMAC-SHA256 of externalId keyed with the
 * whole identity secret. Compute it on your server only.
 */
export function identityHash(secret: string, externalId: string): string {
  return createHmac("sha256", secret).update(externalId).digest("hex");
}
