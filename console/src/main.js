// main.js - the console's shell: login, navigation, the hash router and the live
// refresh: a page is read again when docketd says something it shows changed (the change
// stream, GET /v1/changes) and every few seconds besides; no page needs a reload.
import { get, post, raw, reads, saved, session, ApiError } from './api.js';
import { firstReads } from './first.js';
import { el, route, href, can, localTime, afterPaint } from './ui.js';
import overview from './pages/overview.js';
import queue from './pages/queue.js';
import job from './pages/job.js';
import nodes from './pages/nodes.js';
import projects from './pages/projects.js';
import forecast from './pages/forecast.js';
import audit from './pages/audit.js';

const PAGES = [
  ['overview', 'Overview', overview, () => true],
  ['queue', 'Queue', queue, () => true],
  ['nodes', 'Nodes', nodes, () => true],
  ['projects', 'Projects', projects, () => true],
  ['forecast', 'Forecast', forecast, () => true],
  ['audit', 'Audit', audit, (me) => can.audit(me)],
];
// Pages drawn from the lists docketd tags (jobs, nodes, projects, alerts): the change
// stream says when to read them, so their timer only backs it up.
const WATCHED = new Set(['overview', 'queue', 'nodes', 'projects']);
const REFRESH_MS = 5000;
const BACKUP_MS = 30000; // a watched page's timer while the change stream is up
const REDRAW_MS = 60000; // an unchanged page is drawn again this often ("3m ago" moves on)

// Pages drawn without knowing the viewer: their reads start with GET /v1/whoami's, not
// after it, so their first screen waits for one round trip less (issue 40). The others
// (actions, logs, the audit's permission) wait for it.
const NOT_PERSONAL = new Set(['overview', 'queue', 'forecast']);

let me = null;
let whoami = null; // GET /v1/whoami as start() sent it (a promise)
let current = null; // {key, page, timer, abort}

function status(msg, kind = '') {
  const s = document.getElementById('status');
  s.textContent = msg;
  s.className = `status ${kind}`;
}

function loginView(msg) {
  const main = document.getElementById('main');
  const input = el('input', { type: 'password', name: 'token', id: 'token', autocomplete: 'off',
    required: true, 'aria-describedby': 'token-help' });
  const form = el('form', { class: 'login', 'aria-label': 'Log in' },
    el('h1', {}, 'Log in to Docket'),
    msg ? el('p', { class: 'err', role: 'alert' }, msg) : null,
    el('label', { for: 'token' }, 'API token'), input,
    el('p', { id: 'token-help', class: 'dim' },
      'A token from docket token create, or run docket console for a one-time login link. ',
      'The token stays in this tab only.'),
    el('button', { type: 'submit' }, 'Log in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    session.set(input.value.trim());
    await start();
  });
  main.replaceChildren(form);
  document.getElementById('nav').replaceChildren();
  document.getElementById('who').replaceChildren();
  input.focus();
}

// #/login?code=dkc_...: the one-time code of `docket console`, exchanged once for a
// session token; the code leaves the address bar at once.
async function takeCode() {
  const r = route();
  if (r.page !== 'login' || !r.q.get('code')) return null;
  const code = r.q.get('code');
  history.replaceState(null, '', href('overview'));
  try {
    const s = await post('/v1/console/session', { code });
    session.set(s.token);
    return null;
  } catch (e) {
    return e.message;
  }
}

function nav() {
  const r = route();
  document.getElementById('nav').replaceChildren(el('ul', {}, PAGES.filter((p) => p[3](me))
    .map(([key, label]) => el('li', {}, el('a', {
      href: href(key), 'aria-current': r.page === key || (key === 'queue' && r.page === 'job')
        ? 'page' : null,
    }, label)))));
  document.getElementById('who').replaceChildren(
    el('span', {}, `${me.user} · ${me.role}`),
    el('button', { type: 'button', class: 'link', onclick: () => { session.clear(); start(); } },
      'Log out'));
}

