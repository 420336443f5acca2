// first_paint.mjs - the console's first meaningful paint: headless chromium opens a page
// of the console logged in (the token set before the page loads), RUNS times per page on
// a fresh browser context (no cache), and reads from navigation start: the app's
// 'docket:first-screen' mark (its first render from live API data), and when that render
// reached the screen (Element Timing's renderTime of the heading main.js marks with
// elementtiming="docket-first-screen", drawn in the same frame as the data). Then, on the
// last run of each page, the longest main-thread task (Long Tasks API, over 50 ms) while
// the page reads and draws everything again (a forced refresh, as a change notice
// brings). Prints one line per page: medians and maxima in ms.
// usage: node first_paint.mjs URL TOKEN RUNS PAGE...   (PAGE: overview, queue, ...)
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(fileURLToPath(new URL('../../console/package.json', import.meta.url)));
const { chromium } = require('playwright-core');
const [url, token, runs, ...pages] = process.argv.slice(2);

// Installed before the page's own scripts: the paint of the marked heading and every
// long task, kept on window for the reads below.
function observe() {
  window.benchPaint = null;
  window.benchLong = [];
  new PerformanceObserver((l) => {
    for (const e of l.getEntries()) if (e.identifier === 'docket-first-screen') window.benchPaint = e.renderTime || e.loadTime;
  }).observe({ type: 'element', buffered: true });
  new PerformanceObserver((l) => { for (const e of l.getEntries()) window.benchLong.push([e.startTime, e.duration]); })
    .observe({ type: 'longtask', buffered: true });
}

const mid = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const max = (a) => Math.max(...a);
const f = (v) => (v == null ? '—' : v.toFixed(1));

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium' });
for (const p of pages) {
  const mark = [], paint = [];
  let refreshLong = null;
  for (let i = 0; i < Number(runs); i++) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await ctx.addInitScript((t) => sessionStorage.setItem('docket.token', t), token);
    await ctx.addInitScript(observe);
    const page = await ctx.newPage();
    await page.goto(`${url}/#/${p}`);
    const t = await page.waitForFunction(() => {
      const e = performance.getEntriesByName('docket:first-screen')[0];
      return e && window.benchPaint ? [e.startTime, window.benchPaint] : null;
    }, null, { timeout: 60000 }).then((h) => h.jsonValue());
    mark.push(t[0]);
    paint.push(t[1]);
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
}
await browser.close();
