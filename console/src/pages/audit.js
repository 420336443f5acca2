// Audit: the trail (viewers, operators, admins), filtered by actor, action and target in
// the URL.
import { get } from '../api.js';
import { el, ago, table, setQuery, field } from '../ui.js';

const brief = (o) => (o ? JSON.stringify(o).slice(0, 160) : '');

export default async function audit({ r, signal, rerender }) {
  const q = r.q;
  const p = new URLSearchParams({ limit: '500' });
  for (const k of ['actor', 'action', 'target']) if (q.get(k)) p.set(k, q.get(k));
  const { entries = [] } = await get(`/v1/audit?${p}`, { signal });
  const form = el('form', { class: 'filters', 'aria-label': 'Filters' },
    ['actor', 'action', 'target'].map((k) => field(k[0].toUpperCase() + k.slice(1),
      el('input', { name: k, id: `audit-${k}`, value: q.get(k) || '' }))),
    el('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = Object.fromEntries(new FormData(form).entries());
    setQuery({ ...Object.fromEntries(q), ...v });
    rerender();
  });
  const cols = [
    { key: 'id', label: '#' },
    { key: 'time_ms', label: 'When', cell: (e) => ago(e.time_ms) },
    { key: 'actor', label: 'Actor' }, { key: 'action', label: 'Action' }, { key: 'target', label: 'Target' },
    { key: 'reason', label: 'Reason' },
    { key: 'change', label: 'Change', nosort: true, cell: (e) => el('code', {}, `${brief(e.before)} → ${brief(e.after)}`) },
  ];
  return el('div', {}, el('h1', {}, 'Audit'), form,
    table(cols, entries, { q: q.get('sort') ? q : new URLSearchParams({ sort: 'id', dir: 'desc' }), caption: 'Audit trail (newest 500 matching)',
      onSort: (k, d) => { setQuery({ ...Object.fromEntries(q), sort: k, dir: d }); rerender(); } }));
}