async function show() {
  const r = route();
  if (!me && !NOT_PERSONAL.has(r.page)) me = await whoami;
  const key = `${r.page}/${r.args.join('/')}`;
  if (me) nav();
  if (current && current.key === key) { // only the query changed: re-read
    await refresh(true);
    return;
  }
  stop();
  const def = r.page === 'job' ? job : (PAGES.find((p) => p[0] === r.page && p[3](me)) || [])[2];
  const main = document.getElementById('main');
  if (!def) {
    main.replaceChildren(el('h1', {}, 'No such page'), el('p', {}, el('a', { href: href('overview') }, 'Overview')));
    return;
  }
  const abort = new AbortController();
  current = { key, page: def, abort, timer: null, watched: WATCHED.has(r.page), drawn: 0 };
  const root = el('div', { class: 'page' });
  main.replaceChildren(root);
  const live = refresh(true); // (its reads go out first)
  if (NOT_PERSONAL.has(r.page)) await drawSaved(current, r.page, root, live);
  await live;
  retime();
}

// The first screen saved in this tab the last time this page was read (api.js `saved`:
// this token's only), drawn from it while the page is read again, and marked as what it
// is: its time in a note at its top and in the status line, until the live one replaces
// it (refresh). Only when the live one is not drawn within SAVED_AFTER_MS (often it is:
// boot.js's replies are in as the app starts, and a saved screen drawn first would only
// cost the live one its render), and never from a save of other filters.
const SAVED_AFTER_MS = 50;
async function drawSaved(cur, page, root, live) {
  const s = saved.load(page);
  if (!s || s.hash !== location.hash) return;
  await Promise.race([live, new Promise((ok) => setTimeout(ok, SAVED_AFTER_MS))]);
  if (current !== cur || cur.drawn) return;
  try {
    const node = await saved.replay(s.reads, () => cur.page({ me, r: route(), signal: cur.abort.signal, rerender: () => refresh(true) }));
    if (current !== cur || cur.drawn || !node) return;
    root.replaceChildren(el('p', { class: 'saved-note', role: 'note' },
      `Saved in this tab at ${localTime(s.at)}, not live: reading the page now…`), node);
    performance.mark('docket:saved-screen');
    const h = root.querySelector('h1');
    if (h) h.setAttribute('elementtiming', 'docket-saved-screen');
    status(`As of ${localTime(s.at, true)} (saved in this tab): reading…`);
  } catch { /* a read it lacks (an older save): nothing saved is drawn */ }
}

// The page's timer: every REFRESH_MS, or BACKUP_MS for a watched page while the change
// stream is up.
function retime() {
  if (!current) return;
  clearInterval(current.timer);
  const ms = current.watched && live.up ? BACKUP_MS : REFRESH_MS;
  current.timer = setInterval(() => refresh(false), ms);
}

function stop() {
  if (!current) return;
  clearInterval(current.timer);
  current.abort.abort();
  current = null;
}

// The change stream (GET /v1/changes, text/event-stream), read with fetch: the token
// goes in the Authorization header as on every call, which EventSource cannot send.
// `ready` (each connection) and `changed` notices re-read the page (a few notices in a
// row, once); the stream gone, the page polls every REFRESH_MS and the stream is tried
// again after 5 s.
const live = { ctl: null, up: false, soon: null };

function onNotice(block) {
  const type = (/^event: *(.*)$/m.exec(block) || [])[1];
  if (type !== 'changed' && type !== 'ready') return;
  performance.mark(`docket:${type}`);
  clearTimeout(live.soon);
  live.soon = setTimeout(() => refresh(false), 50);
}

async function listen() {
  unlisten();
  const ctl = new AbortController();
  live.ctl = ctl;
  while (!ctl.signal.aborted) {
    try {
      const res = await raw('/v1/changes', { signal: ctl.signal });
      if (res.status === 401) return; // logged out: the next page read says so
      if (res.ok && res.body) {
        live.up = true;
        retime();
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          for (let i; (i = buf.indexOf('\n\n')) >= 0; buf = buf.slice(i + 2)) onNotice(buf.slice(0, i));
        }
      }
    } catch { /* gone: poll, and try again */ }
    live.up = false;
    retime();
    if (!ctl.signal.aborted) await new Promise((ok) => setTimeout(ok, 5000));
  }
}

function unlisten() {
  if (live.ctl) live.ctl.abort();
  live.ctl = null;
  live.up = false;
}

