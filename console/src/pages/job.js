// Job: its spec, state, allocation, explanation, events timeline, the logs of a run
// (followed while the page is open and the reader is at the end; where they scrolled
// kept; a run picker, Find and Download) and the actions the viewer may take (cancel and
// requeue ask first, with a reason for the audit trail).
import { get, post, raw } from '../api.js';
import { el, href, ago, dur, button, can, stateBadge, field, route, setQuery, plot } from '../ui.js';

// One log panel per job page (its stream and run): the same elements survive the page's
// refreshes (the text read so far, where the reader scrolled, what they typed in Find) and
// the reading stops when the page is left or another run or stream is picked.
let follower = null;

// Bytes of a log as text, offset after them, the run's count of runs and whether the run's
// output is complete (docs/api.md "logs").
async function readLog(id, stream, run, offset, follow, signal) {
  const res = await raw(`/v1/jobs/${id}/logs?stream=${stream}${run ? `&run=${run}` : ''}&offset=${offset}${follow ? '&follow=1' : ''}`, { signal });
  if (!res.ok) {
    const body = await res.json().catch(() => ({}));
    throw new Error((body.error && body.error.message) || `HTTP ${res.status}`);
  }
  const text = await res.text();
  return { text, offset: Number(res.headers.get('X-Docket-Offset')) || offset + text.length,
    runs: Number(res.headers.get('X-Docket-Runs')) || 0, run: Number(res.headers.get('X-Docket-Run')) || run,
    eof: res.headers.get('X-Docket-Eof') === '1' };
}

// The lines of the log that hold `needle` (case-insensitive), with their numbers.
export function findLines(text, needle, max = 200) {
  if (!needle) return [];
  const n = needle.toLowerCase(), out = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length && out.length < max; i++)
    if (lines[i].toLowerCase().includes(n)) out.push([i + 1, lines[i]]);
  return out;
}

function logTools(f) {
  const find = el('input', { type: 'search', id: 'log-find', name: 'find', value: f.needle, 'aria-label': 'Find in the log' });
  const found = el('p', { class: 'dim', 'aria-live': 'polite' });
  const hits = el('pre', { class: 'logs hits', hidden: true, 'aria-label': 'Lines that match' });
  const showHits = () => {
    f.needle = find.value;
    const lines = findLines(f.pre.textContent, f.needle);
    found.textContent = f.needle ? `${lines.length}${lines.length === 200 ? '+' : ''} line(s) hold “${f.needle}”` : '';
    hits.hidden = !f.needle;
    hits.textContent = lines.map(([n, l]) => `${String(n).padStart(6)}  ${l}`).join('\n');
  };
  find.addEventListener('input', showHits);
  const runs = el('select', { id: 'log-run', name: 'run', 'aria-label': 'Run' });
  runs.addEventListener('change', () => { f.pick(Number(runs.value)); });
  const save = el('button', { type: 'button', onclick: () => download(f) }, 'Download');
  const form = el('form', { class: 'filters logtools', 'aria-label': 'Log tools' },
    field('Find', find), field('Run', runs), save);
  form.addEventListener('submit', (ev) => ev.preventDefault());
  f.showHits = showHits;
  f.setRuns = (n, cur) => {
    if (runs.options.length === n && Number(runs.value) === cur) return;
    runs.replaceChildren(...Array.from({ length: Math.max(n, 1) }, (_, i) =>
      el('option', { value: i + 1, selected: i + 1 === cur }, `run ${i + 1}${i + 1 === n ? ' (latest)' : ''}`)));
  };
  return [form, found, hits];
}

