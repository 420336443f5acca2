// ui.js - the console's building blocks: elements, times, sortable tables, forms, and
// the role checks that decide which actions a page offers (the API still decides: a
// button shown by mistake gets the API's 403, shown as the error it is).

// The first screen on the screen, as the browser says (Element Timing: main.js marks the
// heading of the first render from data elementtiming="docket-first-screen"); at once
// where the browser has no Element Timing.
const firstScreen = new Promise((ok) => {
  const types = (window.PerformanceObserver && PerformanceObserver.supportedEntryTypes) || [];
  if (!types.includes('element')) { ok(); return; }
  new PerformanceObserver((list, obs) => {
    if (list.getEntries().some((e) => e.identifier === 'docket-first-screen')) { obs.disconnect(); ok(); }
  }).observe({ type: 'element', buffered: true });
});

// Resolves once the render just made has reached the screen: the frame after it (a task
// queued from requestAnimationFrame runs after that frame's main-thread work), or 100 ms
// at most (a hidden tab draws no frames); while the first screen is not yet on the screen,
// once it is (the browser's paint of it, 500 ms at most). Work a page starts behind its
// first screen (a whole list of megabytes to read and parse, 50 explains, the change
// stream) waits for this, not for a bare setTimeout, which ran before the paint and held it
// back; on a loaded 2-core machine it also held back the frame after the main thread's part
// (docketd writing megabytes while the browser rasterised: 100 to 250 ms, issue 40).
export function afterPaint() {
  const shown = Promise.race([firstScreen, new Promise((ok) => setTimeout(ok, 500))]);
  return shown.then(() => new Promise((ok) => {
    const t = setTimeout(ok, 100);
    requestAnimationFrame(() => setTimeout(() => { clearTimeout(t); ok(); }, 0));
  }));
}

export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined && k !== false)
    e.append(k instanceof Node ? k : String(k));
  return e;
}

// A local time as "2026-12-06 23:30:12" (or "23:30:12", time only) from the Date's own
// getters. Not toLocaleString: the first call of any locale formatting loads ICU's data,
// 40 ms on a quiet machine and 90 to 290 ms on a loaded one, and the first screen paid it
// (issue 40); this reads the same in every locale and nobody mistakes day for month.
const two = (n) => String(n).padStart(2, '0');
export function localTime(ms, timeOnly = false) {
  const d = new Date(ms);
  const t = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  return timeOnly ? t : `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${t}`;
}

// "3m ago" / "in 2h", the absolute time on hover (title) and for machines (datetime).
export function ago(ms, now = Date.now()) {
  if (!ms) return el('span', { class: 'dim' }, '—');
  const d = ms - now, a = Math.abs(d) / 1000;
  const txt = a < 45 ? 'now' : a < 5400 ? `${Math.round(a / 60)}m` : a < 129600
    ? `${Math.round(a / 3600)}h` : `${Math.round(a / 86400)}d`;
  const label = txt === 'now' ? 'just now' : d < 0 ? `${txt} ago` : `in ${txt}`;
  const abs = localTime(ms);
  return el('time', { datetime: new Date(ms).toISOString(), title: abs }, label);
}

export function dur(ms) {
  if (!ms || ms < 0) return '—';
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 360) / 10}h`;
  return `${Math.round(s / 8640) / 10}d`;
}

// The route (#/page?k=v): state of a page lives in the URL, so every view links.
export function route() {
  const h = location.hash.replace(/^#\/?/, '');
  const [path, qs] = h.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { page: parts[0] || 'overview', args: parts.slice(1), q: new URLSearchParams(qs || '') };
}

export function href(page, args = [], q = {}) {
  const qs = new URLSearchParams(Object.entries(q).filter(([, v]) => v !== '' && v != null));
  const p = [page, ...args.map(encodeURIComponent)].join('/');
  return `#/${p}${qs.toString() ? `?${qs}` : ''}`;
}

export function setQuery(q) {
  const r = route();
  history.replaceState(null, '', href(r.page, r.args, q));
}