// An element a page keeps across renders (a log being read: data-keep-scroll) loses its
// scroll position when the page's next render takes it in: where the reader left it is
// kept from its scroll events (they do not bubble: caught on the way down), and whether
// that was the end (then it follows what is appended).
document.addEventListener('scroll', (ev) => {
  const e = ev.target;
  if (!(e instanceof Element) || !e.hasAttribute('data-keep-scroll')) return;
  e.keptScroll = { top: e.scrollTop, atEnd: e.scrollTop + e.clientHeight >= e.scrollHeight - 4 };
}, true);

function restoreScroll(e) {
  const k = e.keptScroll;
  if (k) e.scrollTop = k.atEnd ? e.scrollHeight : k.top;
}

// One render of the current page from fresh API reads; an error leaves the last render
// in place and says what went wrong.
async function refresh(force) {
  const cur = current;
  if (!cur) return;
  if (cur.busy) { // once this one is drawn: a navigation's read (a new search) is never lost
    cur.again = Math.max(cur.again || 0, force === true ? 2 : 1);
    return;
  }
  const a = document.activeElement;
  const typing = a && a.closest && a.closest('#main form, #main .filters') &&
    /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName);
  if (typing && force !== true) return; // not under the viewer's fingers
  cur.busy = true;
  try {
    reads.tagged = 0;
    reads.fresh = 0;
    const r = route(), hash = location.hash, at = Date.now();
    const first = NOT_PERSONAL.has(r.page) ? firstReads(hash) : [];
    saved.watch(first);
    const node = await cur.page({ me, r, signal: cur.abort.signal, rerender: () => refresh(true) });
    if (current !== cur) return;
    if (first.length && hash === location.hash) saved.save(r.page, hash, at); // (when it read them all)
    // every list it read answered 304: what is on screen is still true, the page (and any
    // text selected on it) stays as it is
    if (force !== true && cur.watched && reads.tagged > 0 && reads.fresh === 0 &&
        Date.now() - cur.drawn < REDRAW_MS) {
      status(`Updated ${localTime(Date.now(), true)} (no change)`);
      return;
    }
    cur.drawn = Date.now();
    const root = document.querySelector('#main .page');
    const focused = document.activeElement && document.activeElement.id;
    if (node) root.replaceChildren(node);
    root.querySelectorAll('[data-keep-scroll]').forEach(restoreScroll);
    // the first screen is up: bench/console measures navigation start to this mark, and
    // to the paint of this render (Element Timing: its heading, drawn in the same frame
    // as its data, reports when it reached the screen)
    if (!performance.getEntriesByName('docket:first-screen').length) {
      performance.mark('docket:first-screen');
      const h = root.querySelector('h1');
      if (h) h.setAttribute('elementtiming', 'docket-first-screen');
    }
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    status(`Updated ${localTime(Date.now(), true)}`);
  } catch (e) {
    if (e.name === 'AbortError') return;
    if (e instanceof ApiError && e.status === 401) { stop(); unlisten(); session.clear(); loginView(e.message); return; }
    status(e.message, 'err');
  } finally {
    cur.busy = false;
    const again = cur.again;
    cur.again = 0;
    // a task of its own: run from here, a page drawn from what it already holds would
    // be drawn twice in one task (the main thread held for both)
    if (again && current === cur) setTimeout(() => refresh(again === 2), 0);
  }
}

async function start() {
  stop();
  unlisten();
  const codeErr = await takeCode();
  if (!session.token()) { loginView(codeErr); return; }
  me = null;
  whoami = get('/v1/whoami');
  whoami.catch(() => {}); // (answered below; a page that waits for it must not leave it unhandled)
  const shown = show().catch(() => {}); // its reads go out beside whoami's
  try {
    me = await whoami;
  } catch (e) {
    stop();
    session.clear();
    loginView(e.message);
    return;
  }
  nav();
  await shown;
  // the change stream once the first screen is on the screen: it takes neither a
  // connection nor docketd's time from the first screen's reads and paint
  await afterPaint();
  listen();
}

window.addEventListener('hashchange', () => { if (me && session.token()) show(); });
start();
