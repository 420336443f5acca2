// Forecast: the next releases of GPUs and the jobs they go to, as a timeline (GPUs freed
// so far over time) and a table.
import { get } from '../api.js';
import { el, href, ago, table, setQuery, plot } from '../ui.js';

export default async function forecast({ r, signal, rerender }) {
  const { releases = [] } = await get('/v1/forecast?limit=200', { signal });
  const holder = el('div', { class: 'chart', role: 'img', 'aria-label': 'GPUs released over time' });
  if (releases.length) {
    let sum = 0;
    const xs = releases.map((x) => x.at_ms / 1000), ys = releases.map((x) => (sum += x.gpus));
    plot((uPlot, width) => ({ width, height: 180,
      series: [{}, { label: 'GPUs released', stroke: '#16a34a', paths: uPlot.paths.stepped({ align: 1 }), points: { show: true } }],
      axes: [{}, { size: 40 }], legend: { show: false } }), [xs, ys], holder, 720);
  }
  const cols = [
    { key: 'at_ms', label: 'When', cell: (x) => ago(x.at_ms) },
    { key: 'job', label: 'Releases', cell: (x) => el('a', { href: href('job', [x.job]) }, `#${x.job}`) },
    { key: 'node', label: 'Node', cell: (x) => el('a', { href: href('nodes', [], { node: x.node }) }, x.node) },
    { key: 'gpus', label: 'GPUs', cell: (x) => `${x.gpus}${x.gpu_type ? ` × ${x.gpu_type}` : ''}` },
    { key: 'next_job', label: 'Goes to', cell: (x) => (x.next_job ? el('a', { href: href('job', [x.next_job]) }, `#${x.next_job} (${x.next_project}, ${x.next_tier})`) : '—') },
    { key: 'by_reservation', label: 'Reserved', cell: (x) => (x.by_reservation ? 'yes' : 'no') },
  ];
  return el('div', {}, el('h1', {}, 'Forecast'),
    releases.length ? holder : el('p', { class: 'dim' }, 'Nothing is running: no release to forecast.'),
    table(cols, releases, { q: r.q, caption: 'Next releases', onSort: (k, d) => { setQuery({ ...Object.fromEntries(r.q), sort: k, dir: d }); rerender(); } }));
}
