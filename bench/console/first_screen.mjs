// first_screen.mjs - how long the console's first screen takes: headless chromium opens
// a page of the console logged in (the token set before the page loads), and the time
// from navigation start to the page's 'docket:first-screen' mark (its first render from
// live API data) is read, RUNS times per page on a fresh browser context each time (no
// cache). Prints one line per page: median and max in ms, and the median time to
// DOMContentLoaded (the page and its script loaded, before any API call) for scale. Run by bench/console/run.sh.
// usage: node first_screen.mjs URL TOKEN RUNS PAGE...   (PAGE: overview, queue, ...)
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(fileURLToPath(new URL('../../console/package.json', import.meta.url)));
const { chromium } = require('playwright-core');
const [url, token, runs, ...pages] = process.argv.slice(2);

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium' });
for (const p of pages) {
  const ms = [], dcl = [];
  for (let i = 0; i < Number(runs); i++) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await ctx.addInitScript((t) => sessionStorage.setItem('docket.token', t), token);
    const page = await ctx.newPage();
    await page.goto(`${url}/#/${p}`);
    const t = await page.waitForFunction(() => {
      const e = performance.getEntriesByName('docket:first-screen')[0];
      const n = performance.getEntriesByType('navigation')[0];
      return e ? [e.startTime, n.domContentLoadedEventEnd] : null;
    }, null, { timeout: 60000 }).then((h) => h.jsonValue());
    ms.push(t[0]);
    dcl.push(t[1]);
    await ctx.close();
  }
  ms.sort((a, b) => a - b);
  dcl.sort((a, b) => a - b);
  const mid = (a) => a[Math.floor(a.length / 2)].toFixed(1);
  console.log(`console_first_screen page=${p.padEnd(9)} runs=${runs} median=${mid(ms)} ms  max=${ms[ms.length - 1].toFixed(1)} ms  (page loaded, scripts run: median ${mid(dcl)} ms)`);
}
await browser.close();
