// Queue: every pending (and held) job, with its reason sentence, position and forecast
// start from explain (read for the rows on screen), filters by project, user, tier,
// class and reason in the URL; a row opens the job with its explanation. The same view
// shows jobs in any state (state=waiting|running|finished|all, or the API's state names)
// and searches their id, name and command (those the viewer may see).
import { all, get } from '../api.js';
import { el, href, ago, table, setQuery, field, select, stateBadge, afterPaint } from '../ui.js';
import { QUEUE_PAGE as PAGE, QUEUE_STATES as STATES, queueParams, queueFirst } from '../first.js';

const FILTERS = ['project', 'user', 'tier', 'class', 'reason'];
const FINISHED_MAX = 5000; // finished jobs: the newest ones, as many as this
const explained = new Map(); // job id -> {at, explain}: read again after 15 s
const FULL_MS = 30000; // the whole queue is read again at most this often
let whole = { key: '', at: 0, jobs: null, loading: null };

// The pending jobs matching the server-side filters. The first screen comes from one
// page of PAGE rows; the whole list (10,000 jobs are megabytes) is read behind it and
// the page re-renders when it is in, then it is reused for FULL_MS.
async function pending(params, rerender, signal) {
  const key = params.toString();
  if (whole.key !== key) whole = { key, at: 0, jobs: null, loading: null };
  const stale = !whole.jobs || Date.now() - whole.at > FULL_MS;
  const first = whole.jobs ? null : await get(queueFirst(params), { signal });
  if (stale && !whole.loading && (!first || first.next)) { // after the first page: not in its way
    const w = whole;
    const max = /terminal|all|COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL/.test(params.get('state')) ? FINISHED_MAX : undefined;
    w.loading = afterPaint().then(() => all(`/v1/jobs?${key}`, 'jobs', max)).then((jobs) => {
      Object.assign(w, { jobs, at: Date.now(), loading: null });
      if (whole === w && !signal.aborted) rerender();
    }, () => { w.loading = null; });
  }
  if (whole.jobs) return { jobs: whole.jobs, complete: true };
  return { jobs: first.jobs, complete: !first.next };
}

let explaining = null; // the explains being read for the rows on screen

// The explanations of the rows on screen: those read less than 15 s ago at once; the
// others are read behind the page (each row is one request), which re-renders when they
// are in. The first screen shows each row's reason code at once, its sentence after.
function explains(shown, rerender, signal) {
  const fresh = (id) => explained.has(id) && Date.now() - explained.get(id).at < 15000;
  const missing = shown.filter((j) => !fresh(j.id));
  if (missing.length && !explaining) {
    // started once this render is on screen (50 requests cost the page their set-up)
    explaining = afterPaint().then(() => Promise.all(missing.map((j) =>
      get(`/v1/jobs/${j.id}/explain`, { signal })
        .then((x) => explained.set(j.id, { at: Date.now(), explain: x.explain }), () => {}))))
      .then(() => { explaining = null; if (!signal.aborted) rerender(); });
  }
  return shown.map((j) => (explained.has(j.id) ? explained.get(j.id).explain : null));
}

