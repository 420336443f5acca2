// api.js - the one way the console talks to docketd: the public HTTP API (docs/api.md)
// with the viewer's bearer token. The token lives in sessionStorage (this tab only,
// gone when it closes); never in a cookie, so no other site can make the browser use it.
const KEY = 'docket.token';

export const session = {
  token: () => sessionStorage.getItem(KEY),
  set: (t) => { forget(); sessionStorage.setItem(KEY, t); },
  clear: () => { forget(); sessionStorage.removeItem(KEY); }, // the next viewer may see other things
};

// Everything kept for the viewer: lists, the boot's reads, the saved first screens.
function forget() {
  tagged.clear();
  window.docketBoot = null;
  for (let i = sessionStorage.length - 1; i >= 0; i--) {
    const k = sessionStorage.key(i);
    if (k && k.startsWith(SAVED)) sessionStorage.removeItem(k);
  }
}

// The first screen of a page as last read, kept in this tab (sessionStorage, where the
// token is) to be drawn at once on the next load, marked with its time, while the page is
// read again (issue 40). Kept per route; each names the token it was read with (a
// fingerprint, not the token) and is used only with that token; logging in or out drops
// them all. main.js says which reads a route's first screen is made of (watch); their
// last replies are kept here and saved by save(); replay() makes the reads answer from a
// saved screen, for one render, without the network.
const SAVED = 'docket.screen.';
const SAVED_MAX = 256 * 1024; // characters of one saved screen at most (a tab has a few MB)
let watching = new Set();
let lastReads = new Map(); // path -> body (parsed JSON, or text) of the watched reads
let replaying = null; // path -> body while a saved screen is drawn

// A fingerprint of the token (cyrb53: 53 bits, not reversible to the token).
function fingerprint(t) {
  let h1 = 0xdeadbeef, h2 = 0x41c6ce57;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}

export const saved = {
  watch(paths) { watching = new Set(paths); lastReads = new Map(); },
  // the watched reads, when all are in, saved as `page`'s first screen at `hash` (its
  // filters), read at `at` (ms); one a page: the last one read
  save(page, hash, at) {
    const tok = session.token();
    if (!tok || !watching.size || [...watching].some((p) => !lastReads.has(p))) return;
    const text = JSON.stringify({ tok: fingerprint(tok), hash, at, reads: [...lastReads] });
    try {
      if (text.length <= SAVED_MAX) sessionStorage.setItem(SAVED + page, text);
    } catch { /* full: the next load reads as if nothing was saved */ }
  },
  // the first screen saved for `page` with this token: {hash, at, reads} or null
  load(page) {
    const tok = session.token();
    try {
      const s = tok && JSON.parse(sessionStorage.getItem(SAVED + page) || 'null');
      return s && s.tok === fingerprint(tok) && Array.isArray(s.reads)
        ? { hash: s.hash, at: s.at, reads: new Map(s.reads) } : null;
    } catch { return null; }
  },
  // run draw() with the reads answered from `reads` (a read it lacks fails)
  async replay(reads, draw) {
    replaying = reads;
    try { return await draw(); } finally { replaying = null; }
  },
};

class NotSaved extends Error {}

// A read boot.js (inlined in index.html) already sent for this path with this token, taken
// once: the first screen's reads go out while the page is parsed, not after app.js ran.
function early(path, tok) {
  const b = window.docketBoot;
  if (!b || !tok || b.token !== tok || !b.reads.has(path)) return null;
  const res = b.reads.get(path);
  b.reads.delete(path);
  return res;
}

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
  if (replaying && method === 'GET') {
    if (!replaying.has(path)) throw new NotSaved(path);
    return replaying.get(path);
  }
  const r = await send(method, path, body, opts);
  if (method === 'GET' && watching.has(path)) lastReads.set(path, r);
  return r;
}

async function send(method, path, body, opts) {
  const headers = {};
  const tok = session.token();
  if (tok) headers.Authorization = `Bearer ${tok}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const kept = method === 'GET' && !opts.raw && !opts.text ? tagged.get(path) : undefined;
  if (kept) headers['If-None-Match'] = kept.etag;
  const res = await ((method === 'GET' && !kept && early(path, tok)) || fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    signal: opts.signal, cache: 'no-store',
  }));
  if (opts.raw) return res;
  if (opts.text) return res.text(); // a text body (/metrics), as it came
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
export const text = (path, opts) => call('GET', path, undefined, { ...opts, raw: false, text: true });

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
