// Nodes: a grid of nodes and their GPUs (which job holds each), and a sortable table;
// drain, resume and labels for operators and admins.
import { all, get, post } from '../api.js';
import { el, href, ago, table, setQuery, actionForm, button, field, can, stateBadge } from '../ui.js';

function holders(jobs) {
  const by = {}; // node -> gpu index -> job
  for (const j of jobs)
    for (const a of j.allocation || [])
      for (const g of a.gpus || []) (by[a.node] ||= {})[g] = j;
  return by;
}

function card(n, held, me, rerender) {
  const gpus = Array.from({ length: n.gpus }, (_, i) => {
    const j = held[i];
    return j ? el('a', { class: 'gpu busy', href: href('job', [j.id]), title: `GPU ${i}: job #${j.id} (${j.project}/${j.user})` }, `${i}:#${j.id}`)
      : el('span', { class: `gpu ${n.state === 'UP' ? (n.reserved ? 'reserved' : 'idle') : 'down'}`, title: `GPU ${i}: free` }, `${i}`);
  });
  const ops = can.operate(me) ? el('div', { class: 'ops' },
    n.state === 'UP'
      ? actionForm(`Drain ${n.name}`, field('Reason', el('input', { name: 'reason', required: true, id: `drain-${n.name}` })),
        async (v) => { await post(`/v1/nodes/${encodeURIComponent(n.name)}/drain`, { reason: v.reason }); rerender(); }, 'Drain')
      : button(`Resume ${n.name}`, async () => { await post(`/v1/nodes/${encodeURIComponent(n.name)}/resume`, {}); rerender(); }),
    actionForm(`Label ${n.name}`, field('Label (key=value, key= removes)', el('input', { name: 'label', required: true, id: `label-${n.name}`, pattern: '[^=]+=.*' })),
      async (v) => {
        const [k, ...rest] = v.label.split('=');
        await post(`/v1/nodes/${encodeURIComponent(n.name)}/labels`, { labels: { [k]: rest.join('=') || null } });
        rerender();
      }, 'Set label')) : null;
  return el('section', { class: 'panel node', id: `node-${n.name}`, 'aria-labelledby': `nh-${n.name}` },
    el('h2', { id: `nh-${n.name}` }, n.name, ' ', stateBadge(n.state)),
    n.reason ? el('p', { class: 'dim' }, n.reason) : null,
    el('p', {}, `${n.gpu_type || 'no GPU'} · ${n.gpus_used}/${n.gpus} GPUs · ${n.cpus_used}/${n.cpus} CPUs · heartbeat `, ago(n.last_heartbeat_ms)),
    Object.keys(n.labels || {}).length ? el('p', { class: 'labels' }, Object.entries(n.labels).map(([k, v]) => el('span', { class: 'badge' }, `${k}=${v}`))) : null,
    el('div', { class: 'gpus', role: 'list', 'aria-label': `GPUs of ${n.name}` }, gpus.map((g) => { g.setAttribute('role', 'listitem'); return g; })),
    ops);
}

export default async function nodes({ me, r, signal, rerender }) {
  const [{ nodes: list }, jobs] = await Promise.all([
    get('/v1/nodes', { signal }), all('/v1/jobs?state=STARTING,RUNNING,STOPPING', 'jobs')]);
  const held = holders(jobs);
  const only = r.q.get('node');
  const shown = only ? list.filter((n) => n.name === only) : list;
  const cols = [
    { key: 'name', label: 'Node', cell: (n) => el('a', { href: href('nodes', [], { node: n.name }) }, n.name) },
    { key: 'state', label: 'State', cell: (n) => stateBadge(n.state) },
    { key: 'gpu_type', label: 'GPU type' }, { key: 'gpus', label: 'GPUs' }, { key: 'gpus_used', label: 'In use' },
    { key: 'cpus_used', label: 'CPUs in use' },
    { key: 'last_heartbeat_ms', label: 'Heartbeat', cell: (n) => ago(n.last_heartbeat_ms) },
  ];
  return el('div', {},
    el('h1', {}, 'Nodes ', only ? el('a', { href: href('nodes'), class: 'small' }, '(all)') : null),
    table(cols, list, { q: r.q, caption: 'Nodes', onSort: (k, d) => { setQuery({ ...Object.fromEntries(r.q), sort: k, dir: d }); rerender(); } }),
    el('div', { class: 'grid' }, shown.map((n) => card(n, held[n.name] || {}, me, rerender))));
}
