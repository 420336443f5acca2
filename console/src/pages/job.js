// Job: its spec, state, allocation, explanation, events timeline, the logs of a run
// (followed while the page is open) and the actions the viewer may take.
import { get, post, raw } from '../api.js';
import { el, href, ago, dur, button, can, stateBadge } from '../ui.js';

// One follower per job page: it survives the page's refreshes and stops when it is left.
let follower = null;

function follow(id, stream, signal) {
  if (follower && follower.id === id && follower.stream === stream && !follower.signal.aborted) return follower.pre;
  const pre = el('pre', { class: 'logs', tabindex: 0, 'aria-label': `${stream} of job ${id}`, 'aria-live': 'off' });
  follower = { id, stream, pre, signal };
  (async () => {
    let offset = 0;
    while (!signal.aborted && follower && follower.pre === pre) {
      try {
        const res = await raw(`/v1/jobs/${id}/logs?stream=${stream}&offset=${offset}&follow=1`, { signal });
        if (!res.ok) {
          const body = await res.json().catch(() => ({}));
          pre.textContent = (body.error && body.error.message) || `HTTP ${res.status}`;
          return;
        }
        const text = await res.text();
        offset = Number(res.headers.get('X-Docket-Offset')) || offset + text.length;
        if (text) {
          const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
          pre.append(text);
          if (atEnd) pre.scrollTop = pre.scrollHeight;
        }
        if (res.headers.get('X-Docket-Eof') === '1') {
          pre.dataset.eof = '1';
          return;
        }
      } catch (e) {
        if (signal.aborted) return;
        await new Promise((ok) => setTimeout(ok, 2000));
      }
    }
  })();
  return pre;
}

function dl(pairs) {
  return el('dl', { class: 'kv' }, pairs.filter((p) => p[1] !== undefined && p[1] !== null && p[1] !== '')
    .map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]).flat());
}

function actions(me, j, rerender) {
  if (!can.controlJob(me, j)) return el('p', { class: 'dim' }, 'You may not act on this job.');
  const act = (a) => button(a[0].toUpperCase() + a.slice(1), async () => {
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
    el('section', { class: 'panel', 'aria-labelledby': 'ev-h' }, el('h2', { id: 'ev-h' }, 'Events'),
      el('ol', { class: 'timeline' }, (ev.events || []).map((e) => el('li', {},
        ago(e.time_ms), ' ', el('strong', {}, e.type), ` ${e.from || ''}${e.to ? ` → ${e.to}` : ''}`,
        e.node ? ` on ${e.node}` : '', e.reason ? ` — ${e.reason}` : '')))),
    el('section', { class: 'panel', 'aria-labelledby': 'logs-h' }, el('h2', { id: 'logs-h' }, 'Logs'),
      can.readLogs(me, j) ? [
        el('p', {}, el('a', { href: href('job', [id], { stream: 'stdout' }), 'aria-current': stream === 'stdout' ? 'true' : null }, 'stdout'), ' · ',
          el('a', { href: href('job', [id], { stream: 'stderr' }), 'aria-current': stream === 'stderr' ? 'true' : null }, 'stderr')),
        follow(id, stream, signal)]
        : el('p', { class: 'dim' }, 'Only the job’s owner, its project’s leads and admins may read its logs.')));
}
