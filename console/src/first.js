// first.js - what the first screen of a page reads, as paths: shared by the pages
// (overview.js, queue.js) and by boot.js, the small script inlined in index.html that
// sends these reads before app.js has even arrived (issue 40). No DOM, no imports: it is
// built twice, into app.js and into the page.

// the Overview's running jobs: what its charts and waits read of each job
export const CHART_FIELDS = 'id,tier,gpus,submit_ms,start_ms,end_ms';
export const OVERVIEW_READS = ['/v1/nodes', '/metrics',
  `/v1/jobs?state=STARTING,RUNNING,STOPPING&limit=10000&fields=${CHART_FIELDS}`, '/v1/alerts', '/v1/tiers'];

// the Queue: the rows' fields (command only for the search), the states of its choices
export const QUEUE_PAGE = 50;
export const QUEUE_FIELDS = 'id,name,project,user,tier,class,state,reason,gpus,gpu_type,submit_ms,start_ms,end_ms,command';
export const QUEUE_STATES = { waiting: 'PENDING,HELD', running: 'STARTING,RUNNING,STOPPING', finished: 'terminal', all: 'all' };

// The list's query for the queue's filters q (URLSearchParams of the route).
export function queueParams(q) {
  const state = q.get('state') || 'waiting';
  const params = new URLSearchParams({ state: QUEUE_STATES[state] || state, fields: QUEUE_FIELDS });
  if (state !== 'waiting' && state !== 'running') params.set('order', 'desc'); // newest first
  for (const f of ['project', 'user', 'tier', 'class']) if (q.get(f)) params.set(f, q.get(f));
  return params;
}

// The queue's first screen: one page of QUEUE_PAGE rows.
export const queueFirst = (params) => `/v1/jobs?${params}&limit=${QUEUE_PAGE}`;

// The reads of the first screen of the page at `hash` (#/queue?project=x), none for a
// page whose reads depend on the viewer (they wait for GET /v1/whoami).
export function firstReads(hash) {
  const [path, qs] = hash.replace(/^#\/?/, '').split('?');
  const page = path.split('/')[0] || 'overview';
  if (page === 'overview') return OVERVIEW_READS;
  if (page === 'queue') return [queueFirst(queueParams(new URLSearchParams(qs || '')))];
  return [];
}