export default async function queue({ r, signal, rerender }) {
  const q = r.q;
  const state = q.get('state') || 'waiting';
  const params = queueParams(q);
  const { jobs, complete } = await pending(params, rerender, signal);
  const all_ = jobs;
  const needle = (q.get('search') || '').toLowerCase();
  const rows = jobs.filter((j) => (!q.get('reason') || (j.reason || j.state) === q.get('reason')) &&
    (!needle || `#${j.id} ${j.name || ''} ${(j.command || []).join(' ')}`.toLowerCase().includes(needle)));
  const opts = (k) => ['', ...new Set([...all_.map((j) => (k === 'reason' ? j.reason || j.state : j[k])), q.get(k) || ''].filter(Boolean))].sort();
  const set = (k, v) => { const o = Object.fromEntries(q); o[k] = v; if (k !== 'page') delete o.page; setQuery(o); rerender(); };

  // sort over every row, then explain the page on screen
  const cols = [
    { key: 'id', label: 'Job', value: (j) => j.id, cell: (j) => el('a', { href: href('job', [j.id]) }, `#${j.id}`) },
    { key: 'name', label: 'Name' },
    { key: 'project', label: 'Project' }, { key: 'user', label: 'User' },
    { key: 'tier', label: 'Tier' }, { key: 'class', label: 'Class' },
    { key: 'gpus', label: 'GPUs', cell: (j) => `${j.gpus}${j.gpu_type ? ` × ${j.gpu_type}` : ''}` },
    { key: 'submit_ms', label: 'Submitted', cell: (j) => ago(j.submit_ms) },
    { key: 'state', label: 'State', cell: (j) => stateBadge(j.state) },
    { key: 'reason', label: 'Reason', value: (j) => j.reason || j.state,
      cell: (j) => el('span', {}, j.state === 'HELD' ? stateBadge('HELD') : el('span', { class: 'badge' }, j.reason || '—'), ' ',
        el('span', { class: 'sentence' }, j._x ? j._x.sentence : '')) },
    { key: 'position', label: 'Position', nosort: true, cell: (j) => j._x && j._x.position ? `${j._x.position.overall} of ${j._x.position.of}` : '—' },
    { key: 'forecast', label: 'Forecast start', nosort: true, cell: (j) => ago(j._x && j._x.forecast_start_ms) },
  ];
  const key = q.get('sort') || 'id', dir = q.get('dir') === 'desc' ? -1 : 1;
  const col = cols.find((c) => c.key === key) || cols[0];
  const val = col.value || ((j) => j[col.key]);
  const sorted = [...rows].sort((a, b) => (val(a) < val(b) ? -1 : val(a) > val(b) ? 1 : 0) * dir);
  const pages = Math.max(1, Math.ceil(sorted.length / PAGE));
  const page = Math.min(pages, Math.max(1, Number(q.get('page')) || 1));
  const shown = sorted.slice((page - 1) * PAGE, page * PAGE);
  const waiting = shown.filter((j) => j.state === 'PENDING' || j.state === 'HELD'); // only they have a why
  const xs = explains(waiting, rerender, signal);
  waiting.forEach((j, i) => { j._x = xs[i]; });

  const search = el('input', { type: 'search', id: 'job-search', name: 'search', value: q.get('search') || '',
    placeholder: 'id, name or command' });
  search.addEventListener('change', () => set('search', search.value));
  const states = [...new Set([...Object.keys(STATES), state])];
  const filters = el('form', { class: 'filters', 'aria-label': 'Filters' },
    field('State', select('state', states, state, (ev) => set('state', ev.target.value))),
    FILTERS.map((k) => field(k[0].toUpperCase() + k.slice(1), select(k, opts(k), q.get(k) || '', (ev) => set(k, ev.target.value)))),
    field('Search', search));
  filters.addEventListener('submit', (ev) => { ev.preventDefault(); set('search', search.value); });
  const pager = el('nav', { class: 'pager', 'aria-label': 'Pages of the queue' },
    el('button', { type: 'button', disabled: page <= 1, onclick: () => set('page', page - 1) }, '‹ Previous'),
    ` page ${page} of ${pages} `,
    el('button', { type: 'button', disabled: page >= pages, onclick: () => set('page', page + 1) }, 'Next ›'));
  return el('div', {},
    el('h1', {}, `Queue `, el('span', { class: 'dim' }, `${rows.length}${complete ? '' : '+'} ${STATES[state] ? (state === 'all' ? 'jobs' : state) : state}`,
      complete ? '' : ' (reading the rest…)')),
    filters,
    table(cols, shown, { q: new URLSearchParams({ sort: key, dir: dir > 0 ? 'asc' : 'desc' }),
      onSort: (k, d) => { const o = Object.fromEntries(q); o.sort = k; o.dir = d; setQuery(o); rerender(); },
      caption: state === 'waiting' ? 'Pending and held jobs' : `Jobs: ${state}`, empty: state === 'waiting' ? 'No job is waiting.' : 'No job here.',
      rowAttrs: (j) => ({ 'data-job': j.id }) }),
    pager);
}
