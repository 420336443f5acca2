// Overview: what matters first (firing alerts by severity, critical first, job failures
// folded per project), GPUs by state and type, utilisation over 24 h and 7 d (from the
// jobs' start and end times, the finished ones read behind the first screen), queue
// length and wait p95 per tier in rank order. The
// alerts panel is hidden when docketd has no GET /v1/alerts.
import { get, text, parseMetrics } from '../api.js';
import { el, href, ago, dur, plot, table, setQuery, afterPaint } from '../ui.js';
import { CHART_FIELDS, OVERVIEW_READS } from '../first.js';

const GPU_STATES = ['busy', 'idle', 'reserved', 'draining', 'down'];

export function gpuStates(nodes) {
  const by = {};
  for (const n of nodes) {
    if (!n.gpus) continue;
    const t = (by[n.gpu_type || '(none)'] ||= Object.fromEntries(GPU_STATES.map((s) => [s, 0])));
    const free = n.gpus - n.gpus_used;
    const up = n.state === 'UP';
    const drain = n.state === 'DRAINING' || n.state === 'DRAINED';
    t.busy += n.gpus_used;
    t[up ? (n.reserved ? 'reserved' : 'idle') : drain ? 'draining' : 'down'] += free;
  }
  return by;
}

// GPUs busy in each bucket of [from, to), from jobs' start/end times.
export function busySeries(jobs, from, to, step, now) {
  const n = Math.ceil((to - from) / step);
  const xs = Array.from({ length: n }, (_, i) => (from + i * step) / 1000);
  const ys = new Array(n).fill(0);
  let any = false;
  for (const j of jobs) {
    if (!j.start_ms || !j.gpus) continue;
    const s = Math.max(j.start_ms, from), e = Math.min(j.end_ms || now, to);
    if (e <= s) continue;
    any = true;
    for (let i = Math.floor((s - from) / step); i < n && from + i * step < e; i++) {
      const bs = from + i * step, be = bs + step;
      ys[i] += j.gpus * (Math.min(e, be) - Math.max(s, bs)) / step;
    }
  }
  return any ? [xs, ys] : null;
}

function p95(xs) {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.95 * s.length) - 1)];
}

function chart(title, data, total, reading) {
  const box = el('figure', { class: 'chart' }, el('figcaption', {}, title));
  if (reading) {
    box.append(el('p', { class: 'dim' }, 'Reading the finished jobs…'));
    return box;
  }
  if (!data) {
    box.append(el('p', { class: 'dim' }, 'No job ran in this window.'));
    return box;
  }
  const used = data[1].reduce((a, b) => a + b, 0) / data[1].length;
  box.append(el('p', { class: 'dim' }, total ? `${Math.round((100 * used) / total)}% of ${total} GPUs on average` : ''));
  const holder = el('div', { role: 'img', 'aria-label': `${title}: GPUs busy over time` });
  box.append(holder);
  plot((uPlot, width) => ({
    width, height: 160,
    series: [{}, { label: 'GPUs busy', stroke: '#2563eb', fill: 'rgba(37,99,235,0.15)' }],
    axes: [{}, { size: 40 }], legend: { show: false },
  }), data, holder, 560);
  return box;
}

const SEVERITIES = ['critical', 'major', 'warning', 'info'];

// What is firing, for people: grouped by severity (critical first) and rule, with counts,
// the job failures of a rule folded into one line per project (their summary says "job N
// of project P ended ...", alerts.c); pending and silenced ones apart, after.
export function groupAlerts(list) {
  const firing = list.filter((a) => a.state === 'firing' && !a.silenced);
  const rank = (s) => { const i = SEVERITIES.indexOf(s); return i < 0 ? SEVERITIES.length : i; };
  const rules = new Map();
  for (const a of firing) {
    const g = rules.get(a.rule) || { rule: a.rule, severity: a.severity || '', kind: a.kind, alerts: [], projects: new Map() };
    g.alerts.push(a);
    const m = a.kind === 'job_failed' && /of project (\S+)/.exec(a.summary || '');
    if (m) g.projects.set(m[1], (g.projects.get(m[1]) || 0) + 1);
    rules.set(a.rule, g);
  }
  const groups = [...rules.values()].sort((x, y) => rank(x.severity) - rank(y.severity) ||
    y.alerts.length - x.alerts.length || (x.rule < y.rule ? -1 : 1));
  return { firing: firing.length, groups, quiet: list.filter((a) => a.state !== 'firing' || a.silenced) };
}

function alertGroup(g) {
  const head = el('strong', {}, `${g.rule}`, g.alerts.length > 1 ? ` ×${g.alerts.length}` : '');
  if (g.projects.size) // job failures: one link per project, most first
    return el('li', { class: `alert firing sev-${g.severity}` }, el('span', { class: 'badge' }, g.severity), ' ', head, ': ',
      [...g.projects].sort((a, b) => b[1] - a[1]).flatMap(([p, n], i) => [i ? ' · ' : '',
        el('a', { href: href('queue', [], { project: p, state: 'FAILED' }) }, `${p} ${n}`)]));
  const shown = g.alerts.slice(0, 3);
  return el('li', { class: `alert firing sev-${g.severity}` }, el('span', { class: 'badge' }, g.severity), ' ', head, ': ',
    shown.flatMap((a, i) => [i ? '; ' : '', a.summary || a.key || '', ' (', ago(a.fired_ms || a.since_ms), ')']),
    g.alerts.length > shown.length ? ` and ${g.alerts.length - shown.length} more` : '');
}

