// first_paint.mjs - the console's first meaningful paint: headless chromium opens a page
// of the console logged in (the token set before the page loads), RUNS times per page on
// a fresh browser context (no cache), and reads from navigation start: the app's
// 'docket:first-screen' mark (its first render from live API data), and when that render
// reached the screen (Element Timing's renderTime of the heading main.js marks with
// elementtiming="docket-first-screen", drawn in the same frame as the data). Then, on the
// last run of each page, the longest main-thread task (Long Tasks API, over 50 ms) while
// the page reads and draws everything again (a forced refresh, as a change notice
// brings). Prints one line per page: medians and maxima in ms. With RELOAD=1, each run
// then loads the page again in the same tab and reports, from that second navigation, the
// paint of the first screen saved in the tab (marked docket-saved-screen) and of the live
// one. API_DELAY_MS=N holds each API reply N ms in the browser (a docketd further away
// than loopback; the change stream is held too, and only its start).
// usage: node first_paint.mjs URL TOKEN RUNS PAGE...   (PAGE: overview, queue, ...)
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(fileURLToPath(new URL('../../console/package.json', import.meta.url)));
const { chromium } = require('playwright-core');
const [url, token, runs, ...pages] = process.argv.slice(2);

// Installed before the page's own scripts: the paint of the marked heading and every
// long task, kept on window for the reads below; the paint is handed to benchDone (a
// binding to this script), so that nothing of the bench runs in the page while it loads
// (playwright's waitForFunction polled in it every frame and compiled its own 80 ms
// script there before the paint it measured).
function observe() {
  window.benchPaint = null;
  window.benchLong = [];
  window.benchSaved = null;
  new PerformanceObserver((l) => {
    for (const e of l.getEntries()) {
      if (e.identifier === 'docket-saved-screen') window.benchSaved = e.renderTime || e.loadTime;
      if (e.identifier !== 'docket-first-screen') continue;
      window.benchPaint = e.renderTime || e.loadTime;
      const m = performance.getEntriesByName('docket:first-screen')[0];
      window.benchDone([m ? m.startTime : null, window.benchPaint, window.benchSaved]);
    }
  }).observe({ type: 'element', buffered: true });
  new PerformanceObserver((l) => { for (const e of l.getEntries()) window.benchLong.push([e.startTime, e.duration]); })
    .observe({ type: 'longtask', buffered: true });
}

const mid = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const max = (a) => Math.max(...a);
const f = (v) => (v == null ? '—' : v.toFixed(1));

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium' });
for (const p of pages) {
  const mark = [], paint = [], reload = [];
  let refreshLong = null;
  for (let i = 0; i < Number(runs); i++) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await ctx.addInitScript((t) => sessionStorage.setItem('docket.token', t), token);
    await ctx.addInitScript(observe);
    let done;
    const paintOf = () => new Promise((ok, fail) => { done = ok; setTimeout(() => fail(new Error(`${p}: no paint in 60 s`)), 60000); });
    let painted = paintOf();
    await ctx.exposeFunction('benchDone', (v) => done(v));
    const page = await ctx.newPage();
    if (Number(process.env.API_DELAY_MS)) // a docketd further away: each API reply that much later
      await page.route((u) => u.pathname.startsWith('/v1/') || u.pathname === '/metrics', async (r) => {
        await new Promise((ok) => setTimeout(ok, Number(process.env.API_DELAY_MS)));
        await r.continue().catch(() => {});
      });
    await page.goto(`${url}/#/${p}`, { waitUntil: 'commit' });
    const t = await painted;
    if (process.env.RELOAD) { // the same page loaded again in this tab: its saved first screen, then the live one
      await page.waitForTimeout(1500); // (what the first screen started behind it settles)
      painted = paintOf();
      await page.reload({ waitUntil: 'commit' });
      const w = await painted;
      reload.push(w);
    }
    mark.push(t[0]);
    paint.push(t[1]);
    if (process.env.BREAKDOWN) { // where the time went (Navigation and Resource Timing, long tasks)
      const b = await page.evaluate(([m, pt]) => {
        const nav = performance.getEntriesByType('navigation')[0];
        const res = performance.getEntriesByType('resource').filter((e) => e.startTime < pt)
          .map((e) => ({ n: e.name.replace(location.origin, ''), s: e.startTime, rs: e.responseStart, e: e.responseEnd,
            tx: e.transferSize, enc: e.encodedBodySize, dec: e.decodedBodySize }));
        const lt = window.benchLong.filter(([s]) => s < pt);
        return { doc: [nav.responseStart, nav.responseEnd, nav.transferSize], dcl: nav.domContentLoadedEventEnd,
          res, long: lt, m, pt };
      }, t);
      const r = (v) => Math.round(v);
      console.log(`  ${p} run ${i + 1}: document ${r(b.doc[0])}-${r(b.doc[1])} ms (${b.doc[2]} B)  DOMContentLoaded ${r(b.dcl)}` +
        `  mark ${r(b.m)}  paint ${r(b.pt)}  long tasks before paint: ${b.long.map(([s, d]) => `${r(s)}+${r(d)}`).join(' ') || 'none'}`);
      for (const e of b.res) console.log(`    ${e.n.slice(0, 90).padEnd(90)} ${r(e.s)}→${r(e.rs)}→${r(e.e)} ms  ${e.tx} B sent (${e.enc} encoded, ${e.dec} decoded)`);
    }
    if (i === Number(runs) - 1) { // a refresh: the same route again reads and draws it all
      await page.waitForTimeout(2000); // what the first screen started behind it settles
      const t0 = await page.evaluate(() => performance.now());
      await page.evaluate(() => window.dispatchEvent(new HashChangeEvent('hashchange')));
      await page.waitForTimeout(3000);
      refreshLong = await page.evaluate((from) => Math.max(0, ...window.benchLong.filter(([s]) => s >= from).map(([, d]) => d)), t0);
    }
    await ctx.close();
  }
  console.log(`console_first_paint page=${p.padEnd(9)} runs=${runs} paint median=${f(mid(paint))} ms max=${f(max(paint))} ms` +
    `  (app mark median=${f(mid(mark))} ms)  longest task in a refresh=${refreshLong ? f(refreshLong) : '<50'} ms`);
  if (reload.length) {
    const sv = reload.map((x) => x[2]).filter((x) => x != null);
    console.log(`console_reload_paint page=${p.padEnd(9)} runs=${runs} saved screen median=${sv.length ? f(mid(sv)) : '—'} ms` +
      ` (drawn in ${sv.length} of ${reload.length})  live paint median=${f(mid(reload.map((x) => x[1])))} ms`);
  }
}
await browser.close();
