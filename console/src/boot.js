// boot.js - inlined in index.html (build.mjs), run while the page is parsed: with a token
// in this tab it sends GET /v1/whoami and the first screen's reads (first.js) at once,
// before app.js has arrived, parsed and run, which took the first screen 30 to 150 ms
// (issue 40). api.js takes each reply for the same path and token; a read nobody takes
// costs one small reply. docketd allows this one script by its hash in its CSP
// (src/controller/console.c).
import { firstReads } from './first.js';

const token = sessionStorage.getItem('docket.token');
if (token) {
  const reads = new Map();
  for (const p of ['/v1/whoami', ...firstReads(location.hash)]) {
    const res = fetch(p, { headers: { Authorization: `Bearer ${token}` }, cache: 'no-store' });
    res.catch(() => {}); // (a read nobody takes may fail unheard; the one who takes it hears)
    reads.set(p, res);
  }
  window.docketBoot = { token, reads };
}
