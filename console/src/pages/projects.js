// Projects: quota (gpu_limit) vs use vs guarantee, fair-share, boost; the groups above
// them; a project's members, and boost with reason and expiry for operators and admins.
import { get, post, del } from '../api.js';
import { el, href, ago, table, setQuery, actionForm, button, field, can } from '../ui.js';

const lim = (v) => (v < 0 ? '∞' : String(v));

// Use against guarantee and limit, as a bar (a meter for screen readers).
function useBar(use, guarantee, limit) {
  const max = Math.max(1, limit > 0 ? limit : Math.max(use, guarantee));
  const m = el('meter', { min: 0, max, value: use, low: guarantee > 0 ? guarantee : max, high: max, optimum: 0,
    title: `${use} GPUs in use; guarantee ${guarantee}; limit ${lim(limit)}` });
  return el('span', { class: 'use' }, m, ` ${use} / ${lim(limit)} (g ${guarantee})`);
}

async function detail(me, name, signal, rerender) {
  const [{ project: p }, m] = await Promise.all([
    get(`/v1/projects/${encodeURIComponent(name)}`, { signal }),
    get(`/v1/projects/${encodeURIComponent(name)}/members`, { signal })]);
  const boost = p.boost ? el('p', {}, `Boosted ${p.boost.levels} level(s) until `, ago(p.boost.until_ms), `: ${p.boost.reason || ''} `,
    can.operate(me) ? button('Remove boost', async () => { await del(`/v1/projects/${encodeURIComponent(name)}/boost`); rerender(); }) : null)
    : el('p', { class: 'dim' }, 'Not boosted.');
  return el('section', { class: 'panel', 'aria-labelledby': 'pd-h' },
    el('h2', { id: 'pd-h' }, `Project ${p.name}`),
    el('p', {}, `Tier ${p.tier}${p.eff_tier !== p.tier ? ` (now ${p.eff_tier})` : ''}, group ${p.group || '—'}`,
      p.paused ? ' · admission paused' : '', ' · ', el('a', { href: href('queue', [], { project: p.name }) }, 'its queue')),
    boost,
    can.operate(me) ? actionForm('Boost', [
      field('Levels', el('input', { name: 'levels', id: 'boost-levels', type: 'number', min: 1, max: 9, value: 1, required: true })),
      field('For', el('input', { name: 'duration', id: 'boost-duration', value: '24h', required: true, pattern: '[0-9hmsd]+' })),
      field('Reason', el('input', { name: 'reason', id: 'boost-reason', required: true }))],
    async (v) => {
      await post(`/v1/projects/${encodeURIComponent(name)}/boost`, { levels: Number(v.levels), duration: v.duration, reason: v.reason });
      rerender();
    }, 'Boost') : null,
    el('h3', {}, 'Members'),
    el('ul', {}, (m.members || []).map((x) => el('li', {}, `${x.user} (${x.role})`))));
}

export default async function projects({ me, r, signal, rerender }) {
  const { projects: list, groups } = await get('/v1/projects', { signal });
  const pick = r.q.get('project');
  const sort = (k, d) => { setQuery({ ...Object.fromEntries(r.q), sort: k, dir: d }); rerender(); };
  const cols = [
    { key: 'name', label: 'Project', cell: (p) => el('a', { href: href('projects', [], { project: p.name }) }, p.name) },
    { key: 'group', label: 'Group' }, { key: 'tier', label: 'Tier', cell: (p) => p.eff_tier !== p.tier ? `${p.tier} → ${p.eff_tier}` : p.tier },
    { key: 'use', label: 'GPUs: use / limit (guarantee)', value: (p) => p.usage.gpus_in_use, cell: (p) => useBar(p.usage.gpus_in_use, p.guarantee_gpus, p.gpu_limit) },
    { key: 'running', label: 'Running', value: (p) => p.usage.running, cell: (p) => String(p.usage.running) },
    { key: 'queued', label: 'Queued', value: (p) => p.usage.queued, cell: (p) => String(p.usage.queued) },
    { key: 'share', label: 'Fair-share', value: (p) => p.usage.share, cell: (p) => `${(p.usage.share ?? 0).toFixed(2)} (usage ${(p.usage.fairshare_usage ?? 0).toFixed(1)})` },
    { key: 'boost', label: 'Boost', value: (p) => (p.boost ? p.boost.levels : 0), cell: (p) => (p.boost ? `+${p.boost.levels}` : '—') },
  ];
  const gcols = [
    { key: 'name', label: 'Group' },
    { key: 'use', label: 'GPUs: use / limit (guarantee)', value: (g) => g.usage.gpus_in_use, cell: (g) => useBar(g.usage.gpus_in_use, g.guarantee_gpus, g.gpu_limit) },
    { key: 'projects', label: 'Projects', value: (g) => g.usage.projects, cell: (g) => String(g.usage.projects) },
    { key: 'share', label: 'Share', value: (g) => g.usage.share, cell: (g) => (g.usage.share ?? 0).toFixed(2) },
  ];
  return el('div', {},
    el('h1', {}, 'Projects'),
    pick ? await detail(me, pick, signal, rerender) : null,
    table(cols, list, { q: r.q, onSort: sort, caption: 'Projects' }),
    groups && groups.length ? table(gcols, groups, { q: r.q, onSort: sort, caption: 'Groups' }) : null);
}