// The whole run's stream as a file: read from the start to its end (no waiting).
async function download(f) {
  let offset = 0, parts = [];
  for (;;) {
    const r = await readLog(f.id, f.stream, f.run, offset, false, undefined);
    parts.push(r.text);
    if (!r.text || r.eof || r.offset === offset) break;
    offset = r.offset;
  }
  const url = URL.createObjectURL(new Blob(parts, { type: 'text/plain' }));
  const a = el('a', { href: url, download: `job-${f.id}-run${f.run || 'latest'}.${f.stream}.log` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function follow(id, stream, run, signal, rerender) {
  if (follower && follower.id === id && follower.stream === stream && follower.want === run && !follower.signal.aborted)
    return follower.panel;
  const pre = el('pre', { class: 'logs', tabindex: 0, 'aria-label': `${stream} of job ${id}`, 'aria-live': 'off', 'data-keep-scroll': true });
  const f = { id, stream, want: run, run, pre, signal, needle: '' };
  f.pick = (n) => { const q = new URLSearchParams(route().q); q.set('run', n); setQuery(Object.fromEntries(q)); rerender(); };
  f.panel = el('div', { class: 'logpanel' }, logTools(f), pre);
  follower = f;
  (async () => {
    let offset = 0;
    while (!signal.aborted && follower === f) {
      try {
        const r = await readLog(id, stream, run, offset, true, signal);
        offset = r.offset;
        f.run = r.run;
        f.setRuns(r.runs, r.run);
        if (r.text) {
          const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
          pre.append(r.text);
          if (atEnd) pre.scrollTop = pre.scrollHeight; // following: stay at the end
          if (f.needle) f.showHits();
        }
        if (r.eof) {
          pre.dataset.eof = '1';
          return;
        }
      } catch (e) {
        if (signal.aborted) return;
        if (!/HTTP 5|fetch/i.test(e.message)) { pre.textContent = e.message; return; }
        await new Promise((ok) => setTimeout(ok, 2000));
      }
    }
  })();
  return f.panel;
}

// The job's use over time (GET /v1/jobs/ID/usage): CPU cores, memory and GPU use, one
// small chart each, read at most every USAGE_MS and kept across the page's refreshes.
const USAGE_MS = 15000;
let usage = null; // {id, at, panel}

export function usageSeries(series, node) {
  const pts = (series || []).filter((p) => !node || !p.node || p.node === node)
    .sort((a, b) => a.time_ms - b.time_ms);
  const xs = pts.map((p) => p.time_ms / 1000);
  const col = (k, f = (v) => v) => pts.map((p) => (p[k] === null || p[k] === undefined ? null : f(p[k])));
  return { n: pts.length, xs, cpu: col('cpu_cores'), mem: col('mem_bytes', (v) => v / 2 ** 30), gpu: col('gpu_util') };
}

function usageChart(title, label, xs, ys) {
  const holder = el('div', { class: 'usage-chart', role: 'img', 'aria-label': `${title} over time` });
  const box = el('figure', { class: 'chart' }, el('figcaption', {}, title), holder);
  if (!ys.some((v) => v !== null)) {
    holder.replaceWith(el('p', { class: 'dim' }, 'Not reported.'));
    return box;
  }
  plot((uPlot, width) => ({
    width, height: 120, legend: { show: false }, axes: [{}, { size: 44 }],
    series: [{}, { label, stroke: '#2563eb', fill: 'rgba(37,99,235,0.12)' }],
  }), [xs, ys], holder, 360);
  return box;
}

function usagePanel(j, signal) {
  if (!j.start_ms) return null;
  const fresh = usage && usage.id === j.id;
  if (fresh && Date.now() - usage.at < USAGE_MS) return usage.panel;
  const panel = fresh ? usage.panel : el('section', { class: 'panel', 'aria-labelledby': 'use-h' },
    el('h2', { id: 'use-h' }, 'Use over time'), el('p', { class: 'dim' }, 'Reading…'));
  usage = { id: j.id, at: Date.now(), panel }; // the charts on screen stay until the new ones
  const node = (j.allocation || [])[0] && j.allocation[0].node;
  get(`/v1/jobs/${j.id}/usage`, { signal }).then((u) => {
    const s = usageSeries(u.series, node);
    panel.replaceChildren(el('h2', { id: 'use-h' }, 'Use over time'),
      s.n ? el('div', { class: 'cards' },
        usageChart('CPU cores', 'cores', s.xs, s.cpu),
        usageChart('Memory (GiB)', 'GiB', s.xs, s.mem),
        usageChart('GPU use (%)', '%', s.xs, s.gpu))
        : el('p', { class: 'dim' }, 'No samples yet (agents sample running jobs every few seconds).'),
      node && (j.allocation || []).length > 1 ? el('p', { class: 'dim' }, `Samples of ${node}, the job's first node.`) : null);
  }, (e) => { if (!signal.aborted) panel.replaceChildren(el('h2', { id: 'use-h' }, 'Use over time'), el('p', { class: 'err' }, e.message)); });
  return panel;
}

function dl(pairs) {
  return el('dl', { class: 'kv' }, pairs.filter((p) => p[1] !== undefined && p[1] !== null && p[1] !== '')
    .map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]).flat());
}

// An action that ends or restarts work (cancel, requeue) asks first, with a reason that
// goes to the audit trail; the question survives the page's refreshes.
const CONFIRM = { cancel: 'Cancel', requeue: 'Requeue' };
let confirming = null; // {id, action, reason}

function confirmForm(j, rerender) {
  const c = confirming;
  const reason = el('input', { type: 'text', id: 'confirm-reason', name: 'reason', value: c.reason,
    placeholder: 'why (kept in the audit trail)' });
  reason.addEventListener('input', () => { c.reason = reason.value; });
  const err = el('span', { class: 'err', role: 'alert' });
  const form = el('form', { class: 'action confirm', role: 'alertdialog', 'aria-label': `${CONFIRM[c.action]} job #${j.id}?` },
    el('strong', {}, `${CONFIRM[c.action]} job #${j.id}?`), ' ',
    field('Reason', reason),
    el('button', { type: 'submit' }, `Yes, ${c.action}`),
    el('button', { type: 'button', onclick: () => { confirming = null; rerender(); } }, 'No, keep it'), err);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await post(`/v1/jobs/${j.id}/${c.action}`, c.reason ? { reason: c.reason } : {});
      confirming = null;
      rerender();
    } catch (e) { err.textContent = e.message; }
  });
  return form;
}

