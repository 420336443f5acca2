// api.js - the one way the console talks to docketd: the public HTTP API (docs/api.md)
// with the viewer's bearer token. The token lives in sessionStorage (this tab only,
// gone when it closes); never in a cookie, so no other site can make the browser use it.
const KEY = 'docket.token';

export const session = {
  token: () => sessionStorage.getItem(KEY),
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.field = e.field;
  }
}

async function call(method, path, body, opts = {}) {
  const headers = {};
  const tok = session.token();
  if (tok) headers.Authorization = `Bearer ${tok}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    signal: opts.signal, cache: 'no-store',
  });
  if (opts.raw) return res;
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

export const get = (path, opts) => call('GET', path, undefined, opts);
export const post = (path, body) => call('POST', path, body ?? {});
export const del = (path) => call('DELETE', path);
export const raw = (path, opts) => call('GET', path, undefined, { ...opts, raw: true });

// Every page of a list (lists end at `limit` rows; `next` says more may follow).
export async function all(path, key, max = 100000) {
  let out = [];
  let after = '';
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const page = await get(`${path}${sep}limit=10000${after ? `&after=${encodeURIComponent(after)}` : ''}`);
    out = out.concat(page[key] || []);
    if (!page.next || out.length >= max) return out;
    after = page.next;
  }
}

// The Prometheus text of /metrics as [{name, labels, value}].
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const kv of (m[2] || '').matchAll(/([a-z_]+)="([^"]*)"/g)) labels[kv[1]] = kv[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}
