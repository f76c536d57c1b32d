// A client generated from RelayBell's OpenAPI document, used as a customer
// would: the types come from openapi-typescript (gen/openapi.d.ts, made
// from ../openapi.json), the calls from openapi-fetch, and the credentials
// each call carries from the document's security requirements, read from
// the served document. api/openapi_test.go runs it against an in-process
// server and checks what it prints.
//
// Environment: RELAYBELL_URL, RELAYBELL_EMAIL and RELAYBELL_PASSWORD (a
// verified person), RELAYBELL_PROJECT_ID (a website of their account),
// RELAYBELL_API_KEY (a key of that website).
import createClient, { type Middleware } from "openapi-fetch";
import type { paths } from "./gen/openapi.js";

type Requirement = Record<string, string[]>;
type Scheme = { type: string; scheme?: string; in?: string; name?: string };
type Document = {
  security?: Requirement[];
  paths: Record<string, Record<string, { security?: Requirement[] }>>;
  components: { securitySchemes: Record<string, Scheme> };
};

// Credentials by the name of the security scheme they satisfy.
type Credentials = Record<string, string>;

function env(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set`);
  }
  return value;
}

const baseUrl = env("RELAYBELL_URL");
const doc = (await (await fetch(`${baseUrl}/api/v1/openapi.json`)).json()) as Document;

function scheme(name: string): Scheme {
  const s = doc.components.securitySchemes[name];
  if (!s) {
    throw new Error(`the document has no security scheme ${name}`);
  }
  return s;
}

// secured sends, with each request, the credentials of the first of the
// operation's security requirements that creds satisfy, each as its scheme
// says, and prints the call's line once it is answered.
function secured(creds: Credentials): Middleware {
  const used = new WeakMap<Request, string[]>();
  return {
    onRequest({ request, schemaPath }) {
      const op = doc.paths[schemaPath]?.[request.method.toLowerCase()];
      if (!op) {
        throw new Error(`the document has no ${request.method} ${schemaPath}`);
      }
      const requirements = op.security ?? doc.security ?? [];
      const requirement = requirements.find((r) => Object.keys(r).every((name) => name in creds));
      if (requirements.length > 0 && !requirement) {
        throw new Error(`no credentials for ${request.method} ${schemaPath}`);
      }
      const names = Object.keys(requirement ?? {});
      const cookies: string[] = [];
      for (const name of names) {
        const s = scheme(name);
        const value = creds[name] ?? "";
        if (s.type === "http" && s.scheme === "bearer") {
          request.headers.set("Authorization", `Bearer ${value}`);
        } else if (s.type === "apiKey" && s.in === "header" && s.name) {
          request.headers.set(s.name, value);
        } else if (s.type === "apiKey" && s.in === "cookie" && s.name) {
          cookies.push(`${s.name}=${value}`);
        } else {
          throw new Error(`security scheme ${name} is of a kind this client does not send`);
        }
      }
      if (cookies.length > 0) {
        request.headers.set("Cookie", cookies.join("; "));
      }
      used.set(request, names);
      return request;
    },
    onResponse({ request, response, schemaPath }) {
      const names = used.get(request) ?? [];
      console.log(`${request.method} ${schemaPath} ${response.status} ${names.join("+") || "no credentials"}`);
      return response;
    },
  };
}

function client(creds: Credentials, headers: Record<string, string> = {}) {
  const c = createClient<paths>({ baseUrl, headers });
  c.use(secured(creds));
  return c;
}

// must is the body of a call that succeeded, or throws with its error.
function must<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data === undefined) {
    throw new Error(`${result.response.status}: ${JSON.stringify(result.error)}`);
  }
  return result.data;
}

// The X-RelayBell-CSRF header's only value.
const csrf = "1";

// Sign in: the session's cookie comes back in Set-Cookie.
const login = await client({ csrf }).POST("/api/v1/auth/login", {
  body: { email: env("RELAYBELL_EMAIL"), password: env("RELAYBELL_PASSWORD") },
});
console.log(`  signed in as ${must(login).user?.email}`);
const cookieName = scheme("session").name;
const session = login.response.headers
  .getSetCookie()
  .map((c) => c.split(";")[0] ?? "")
  .find((c) => c.startsWith(`${cookieName}=`))
  ?.slice(`${cookieName}=`.length);
if (!session) {
  throw new Error(`login set no ${cookieName} cookie`);
}

// The session's calls name the website by X-Project-Id.
const person = client({ session, csrf }, { "X-Project-Id": env("RELAYBELL_PROJECT_ID") });
const topic = must(await person.POST("/api/v1/topics", { body: { name: "Release notes" } }));
console.log(`  topic ${topic.slug}`);
const topics = must(await person.GET("/api/v1/topics"));
console.log(`  topics ${(topics.topics ?? []).map((t) => t.slug).join(", ")}`);

const server = client({ apiKey: env("RELAYBELL_API_KEY") });
const segment = must(
  await server.POST("/api/v1/segments", {
    body: { name: "German speakers", filters: { match: "all", rules: [{ field: "language", op: "is", value: "de" }] } },
  }),
);
console.log(`  segment ${segment.name}: ${segment.filters.rules?.length} rule`);
const segments = must(await server.GET("/api/v1/segments"));
console.log(`  segments ${(segments.segments ?? []).map((s) => s.name).join(", ")}`);
