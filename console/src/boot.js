// boot.js - inlined in index.html (build.mjs), run while the page is parsed: with a token
// in this tab it sends GET /v1/whoami and the first screen's reads (first.js) at once,
// before app.js has arrived, parsed and run, which took the first screen 30 to 150 ms
// (issue 40). api.js takes each reply for the same path and token; a read nobody takes
// costs one small reply. docketd allows this one script by its hash in its CSP
// (src/controller/console.c).
import { firstReads } from './first.js';

const token = sessionStorage.getItem('docket.token');
if (token) {
  const boot = { token, hash: location.hash, reads: new Map(), waiting: 0 }; // waiting: replies not yet in
  for (const p of ['/v1/whoami', ...firstReads(location.hash)]) {
    const res = fetch(p, { headers: { Authorization: `Bearer ${token}` }, cache: 'no-store' });
    boot.waiting++;
    res.then(() => boot.waiting--, () => boot.waiting--); // (and a read nobody takes fails unheard)
    boot.reads.set(p, res);
  }
  window.docketBoot = boot;
}
