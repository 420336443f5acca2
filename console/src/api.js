// api.js - the one way the console talks to docketd: the public HTTP API (docs/api.md)
// with the viewer's bearer token. The token lives in sessionStorage (this tab only,
// gone when it closes); never in a cookie, so no other site can make the browser use it.
const KEY = 'docket.token';

export const session = {
  token: () => sessionStorage.getItem(KEY),
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => { sessionStorage.removeItem(KEY); tagged.clear(); }, // the next viewer may see other things
};

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.field = e.field;
  }
}

// Conditional reads (docs/api.md "Conditional requests"): the lists the console polls
// come with an ETag; the last body of each is kept here by path and asked for again with
// If-None-Match, and a 304 hands that body back without reading or parsing anything.
// `reads` counts, for main.js, the tagged reads since it was reset and how many brought
// something new: a refresh whose tagged reads were all 304 draws nothing.
const TAGGED_MAX = 64;
const tagged = new Map(); // path -> {etag, data}
export const reads = { tagged: 0, fresh: 0 };

async function call(method, path, body, opts = {}) {
  const headers = {};
  const tok = session.token();
  if (tok) headers.Authorization = `Bearer ${tok}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const kept = method === 'GET' && !opts.raw ? tagged.get(path) : undefined;
  if (kept) headers['If-None-Match'] = kept.etag;
  const res = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    signal: opts.signal, cache: 'no-store',
  });
  if (opts.raw) return res;
  if (res.status === 304 && kept) {
    reads.tagged++;
    return kept.data;
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!res.ok) throw new ApiError(res.status, data);
  const etag = method === 'GET' && res.headers.get('ETag');
  if (etag) {
    reads.tagged++;
    reads.fresh++;
    tagged.delete(path);
    if (tagged.size >= TAGGED_MAX) tagged.delete(tagged.keys().next().value); // the oldest
    tagged.set(path, { etag, data });
  }
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