// GET /v1/alerts (docs/api.md "Alerts"), grouped (groupAlerts).
async function alerts(signal) {
  const list = await get('/v1/alerts', { signal }).then((b) => b.alerts || [],
    (e) => { if (e.status === 404) return null; throw e; }); // no alerts route in this docketd: no panel
  if (!list) return null;
  const { firing, groups, quiet } = groupAlerts(list);
  return el('section', { class: 'panel', 'aria-labelledby': 'alerts-h' },
    el('h2', { id: 'alerts-h' }, `Alerts firing (${firing})`),
    groups.length ? el('ul', { class: 'alerts' }, groups.map(alertGroup)) : el('p', { class: 'dim' }, 'None.'),
    quiet.length ? el('details', {}, el('summary', {}, `${quiet.length} pending or silenced`),
      el('ul', { class: 'alerts' }, quiet.map((a) => el('li', { class: 'alert dim' },
        el('strong', {}, `${a.severity || ''} ${a.rule}${a.key ? ` ${a.key}` : ''}`), ': ', a.summary || '', ' ',
        a.state === 'firing' ? ['firing since ', ago(a.fired_ms || a.since_ms)] : ['pending since ', ago(a.since_ms)],
        a.silenced ? ' (silenced)' : '')))) : null);
}

// The finished jobs behind the charts and wait p95, read at most once a minute (2,000
// jobs are a few MB; the rest of the page is read every refresh). They are read behind
// the page, never in its way: the first screen (alerts, GPUs, queue) is drawn without
// them and the page is drawn again when they are in (bench/console/first_paint.sh).
const HISTORY_MS = 60000;
let history = { at: 0, jobs: null, loading: null };

function finished(signal, rerender) {
  const h = history;
  if (!h.loading && (!h.jobs || Date.now() - h.at >= HISTORY_MS)) {
    h.loading = afterPaint() // after this render is on screen
      .then(() => get(`/v1/jobs?state=terminal&order=desc&limit=2000&fields=${CHART_FIELDS}`, { signal }))
      .then(({ jobs }) => {
        Object.assign(h, { jobs, at: Date.now(), loading: null });
        if (history === h && !signal.aborted) rerender();
      }, () => { h.loading = null; });
  }
  return h.jobs; // null until the first read is in
}

export default async function overview({ r, signal, rerender }) {
  const now = Date.now();
  const [pNodes, pMetrics, pRunning, , pTiers] = OVERVIEW_READS; // (boot.js sends them early)
  const [nodes, metrics, running, al, tierList] = await Promise.all([
    get(pNodes, { signal }),
    text(pMetrics, { signal }),
    get(pRunning, { signal }),
    alerts(signal).catch(() => null),
    get(pTiers, { signal }).catch(() => ({ tiers: [] })),
  ]);
  const hist = finished(signal, rerender); // (asked for once these are in: not beside them)
  const by = gpuStates(nodes.nodes);
  const total = Object.values(by).reduce((a, t) => a + GPU_STATES.reduce((x, s) => x + t[s], 0), 0);
  const sort = (k, d) => { setQuery({ ...Object.fromEntries(r.q), sort: k, dir: d }); rerender(); };
  const gpuRows = Object.entries(by).map(([type, c]) => ({ type, ...c }));
  const gpuTable = table([{ key: 'type', label: 'Type' },
    ...GPU_STATES.map((s) => ({ key: s, label: s, cell: (row) => el('span', { class: `g-${s}` }, String(row[s])) }))],
  gpuRows, { q: r.q, onSort: sort, caption: 'GPUs by state and type', empty: 'No GPUs.' });

  const queued = {};
  for (const m of parseMetrics(metrics))
    if (m.name === 'docket_jobs' && (m.labels.state === 'PENDING' || m.labels.state === 'HELD'))
      queued[m.labels.tier] = (queued[m.labels.tier] || 0) + m.value;
  const jobs = [...running.jobs, ...(hist || [])];
  const waits = {};
  for (const j of jobs)
    if (j.start_ms && j.start_ms >= now - 7 * 86400e3)
      (waits[j.tier] ||= []).push(j.start_ms - j.submit_ms);
  // tiers in their rank (GET /v1/tiers lists the highest first), unknown ones after
  const order = (tierList.tiers || []).map((t) => t.name);
  const rankOf = (t) => { const i = order.indexOf(t); return i < 0 ? order.length : i; };
  const tiers = [...new Set([...order.filter((t) => t in queued || t in waits), ...Object.keys(queued), ...Object.keys(waits)])]
    .sort((a, b) => rankOf(a) - rankOf(b) || (a < b ? -1 : 1));
  const tierRows = tiers.map((t) => ({ tier: t, queued: queued[t] || 0, p95: waits[t] ? p95(waits[t]) : -1 }));
  const tierTable = table([
    { key: 'tier', label: 'Tier', cell: (row) => el('a', { href: href('queue', [], { tier: row.tier }) }, row.tier) },
    { key: 'queued', label: 'Queued', cell: (row) => String(row.queued) },
    { key: 'p95', label: 'Wait p95', cell: (row) => (!hist ? '…' : row.p95 < 0 ? '—' : row.p95 < 1000 ? '<1s' : dur(row.p95)) }],
  tierRows, { q: r.q, onSort: sort, caption: 'Queue by tier (wait p95 of jobs started in the last 7 days)', empty: 'No jobs yet.' });

  return el('div', {},
    el('h1', {}, 'Overview'),
    al,
    el('div', { class: 'cards' },
      el('section', { class: 'panel' }, gpuTable),
      el('section', { class: 'panel' }, tierTable)),
    el('section', { class: 'panel cards' },
      chart('GPU use, last 24 h', busySeries(jobs, now - 86400e3, now, 3600e3, now), total, !hist),
      chart('GPU use, last 7 days', busySeries(jobs, now - 7 * 86400e3, now, 6 * 3600e3, now), total, !hist)));
}