function actions(me, j, rerender) {
  if (!can.controlJob(me, j)) return el('p', { class: 'dim' }, 'You may not act on this job.');
  if (confirming && confirming.id === j.id) return confirmForm(j, rerender);
  const act = (a) => button(a[0].toUpperCase() + a.slice(1), async () => {
    if (CONFIRM[a]) {
      confirming = { id: j.id, action: a, reason: '' };
      rerender();
      return;
    }
    await post(`/v1/jobs/${j.id}/${a}`, {});
    rerender();
  });
  const live = !['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL'].includes(j.state);
  return el('div', { class: 'actions', role: 'group', 'aria-label': 'Actions' },
    live ? act('cancel') : null,
    j.state === 'PENDING' ? act('hold') : null,
    j.state === 'HELD' ? act('release') : null,
    ['RUNNING', 'PREEMPTED', 'FAILED', 'NODE_FAIL', 'TIMEOUT', 'CANCELLED'].includes(j.state) ? act('requeue') : null);
}

export default async function job({ me, r, signal, rerender }) {
  const id = r.args[0];
  const stream = r.q.get('stream') === 'stderr' ? 'stderr' : 'stdout';
  const run = Number(r.q.get('run')) || 0; // 0: the latest
  const [{ job: j }, ev, ex] = await Promise.all([
    get(`/v1/jobs/${id}`, { signal }),
    get(`/v1/jobs/${id}/events`, { signal }),
    get(`/v1/jobs/${id}/explain`, { signal }),
  ]);
  const x = ex.explain || {};
  const alloc = (j.allocation || []).map((a) => el('li', {},
    el('a', { href: href('nodes', [], { node: a.node }) }, a.node), `: GPUs ${(a.gpus || []).join(', ') || '—'}, ${a.cpus} CPUs, ${a.mem_mb} MiB`));
  return el('div', {},
    el('p', {}, el('a', { href: href('queue') }, '‹ Queue')),
    el('h1', {}, `Job #${j.id} `, el('span', { class: 'dim' }, j.name || ''), ' ', stateBadge(j.state)),
    actions(me, j, rerender),
    el('section', { class: 'panel explain', 'aria-labelledby': 'why-h' },
      el('h2', { id: 'why-h' }, 'Why'),
      el('p', { class: 'sentence' }, x.sentence || '—'),
      dl([
        ['Reason', x.reason],
        ['Position', x.position ? `${x.position.overall} of ${x.position.of} (${x.position.in_tier} of ${x.position.tier_total} in its tier)` : null],
        ['Forecast start', x.forecast_start_ms ? ago(x.forecast_start_ms) : null],
        ['Waiting on', x.waiting_on && x.waiting_on.length ? x.waiting_on.map((w) => el('a', { href: href('job', [w]) }, `#${w} `)) : null],
        ['Limit', x.limit ? `${x.limit.name}: ${x.limit.in_use} of ${x.limit.value} in use, asks ${x.limit.request}` : null],
        ['Nodes that match', x.nodes_matching],
      ])),
    el('div', { class: 'cards' },
      el('section', { class: 'panel', 'aria-labelledby': 'spec-h' }, el('h2', { id: 'spec-h' }, 'Spec'), dl([
        ['Project', el('a', { href: href('projects', [], { project: j.project }) }, j.project)],
        ['User', j.user], ['Tier', j.eff_tier && j.eff_tier !== j.tier ? `${j.tier} (now ${j.eff_tier})` : j.tier],
        ['Class', j.class], ['GPUs', `${j.gpus}${j.gpu_type ? ` × ${j.gpu_type}` : ''} on ${j.nodes} node(s)`],
        ['CPUs / memory', `${j.cpus} / ${j.mem_mb ? `${j.mem_mb} MiB` : 'the class default'}`], ['Time limit', dur(j.time_limit_ms)],
        ['Command', j.hidden ? "(hidden: its owner, its project's leads and admins see it)"
          : (j.command || []).join(' ') || (j.script ? '(script)' : '')],
        ['Submitted', ago(j.submit_ms)], ['Started', j.start_ms ? ago(j.start_ms) : null], ['Ended', j.end_ms ? ago(j.end_ms) : null],
        ['Preempted', j.preempt_count ? `${j.preempt_count} times` : null],
        ['Exit', j.exit ? `${j.exit.kind}${j.exit.code !== undefined ? ` ${j.exit.code}` : ''}` : null],
        ['Usage', j.usage && (j.usage.cpu_ms || j.usage.max_rss_mb || j.usage.gpu_util)
          ? `CPU time ${dur(j.usage.cpu_ms)}, peak memory ${j.usage.max_rss_mb} MiB, GPU ${j.usage.gpu_util}%` : null],
      ])),
      el('section', { class: 'panel', 'aria-labelledby': 'alloc-h' }, el('h2', { id: 'alloc-h' }, 'Allocation'),
        alloc.length ? el('ul', {}, alloc) : el('p', { class: 'dim' }, 'Not placed.'))),
    usagePanel(j, signal),
    el('section', { class: 'panel', 'aria-labelledby': 'ev-h' }, el('h2', { id: 'ev-h' }, 'Events'),
      el('ol', { class: 'timeline' }, (ev.events || []).map((e) => el('li', {},
        ago(e.time_ms), ' ', el('strong', {}, e.type), ` ${e.from || ''}${e.to ? ` → ${e.to}` : ''}`,
        e.node ? ` on ${e.node}` : '', e.reason ? ` — ${e.reason}` : '')))),
    el('section', { class: 'panel', 'aria-labelledby': 'logs-h' }, el('h2', { id: 'logs-h' }, 'Logs'),
      can.readLogs(me, j) ? [
        el('p', {}, el('a', { href: href('job', [id], { stream: 'stdout', run: run || '' }), 'aria-current': stream === 'stdout' ? 'true' : null }, 'stdout'), ' · ',
          el('a', { href: href('job', [id], { stream: 'stderr', run: run || '' }), 'aria-current': stream === 'stderr' ? 'true' : null }, 'stderr')),
        follow(id, stream, run, signal, rerender)]
        : el('p', { class: 'dim' }, 'Only the job’s owner, its project’s leads and admins may read its logs.')));
}