// A sortable table: columns [{key, label, value(row) -> sortable, cell(row) -> node}].
// The sort is part of the URL (sort=key, dir=asc|desc).
export function table(cols, rows, { q, onSort, caption, rowAttrs, empty = 'Nothing here.' }) {
  const key = q.get('sort') || '';
  const dir = q.get('dir') === 'desc' ? -1 : 1;
  const col = cols.find((c) => c.key === key);
  const sorted = col ? [...rows].sort((a, b) => {
    const x = (col.value || ((r) => r[col.key]))(a), y = (col.value || ((r) => r[col.key]))(b);
    return (x < y ? -1 : x > y ? 1 : 0) * dir;
  }) : rows;
  const head = el('tr', {}, cols.map((c) => el('th', {
    scope: 'col', 'aria-sort': c.key === key ? (dir > 0 ? 'ascending' : 'descending') : 'none',
  }, c.nosort ? c.label : el('button', {
    class: 'sort', type: 'button',
    onclick: () => onSort(c.key, c.key === key && dir > 0 ? 'desc' : 'asc'),
  }, c.label, c.key === key ? (dir > 0 ? ' ▲' : ' ▼') : ''))));
  const body = sorted.length ? sorted.map((r) => el('tr', rowAttrs ? rowAttrs(r) : {},
    cols.map((c) => el('td', {}, c.cell ? c.cell(r) : String(r[c.key] ?? '')))))
    : [el('tr', {}, el('td', { colspan: cols.length, class: 'dim' }, empty))];
  return el('table', {}, caption ? el('caption', {}, caption) : null,
    el('thead', {}, head), el('tbody', {}, body));
}

// A labelled input (every control has a label: screen readers and clicks).
export function field(label, input) {
  return el('label', { class: 'field' }, el('span', {}, label), input);
}

export function select(name, options, value, onchange) {
  return el('select', { name, onchange },
    options.map((o) => el('option', { value: o, selected: o === value }, o || 'any')));
}

// A small form whose submit runs fn(values) and shows its error next to it.
export function actionForm(title, inputs, fn, submitLabel) {
  const err = el('span', { class: 'err', role: 'alert' });
  const form = el('form', { class: 'action', 'aria-label': title }, inputs,
    el('button', { type: 'submit' }, submitLabel || title), err);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    const v = Object.fromEntries(new FormData(form).entries());
    try { await fn(v); } catch (e) { err.textContent = e.message; }
  });
  return form;
}

export function button(label, fn, attrs = {}) {
  const err = el('span', { class: 'err', role: 'alert' });
  const b = el('button', { type: 'button', ...attrs, onclick: async () => {
    err.textContent = '';
    try { await fn(); } catch (e) { err.textContent = e.message; }
  } }, label);
  return el('span', { class: 'btn' }, b, err);
}

// What the viewer may do, as src/controller/authz.c decides (docs/api.md "Who may call
// what"); me is GET /v1/whoami.
export const can = {
  operate: (me) => me.role === 'operator' || me.role === 'admin',
  admin: (me) => me.role === 'admin',
  audit: (me) => ['viewer', 'operator', 'admin'].includes(me.role),
  lead: (me, project) => me.role === 'admin' || me.projects[project] === 'lead',
  controlJob: (me, j) => can.operate(me) || j.user === me.user || me.projects[j.project] === 'lead',
  readLogs: (me, j) => me.role === 'admin' || j.user === me.user || me.projects[j.project] === 'lead',
};

export function stateBadge(s) {
  return el('span', { class: `badge s-${String(s).toLowerCase()}` }, s);
}

// A uPlot chart into holder, drawn once holder is laid out. uPlot is loaded on first use
// (its own file): the first screen does not wait for it. opts(uPlot, width) -> options.
export function plot(opts, data, holder, maxWidth) {
  requestAnimationFrame(async () => {
    const { default: uPlot } = await import('uplot');
    new uPlot(opts(uPlot, Math.min(maxWidth, holder.clientWidth || maxWidth)), data, holder);
  });
}
