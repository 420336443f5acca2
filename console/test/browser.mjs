// browser.mjs - the console's browser tests: headless Debian chromium driven by
// playwright-core against a real docketd and agents (tests/system/console.bats starts
// them and runs one case per @test). usage: node test/browser.mjs CASE [ARGS...]
// Env: CONSOLE_URL (docketd over TCP), CONSOLE_TOKENS (JSON file: role -> {user, token}),
// CONSOLE_OUT (where screenshots go). Exit 0 when the case holds; else the reason.
import { chromium } from 'playwright-core';
import { readFileSync, mkdirSync } from 'node:fs';
import { createHash } from 'node:crypto';

const BASE = process.env.CONSOLE_URL;
const OUT = process.env.CONSOLE_OUT || '.';
const TOKENS = process.env.CONSOLE_TOKENS ? JSON.parse(readFileSync(process.env.CONSOLE_TOKENS, 'utf8')) : {};
const WAIT = 20000; // how long a page may take to show what is awaited (no timing is asserted)

function expect(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function api(method, path, role, body) {
  const res = await fetch(BASE + path, {
    method, headers: { Authorization: `Bearer ${TOKENS[role].token}`, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

let browser;
const problems = []; // page errors and CSP violations, any page

async function newPage() {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/.test(m.text())) problems.push(`CSP: ${m.text()}`);
  });
  return page;
}

async function login(role, page) {
  page = page || await newPage();
  await page.goto(`${BASE}/`);
  await page.getByLabel('API token').fill(TOKENS[role].token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.locator('#who', { hasText: TOKENS[role].user }).waitFor({ timeout: WAIT });
  return page;
}

async function go(page, hash) {
  await page.goto(`${BASE}/${hash}`);
  await page.locator('#main h1').first().waitFor({ timeout: WAIT });
}

const cases = {
  // The page: CSP and the other headers, no inline script but boot.js's, allowed by its
  // hash, token only in sessionStorage.
  async security() {
    const res = await fetch(`${BASE}/`);
    const csp = res.headers.get('content-security-policy') || '';
    expect(/script-src 'self'/.test(csp) && !/unsafe-inline|unsafe-eval/.test(csp), `bad CSP: ${csp}`);
    expect(/frame-ancestors 'none'/.test(csp), 'framing allowed');
    expect(res.headers.get('x-content-type-options') === 'nosniff', 'no nosniff');
    const html = await res.text();
    expect(!/\son[a-z]+=/.test(html), 'an inline event handler in the page');
    const inline = [...html.matchAll(/<script(?![^>]*\bsrc=)([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(inline.length === 1 && inline[0][1] === '', `inline scripts: ${inline.map((m) => m[0].slice(0, 40))}`);
    const allowed = [...csp.matchAll(/'sha256-([^']+)'/g)].map((m) => m[1]);
    const hash = createHash('sha256').update(inline[0][2]).digest('base64');
    expect(allowed.length === 1 && allowed[0] === hash, `boot.js's hash ${hash} is not the one the CSP allows: ${csp}`);
    const js = await fetch(`${BASE}/console/app.js`);
    expect(!/sha256-/.test(js.headers.get('content-security-policy') || ''), 'a file allowed an inline script');
    const page = await login('admin');
    const where = await page.evaluate(() => ({ cookie: document.cookie, local: localStorage.length,
      session: sessionStorage.getItem('docket.token') }));
    expect(where.cookie === '' && where.local === 0, 'the token left sessionStorage');
    expect(where.session === TOKENS.admin.token, 'the token is not in sessionStorage');
    const bad = await newPage();
    await bad.goto(`${BASE}/`);
    await bad.getByLabel('API token').fill('dkt_not_a_token_at_all');
    await bad.getByRole('button', { name: 'Log in' }).click();
    await bad.locator('.login .err').waitFor({ timeout: WAIT });
  },

  // Each role logs in, sees its name and role, and only the pages it may read.
  async login(role) {
    const page = await login(role);
    const who = await page.locator('#who').innerText();
    const { body } = await api('GET', '/v1/whoami', role);
    expect(who.includes(`${body.user} · ${body.role}`), `#who says '${who}'`);
    const audit = await page.locator('#nav a', { hasText: 'Audit' }).count();
    expect(audit === (['viewer', 'operator', 'admin'].includes(body.role) ? 1 : 0), `Audit link count ${audit} for ${role}`);
    for (const p of ['overview', 'queue', 'nodes', 'projects', 'forecast']) await go(page, `#/${p}`);
    // the alerts panel is there exactly when docketd has GET /v1/alerts
    await go(page, '#/overview');
    await page.locator('#status', { hasText: 'Updated' }).waitFor({ timeout: WAIT });
    const alerts = await api('GET', '/v1/alerts', role);
    const panel = await page.locator('#alerts-h').count();
    expect(panel === (alerts.status === 200 ? 1 : 0), `alerts panel ${panel} with GET /v1/alerts ${alerts.status}`);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('API token').waitFor({ timeout: WAIT });
  },

  // The one-time code: logs in once, as the user who asked for it; a second use fails.
  async code(link) {
    const page = await newPage();
    await page.goto(link);
    await page.locator('#who', { hasText: TOKENS.member.user }).waitFor({ timeout: WAIT });
    expect(!page.url().includes('code='), 'the code stayed in the address bar');
    const again = await newPage();
    await again.goto(link);
    await again.locator('.login .err', { hasText: 'unknown, used or expired' }).waitFor({ timeout: WAIT });
  },

  // The queue shows the job with its reason and sentence; filters are in the URL; a
  // click opens the job with its explanation.
  async queue(id) {
    const page = await login('member');
    await go(page, '#/queue');
    const row = page.locator(`tr[data-job="${id}"]`);
    await row.waitFor({ timeout: WAIT });
    const { body } = await api('GET', `/v1/jobs/${id}/explain`, 'member');
    const x = body.explain;
    await row.locator('.sentence', { hasText: x.sentence.slice(0, 30) }).waitFor({ timeout: WAIT });
    expect((await row.innerText()).includes(x.reason), `row lacks reason ${x.reason}`);
    await page.getByLabel('Project').selectOption('explore');
    await page.waitForURL(/project=explore/, { timeout: WAIT });
    await row.waitFor({ timeout: WAIT });
    await go(page, '#/queue?tier=critical');
    await page.locator('td', { hasText: 'No job is waiting.' }).waitFor({ timeout: WAIT });
    await go(page, '#/queue?sort=id&dir=desc');
    await row.locator('a').click();
    await page.waitForURL(new RegExp(`#/job/${id}`), { timeout: WAIT });
    await page.locator('.explain .sentence', { hasText: x.sentence.slice(0, 30) }).waitFor({ timeout: WAIT });
  },

  // A job's command is private to its owner, its project's leads and admins (issue 33
  // #6): a viewer and the lead of another project see it hidden on the job's page, the
  // queue's search does not find it by its command, and no page they load holds it; its
  // owner sees it.
  async hidden(id, secret) {
    const owner = await login('member');
    await go(owner, `#/job/${id}`);
    await owner.locator('dd', { hasText: secret }).waitFor({ timeout: WAIT });
    for (const role of ['viewer', 'lead']) {
      const page = await login(role);
      await go(page, `#/job/${id}`);
      await page.locator('dd', { hasText: 'hidden: its owner' }).waitFor({ timeout: WAIT });
      expect(!(await page.content()).includes(secret), `${role} sees the command on the job's page`);
      await go(page, '#/queue?state=all');
      await page.locator(`tr[data-job="${id}"]`).waitFor({ timeout: WAIT });
      expect(!(await page.content()).includes(secret), `${role} sees the command in the queue`);
      // the same document (a hash change): the list read before, and its "Updated", stay
      // until the search's answer is drawn, so wait for the row to go (it stays, and the
      // wait fails, when the search finds the job)
      await go(page, `#/queue?state=all&search=${secret}`);
      await page.locator('#status', { hasText: 'Updated' }).waitFor({ timeout: WAIT });
      const gone = await page.locator(`tr[data-job="${id}"]`).waitFor({ state: 'detached', timeout: WAIT })
        .then(() => true, () => false);
      expect(gone, `${role} finds the job by its hidden command`);
    }
  },

  // A job's owner holds and releases it from its page; a viewer is offered no action.
  async actions(id) {
    const page = await login('member');
    await go(page, `#/job/${id}`);
    await page.getByRole('button', { name: 'Hold', exact: true }).click();
    await page.locator('h1 .badge', { hasText: 'HELD' }).waitFor({ timeout: WAIT });
    await page.getByRole('button', { name: 'Release', exact: true }).click();
    await page.locator('h1 .badge', { hasText: 'PENDING' }).waitFor({ timeout: WAIT });
    const viewer = await login('viewer');
    await go(viewer, `#/job/${id}`);
    await viewer.locator('p', { hasText: 'You may not act on this job.' }).waitFor({ timeout: WAIT });
    expect(await viewer.getByRole('button', { name: 'Cancel', exact: true }).count() === 0, 'a viewer is offered Cancel');
  },

  // Every page: each control has a label, each table a caption, the first Tab reaches
  // the skip link, and the navigation works from the keyboard alone.
  async a11y(id) {
    const page = await login('admin');
    for (const hash of ['#/overview', '#/queue', `#/job/${id}`, '#/nodes', '#/projects?project=vision', '#/forecast', '#/audit']) {
      await go(page, hash);
      await page.locator('#status', { hasText: 'Updated' }).waitFor({ timeout: WAIT });
      const bad = await page.evaluate(() => [
        ...[...document.querySelectorAll('input, select, textarea')].filter((e) => !e.labels.length && !e.getAttribute('aria-label'))
          .map((e) => `unlabelled ${e.tagName} ${e.name}`),
        ...[...document.querySelectorAll('table')].filter((t) => !t.caption).map(() => 'a table without a caption'),
        ...[...document.querySelectorAll('button')].filter((b) => !b.textContent.trim()).map(() => 'a button without text'),
      ]);
      expect(bad.length === 0, `${hash}: ${bad.join(', ')}`);
    }
    await go(page, '#/overview');
    await page.reload(); // a fresh load: the sequential focus starts at the top
    await page.locator('#main h1').first().waitFor({ timeout: WAIT });
    await page.keyboard.press('Tab');
    const first = await page.evaluate(() => `${document.activeElement.tagName}.${document.activeElement.className}`);
    expect(first === 'A.skip', `the first Tab reaches ${first}, not the skip link`);
    let reached = false;
    for (let i = 0; i < 6 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.activeElement.textContent === 'Nodes');
    }
    expect(reached, 'Tab does not reach the Nodes link');
    await page.keyboard.press('Enter');
    await page.locator('#main h1', { hasText: 'Nodes' }).waitFor({ timeout: WAIT });
  },

  // A job's logs follow while the page is open.
  async logs(id) {
    const page = await login('admin');
    await go(page, `#/job/${id}`);
    await page.locator('pre.logs', { hasText: 'line 3' }).waitFor({ timeout: WAIT });
    await page.locator('pre.logs[data-eof="1"]').waitFor({ timeout: WAIT });
  },

  // What matters first: a critical alert heads the Overview however many job failures
  // fire, and the failures are one line with a link per project.
  async overview(failures) {
    const page = await login('admin');
    await go(page, '#/overview');
    const items = page.locator('ul.alerts > li.firing');
    await page.locator('ul.alerts > li.sev-critical').first().waitFor({ timeout: WAIT });
    const failed = page.locator('ul.alerts > li.firing', { hasText: 'job-failed' });
    for (const p of ['vision', 'explore']) await failed.locator('a', { hasText: p }).waitFor({ timeout: WAIT });
    const first = await items.first().getAttribute('class');
    expect(first.includes('sev-critical'), `the first alert line is '${first}', not a critical one`);
    const lines = await items.count();
    expect(lines < Number(failures), `${lines} lines for ${failures} failures: not folded`);
    expect(await failed.count() === 1, 'the job failures are not one line');
    await failed.locator('a', { hasText: 'vision' }).click();
    await page.waitForURL(/#\/queue\?.*project=vision/, { timeout: WAIT });
    await page.locator('tr[data-job] .badge', { hasText: 'FAILED' }).first().waitFor({ timeout: WAIT });
  },

  // Jobs in every state: the search finds a running and a finished job by name.
  async search(running, done) {
    const page = await login('admin');
    await go(page, '#/queue?state=all');
    await page.getByLabel('Search').fill('findme');
    await page.getByLabel('Search').press('Enter');
    await page.waitForURL(/search=findme/, { timeout: WAIT });
    await page.locator(`tr[data-job="${running}"]`).waitFor({ timeout: WAIT });
    await page.locator(`tr[data-job="${done}"]`).waitFor({ timeout: WAIT });
    expect(await page.locator('tr[data-job]').count() === 2, 'the search shows other jobs');
    await go(page, '#/queue?state=running&user=root');
    await page.locator(`tr[data-job="${running}"]`).waitFor({ timeout: WAIT });
  },

  // The log viewer: a reader who scrolled up stays there through refreshes; at the end it
  // follows; Find lists the lines that match.
  async logview(id) {
    const page = await login('admin');
    await go(page, `#/job/${id}`);
    const pre = page.locator('pre.logs[data-keep-scroll]');
    await pre.filter({ hasText: 'line 150' }).waitFor({ timeout: WAIT });
    await pre.evaluate((e) => { e.scrollTop = 40; });
    await page.waitForTimeout(6500); // past a refresh (5 s) and more output
    const top = await pre.evaluate((e) => e.scrollTop);
    expect(top === 40, `the log moved to ${top} under the reader`);
    await pre.evaluate((e) => { e.scrollTop = e.scrollHeight; });
    const lines = async () => (await pre.innerText()).split('\n').length;
    const before = await lines();
    await page.waitForFunction((n) => document.querySelector('pre.logs[data-keep-scroll]').innerText.split('\n').length > n + 20,
      before, { timeout: WAIT });
    await page.waitForTimeout(5500); // and a refresh
    const atEnd = await pre.evaluate((e) => e.scrollTop + e.clientHeight >= e.scrollHeight - 4);
    expect(atEnd, 'the log stopped following its end');
    await page.getByLabel('Find in the log').fill('line 7');
    await page.locator('pre.hits', { hasText: 'line 70' }).waitFor({ timeout: WAIT });
    const [file] = await Promise.all([page.waitForEvent('download', { timeout: WAIT }),
      page.getByRole('button', { name: 'Download' }).click()]);
    const text = readFileSync(await file.path(), 'utf8');
    expect(/^line 1\nline 2\n/.test(text) && text.includes('line 150\n'), `the download holds '${text.slice(0, 40)}...'`);
    expect(file.suggestedFilename() === `job-${id}-run1.stdout.log`, `file name ${file.suggestedFilename()}`);
  },

  // A running job's page draws its use over time from its samples.
  async usage(id) {
    const page = await login('admin');
    await go(page, `#/job/${id}`);
    await page.locator('#use-h').waitFor({ timeout: WAIT });
    const cpu = page.locator('[aria-label="CPU cores over time"]');
    await cpu.locator('canvas').waitFor({ timeout: WAIT });
    await page.waitForTimeout(5500); // a refresh keeps the charts
    expect(await cpu.locator('canvas').count() === 1, 'the CPU chart is gone after a refresh');
  },

  // Cancel asks first; "No" keeps the job; "Yes" with a reason cancels it and the reason
  // is in the audit trail.
  async confirm(id) {
    const page = await login('member');
    await go(page, `#/job/${id}`);
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await page.getByRole('alertdialog').waitFor({ timeout: WAIT });
    await page.waitForTimeout(5500); // the question survives a refresh
    await page.getByRole('button', { name: 'No, keep it' }).click();
    let { body } = await api('GET', `/v1/jobs/${id}`, 'admin');
    expect(body.job.state === 'HELD', `the job is ${body.job.state} after "No"`);
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await page.getByLabel('Reason').fill('wrong dataset');
    await page.getByRole('button', { name: 'Yes, cancel' }).click();
    await page.locator('h1 .badge', { hasText: 'CANCELLED' }).waitFor({ timeout: WAIT });
    ({ body } = await api('GET', '/v1/audit?action=job.cancel', 'admin'));
    expect(JSON.stringify(body).includes('wrong dataset'), 'the reason is not in the audit trail');
  },

  // A member is offered no drain and refused by the API; an operator drains and resumes.
  async drain(node) {
    const mem = await login('member');
    await go(mem, `#/nodes?node=${node}`);
    await mem.locator(`#node-${node}`).waitFor({ timeout: WAIT });
    expect(await mem.locator('form[aria-label^="Drain"]').count() === 0, 'a member is offered Drain');
    const status = await mem.evaluate(async (n) => (await fetch(`/v1/nodes/${n}/drain`, { method: 'POST',
      headers: { Authorization: `Bearer ${sessionStorage.getItem('docket.token')}`, 'Content-Type': 'application/json' },
      body: '{"reason":"x"}' })).status, node);
    expect(status === 403, `a member's drain got ${status}`);
    const op = await login('operator');
    await go(op, `#/nodes?node=${node}`);
    const card = op.locator(`#node-${node}`);
    await card.getByLabel('Reason').fill('console test');
    await card.getByRole('button', { name: 'Drain' }).click();
    await card.locator('.badge', { hasText: /DRAIN/ }).waitFor({ timeout: WAIT });
    await card.getByRole('button', { name: `Resume ${node}` }).click();
    await card.locator('.badge', { hasText: 'UP' }).waitFor({ timeout: WAIT });
  },

  // A change appears without a reload, by the change stream: with the stream up a
  // watched page's timer waits 30 s, longer than WAIT, so only a notice can bring the
  // drain (made through the API, not this page) and the resume to the screen in time.
  async live(node) {
    const page = await login('viewer');
    await go(page, `#/nodes?node=${node}`);
    const card = page.locator(`#node-${node}`);
    await card.locator('.badge', { hasText: 'UP' }).waitFor({ timeout: WAIT });
    await page.waitForFunction(() => performance.getEntriesByName('docket:ready').length > 0, null, { timeout: WAIT });
    await page.evaluate(() => { window.docketSameDocument = true; });
    const d = await api('POST', `/v1/nodes/${node}/drain`, 'operator', { reason: 'live test' });
    expect(d.status === 200, `drain: ${d.status}`);
    await card.locator('.badge', { hasText: /DRAIN/ }).waitFor({ timeout: WAIT });
    const r = await api('POST', `/v1/nodes/${node}/resume`, 'operator', {});
    expect(r.status === 200, `resume: ${r.status}`);
    await card.locator('.badge', { hasText: 'UP' }).waitFor({ timeout: WAIT });
    const seen = await page.evaluate(() => ({ same: window.docketSameDocument === true,
      changed: performance.getEntriesByName('docket:changed').length }));
    expect(seen.same, 'the page was reloaded');
    expect(seen.changed > 0, 'no change notice arrived');
  },

  // A project's page draws its GPU use over 30 days against its limit, and says the same
  // in words as the API's series.
  async projectUse(project) {
    const page = await login('member');
    await go(page, `#/projects?project=${project}`);
    const fig = page.locator('#project-use');
    await fig.waitFor({ timeout: WAIT });
    const { body } = await api('GET', `/v1/projects/${project}/usage?days=30`, 'member');
    expect(Math.max(0, ...body.gpus) > 0, `the API says ${project} used no GPU`);
    const words = await fig.locator('.use-words').innerText();
    const peak = /peak ([0-9.]+)/.exec(words);
    expect(peak && Number(peak[1]) > 0 && words.includes(`limit ${body.gpu_limit < 0 ? '∞' : body.gpu_limit}`),
      `the chart says '${words}'`);
    await fig.locator('canvas').first().waitFor({ timeout: WAIT });
  },

  // An admin boosts a project with a reason and an expiry; a member is offered no boost.
  async boost(project) {
    const mem = await login('member');
    await go(mem, `#/projects?project=${project}`);
    await mem.locator('#pd-h').waitFor({ timeout: WAIT });
    expect(await mem.locator('form[aria-label="Boost"]').count() === 0, 'a member is offered Boost');
    const page = await login('admin');
    await go(page, `#/projects?project=${project}`);
    await page.getByLabel('Reason').fill('paper deadline');
    await page.getByLabel('For').fill('2h');
    await page.locator('form[aria-label="Boost"]').getByRole('button', { name: 'Boost' }).click();
    await page.locator('p', { hasText: 'Boosted 1 level(s)' }).waitFor({ timeout: WAIT });
    const { body } = await api('GET', `/v1/projects/${project}`, 'admin');
    expect(body.project.boost && body.project.boost.reason === 'paper deadline', 'boost not stored');
    await go(page, `#/audit?action=project.boost`);
    await page.locator('td', { hasText: 'paper deadline' }).waitFor({ timeout: WAIT });
  },

  // A screenshot of every page, for the test output (and README's two).
  async screens(id) {
    mkdirSync(OUT, { recursive: true });
    const first = await newPage();
    await first.goto(`${BASE}/`);
    await first.getByLabel('API token').waitFor({ timeout: WAIT });
    await first.screenshot({ path: `${OUT}/console-login.png` });
    const page = await login('admin');
    for (const [name, hash] of [['overview', '#/overview'], ['queue', '#/queue'], ['job', `#/job/${id}`],
      ['nodes', '#/nodes'], ['projects', '#/projects?project=vision'], ['forecast', '#/forecast'], ['audit', '#/audit']]) {
      await go(page, hash);
      await page.locator('#status', { hasText: 'Updated' }).waitFor({ timeout: WAIT });
      if (name === 'queue' && await page.locator('tr[data-job]').count()) // sentences: 2nd render
        await page.locator('.sentence', { hasText: /\w/ }).first().waitFor({ timeout: WAIT });
      await page.waitForTimeout(300); // charts draw on the next frame
      await page.screenshot({ path: `${OUT}/console-${name}.png`, fullPage: true });
    }
  },

  // The first screen saved in the tab (issue 40): drawn at once on a reload, marked as
  // saved with its time, replaced by the live one (with a job submitted since); never
  // shown to another viewer: not after a log out and in, not under another token.
  async saved(id) {
    const Q = `#/queue?user=${TOKENS.member.user}`; // (her jobs: a page of 50 holds them)
    const page = await login('member');
    await go(page, Q);
    await page.locator(`tr[data-job="${id}"]`).waitFor({ timeout: WAIT });
    await page.waitForFunction(() => sessionStorage.getItem('docket.screen.queue'), null, { timeout: WAIT });
    // away from the queue (which saves its first page again on every read of it), then a job
    await go(page, '#/nodes');
    await page.locator('#main h1', { hasText: 'Nodes' }).waitFor({ timeout: WAIT });
    const { body } = await api('POST', '/v1/jobs', 'member', { project: 'explore', hold: true, command: ['true'] });
    const fresh = body.job.id;
    // the queue's first page held back until `open()`: what is drawn before it comes is saved
    let open;
    const gate = () => { const g = new Promise((ok) => { open = ok; }); return g; };
    let held = gate();
    await page.route((u) => u.pathname === '/v1/jobs' && u.searchParams.get('limit') === '50',
      async (route) => { await held; await route.continue(); });
    await page.goto('about:blank'); // (this tab's sessionStorage stays)
    await page.goto(`${BASE}/${Q}`);
    const note = page.locator('.saved-note');
    await note.waitFor({ timeout: WAIT });
    expect(/Saved in this tab at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d, not live/.test(await note.innerText()), `note: ${await note.innerText()}`);
    await page.locator('#status', { hasText: 'As of' }).waitFor({ timeout: WAIT });
    await page.locator(`tr[data-job="${id}"]`).waitFor({ timeout: WAIT });
    expect(await page.locator(`tr[data-job="${fresh}"]`).count() === 0, 'the saved screen has a job submitted after it');
    open();
    await page.locator(`tr[data-job="${fresh}"]`).waitFor({ timeout: WAIT }); // the live one
    await note.waitFor({ state: 'detached', timeout: WAIT });
    await page.locator('#status', { hasText: 'Updated' }).waitFor({ timeout: WAIT });
    // logged out: nothing saved is left; the next viewer sees none of it
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('API token').waitFor({ timeout: WAIT });
    const left = await page.evaluate(() => Object.keys(sessionStorage).filter((k) => k.startsWith('docket.screen.')));
    expect(left.length === 0, `saved screens left after a log out: ${left}`);
    held = gate();
    await page.getByLabel('API token').fill(TOKENS.lead.token);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.locator('#who', { hasText: TOKENS.lead.user }).waitFor({ timeout: WAIT });
    await page.goto(`${BASE}/${Q}`);
    await page.locator('#who', { hasText: TOKENS.lead.user }).waitFor({ timeout: WAIT });
    expect(await note.count() === 0, 'another viewer was shown a saved screen');
    open();
    await page.locator('#status', { hasText: 'Updated' }).waitFor({ timeout: WAIT });
    // a save under one token, in a tab holding another (put there without a log in): not
    // drawn; in a tab holding its own token, drawn
    await page.waitForFunction(() => sessionStorage.getItem('docket.screen.queue'), null, { timeout: WAIT });
    const leads = await page.evaluate(() => sessionStorage.getItem('docket.screen.queue'));
    for (const role of ['member', 'lead']) {
      const tab = await newPage();
      await tab.context().addInitScript(([t, s]) => {
        if (!sessionStorage.getItem('docket.token')) {
          sessionStorage.setItem('docket.token', t);
          sessionStorage.setItem('docket.screen.queue', s);
        }
      }, [TOKENS[role].token, leads]);
      held = gate();
      await tab.route((u) => u.pathname === '/v1/jobs' && u.searchParams.get('limit') === '50',
        async (route) => { await held; await route.continue(); });
      await tab.goto(`${BASE}/${Q}`);
      await tab.locator('#who', { hasText: TOKENS[role].user }).waitFor({ timeout: WAIT });
      const shown = await tab.locator('.saved-note').count();
      expect(shown === (role === 'lead' ? 1 : 0), `${role}: ${shown} saved screens shown from the lead's save`);
      open();
      await tab.locator('#status', { hasText: 'Updated' }).waitFor({ timeout: WAIT });
    }
  },

  // `docket console` over the Unix socket: its link logs in through the forward.
  async forward(link, user) {
    const page = await newPage();
    await page.goto(link);
    await page.locator('#who', { hasText: user }).waitFor({ timeout: WAIT });
    await page.locator('#nav a', { hasText: 'Queue' }).click();
    await page.locator('#main h1', { hasText: 'Queue' }).waitFor({ timeout: WAIT });
    expect(!(await page.locator('#status').getAttribute('class')).includes('err'), 'an API call failed through the forward');
  },
};

const [name, ...args] = process.argv.slice(2);
if (!cases[name]) {
  console.error(`usage: node test/browser.mjs ${Object.keys(cases).join('|')} [ARGS]`);
  process.exit(2);
}
browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium' });
try {
  await cases[name](...args);
  expect(problems.length === 0, problems.join('; '));
  console.log(`ok ${name}`);
} catch (e) {
  console.error(`not ok ${name}: ${e.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
