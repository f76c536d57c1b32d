// The dashboard's only way to the server: the public /api/v1 routes, with
// the session cookie (same origin), the CSRF header on every call, and the
// chosen website as X-Project-Id.

let projectId = null;

// setProject names the website every later call is about.
export function setProject(id) {
  projectId = id;
}

// getProject is the website every call is about.
export function getProject() {
  return projectId;
}

// ApiError is a refused call: status, the error code, its message.
export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || (body && body.error) || 'The server answered ' + status);
    this.status = status;
    this.code = (body && body.error) || 'http_' + status;
    this.body = body || {};
  }
}

// call sends one request and resolves to the JSON answer (null for 204);
// a refusal rejects with an ApiError. A network failure rejects too.
export async function call(method, path, body) {
  const headers = { 'X-RelayBell-CSRF': '1' };
  if (projectId) {
    headers['X-Project-Id'] = projectId;
  }
  const init = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch('/api/v1' + path, init);
  if (res.status === 204) {
    return null;
  }
  const answer = await res.json().catch(() => null);
  if (!res.ok) {
    throw new ApiError(res.status, answer);
  }
  return answer;
}
