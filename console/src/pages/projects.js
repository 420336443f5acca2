// Projects: quota (gpu_limit) vs use vs guarantee, fair-share, boost; the groups above
// them; a project's members, its GPU use over the last 30 days against its limit and
// guarantee, and boost with reason and expiry for operators and admins.
import { get, post, del } from '../api.js';
import { el, href, ago, table, setQuery, actionForm, button, field, can, plot } from '../ui.js';

const lim = (v) => (v < 0 ? '∞' : String(v));

// Use against guarantee and limit, as a bar (a meter for screen readers).
function useBar(use, guarantee, limit) {
  const max = Math.max(1, limit > 0 ? limit : Math.max(use, guarantee));
  const m = el('meter', { min: 0, max, value: use, low: guarantee > 0 ? guarantee : max, high: max, optimum: 0,
    title: `${use} GPUs in use; guarantee ${guarantee}; limit ${lim(limit)}` });
  return el('span', { class: 'use' }, m, ` ${use} / ${lim(limit)} (g ${guarantee})`);
}

// GET /v1/projects/NAME/usage (daily averages of the GPUs its jobs held), read at most
// every 5 minutes: a day's average moves slowly.
const USE_MS = 300000;
let use = { name: '', at: 0, data: null };

async function useOf(name, signal) {
  if (use.name === name && use.data && Date.now() - use.at < USE_MS) return use.data;
  const data = await get(`/v1/projects/${encodeURIComponent(name)}/usage?days=30`, { signal });
  use = { name, at: Date.now(), data };
  return data;
}

// Use per day, with the limit and the guarantee as flat lines (the policy's now: docketd
// keeps no history of them), and the same in words.
function useChart(u) {
  const peak = Math.max(0, ...u.gpus);
  const avg = u.gpus.reduce((a, b) => a + b, 0) / Math.max(1, u.gpus.length);
  const num = (v) => (v === 0 || v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toPrecision(2)); // a few minutes of a day still shows
  const words = `Average ${num(avg)} GPUs a day, peak ${num(peak)}; limit ${lim(u.gpu_limit)}, guarantee ${u.guarantee_gpus}`;
  const box = el('figure', { class: 'chart', id: 'project-use' },
    el('figcaption', {}, 'GPU use, last 30 days (daily average; dashed: limit, dotted: guarantee)'), el('p', { class: 'dim use-words' }, words));
  if (peak === 0) {
    box.append(el('p', { class: 'dim' }, 'No job of this project held a GPU in these 30 days.'));
    return box;
  }
  const holder = el('div', { role: 'img', 'aria-label': `GPU use of ${u.project} per day: ${words}` });
  box.append(holder);
  const xs = u.t.map((t) => t / 1000);
  const flat = (v) => u.t.map(() => v);
  const series = [{}, { label: 'GPUs used', stroke: '#2563eb', fill: 'rgba(37,99,235,0.15)' }];
  const data = [xs, u.gpus];
  if (u.gpu_limit >= 0) { series.push({ label: 'limit', stroke: '#b91c1c', dash: [6, 4] }); data.push(flat(u.gpu_limit)); }
  if (u.guarantee_gpus > 0) { series.push({ label: 'guarantee', stroke: '#15803d', dash: [2, 4] }); data.push(flat(u.guarantee_gpus)); }
  // no legend (uPlot's is a table without a caption): the words above say what is drawn
  plot((uPlot, width) => ({ width, height: 160, series, axes: [{}, { size: 40 }], legend: { show: false } }), data, holder, 720);
  return box;
}

async function detail(me, name, signal, rerender) {
  const [{ project: p }, m, u] = await Promise.all([
    get(`/v1/projects/${encodeURIComponent(name)}`, { signal }),
    get(`/v1/projects/${encodeURIComponent(name)}/members`, { signal }),
    useOf(name, signal).catch(() => null)]);
  const boost = p.boost ? el('p', {}, `Boosted ${p.boost.levels} level(s) until `, ago(p.boost.until_ms), `: ${p.boost.reason || ''} `,
    can.operate(me) ? button('Remove boost', async () => { await del(`/v1/projects/${encodeURIComponent(name)}/boost`); rerender(); }) : null)
    : el('p', { class: 'dim' }, 'Not boosted.');
  return el('section', { class: 'panel', 'aria-labelledby': 'pd-h' },
    el('h2', { id: 'pd-h' }, `Project ${p.name}`),
    el('p', {}, `Tier ${p.tier}${p.eff_tier !== p.tier ? ` (now ${p.eff_tier})` : ''}, group ${p.group || '—'}`,
      p.paused ? ' · admission paused' : '', ' · ', el('a', { href: href('queue', [], { project: p.name }) }, 'its queue')),
    u ? useChart(u) : null,
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
