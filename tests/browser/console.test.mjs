// console.test.mjs -- the operator console (GET /console, web/console/) in Debian's Chromium:
// its headers (a strict CSP, the content types, ETags); signing in (a wrong key refused, a 401
// later back to the sign-in with a message); a failed delivery found by search and sent again
// with the page's Retry button, the receiver (fixed by then) getting it with a valid Standard
// Webhooks signature; the endpoint actions (disable/enable, recover since, rotate secret); a
// meeting found by title and its timeline; every view at 1280 and 390 px wide with no console
// error and, at 390, no horizontal overflow. Screenshots go to .local/test/screenshots/console/.
import { before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { test, harness, waitFor, sleep, MIN } from '../api/harness.mjs';
import { launchChromium } from './launch.mjs';

const { Webhook } = createRequire(import.meta.url)('standardwebhooks');

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SHOTS = process.env.TOCSIN_TEST_SCREENSHOTS || path.join(ROOT, '.local/test/screenshots/console');
const BOUND_MS = 20000;   // generous: deliveries settle, pages show what they load
const WIDTHS = [1280, 390];

const h = await harness('console');
let srv;
let key;
let chromium;
const fx = {};
const open = [];

// A webhook receiver answering rx.status (changeable), keeping each request.
async function receiver(status) {
    const rx = { got: [], status };
    rx.server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
            rx.got.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
            res.writeHead(rx.status).end();
        });
    });
    await new Promise((r) => rx.server.listen(0, '127.0.0.1', r));
    rx.url = `http://127.0.0.1:${rx.server.address().port}/hook`;
    return rx;
}

async function call(method, p, json) {
    const r = await srv.req(method, p, { key, json });
    assert.ok(r.status < 300, `${method} ${p}: ${r.status} ${r.text}`);
    return r.json;
}

// A meeting starting in startsInMin minutes with a reminder 10 minutes before (DUE: it fires
// in a few seconds).
const DUE = 10 + 3 / 60;
const meeting = (title, startsInMin, extra = {}) => call('POST', '/v1/meetings', {
    title,
    starts_at: new Date(Math.ceil((Date.now() + startsInMin * MIN) / 1000) * 1000).toISOString(),
    participants: [{ id: 'ada', name: 'Ada Lovelace' }, { id: 'grace', name: 'Grace Hopper' }],
    reminders: [{ minutes_before: 10 }],
    ...extra,
});

before(async () => {
    srv = await h.startServer({
        TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
        TOCSIN_DELIVERY_RETRY_BASE_MS: '100',
        TOCSIN_DELIVERY_MAX_ATTEMPTS: '2',
        TOCSIN_INSTANCE_ID: 'console-replica',
    });
    key = await srv.createKey('console');
    fx.bad = await receiver(500);
    fx.ok = await receiver(204);
    fx.hookBad = await call('POST', '/v1/webhooks', { url: fx.bad.url, description: 'Billing service (staging)' });
    fx.hookOk = await call('POST', '/v1/webhooks', { url: fx.ok.url, description: 'Calendar sync' });
    fx.northwind = await meeting('Customer call: Northwind', DUE);
    await meeting('Weekly sync', DUE, { location: 'Room 2' });
    await meeting('Design review', 90, { reminders: [{ minutes_before: 15 }, { minutes_before: 5 }] });
    fx.standup = await meeting('Team standup', 24 * 60, { time_zone: 'Europe/London', recurrence: { rrule: 'FREQ=DAILY;COUNT=20' } });
    // Two due meetings x two webhooks: the bad receiver's fail (two attempts), the others deliver.
    const settled = await waitFor(async () => {
        const r = await srv.req('GET', '/v1/deliveries?channel=webhook&limit=200', { key });
        return r.json.items.length === 4 && r.json.items.every((d) => d.status !== 'pending') && r.json.items;
    }, BOUND_MS, 100);
    assert.ok(settled, 'the due meetings\' webhook deliveries settled');
    fx.failed = settled.find((d) => d.status === 'failed' && d.meeting_id === fx.northwind.id);
    assert.ok(fx.failed, JSON.stringify(settled));
    chromium = await launchChromium(['--lang=en-GB']);
    fs.mkdirSync(SHOTS, { recursive: true });
});

afterEach(async () => {
    for (const p of open.splice(0)) {
        await p.close().catch(() => {});
    }
});

after(async () => {
    await chromium?.close();
    for (const rx of [fx.bad, fx.ok]) {
        rx?.server.closeAllConnections();
        await new Promise((r) => (rx ? rx.server.close(r) : r()));
    }
    await srv?.stop();
});

// A tab of width px, its console messages, page errors and failed responses kept.
async function tab(width) {
    const p = await chromium.browser.newPage();
    p.logs = [];
    p.on('console', (m) => p.logs.push(`${m.type()}: ${m.text()}`));
    p.on('pageerror', (e) => p.logs.push(`pageerror: ${e.message}`));
    p.on('requestfailed', (r) => p.logs.push(`requestfailed: ${r.url()}`));
    await p.emulateTimezone('Europe/London');
    await p.setViewport({ width, height: 860, deviceScaleFactor: 1 });
    open.push(p);
    return p;
}

const errorsOf = (p, allow = []) => p.logs.filter((l) => /^(error|pageerror|requestfailed)/.test(l) && !allow.some((re) => re.test(l)));

async function signIn(p, k = key) {
    await p.goto(`${srv.base}/console`, { waitUntil: 'load' });
    await p.waitForSelector('::-p-aria(API key)');
    await p.type('::-p-aria(API key)', k);
    await p.keyboard.press('Enter');
    if (k === key) {
        await pageWait(p, () => !document.querySelector('#app').hidden, null, 'signed in');
    }
}

// Waits for fn in the page; the page's log and body text on failure.
async function pageWait(p, fn, arg, what) {
    try {
        await p.waitForFunction(fn, { timeout: BOUND_MS, polling: 50 }, arg);
    } catch (e) {
        const text = await p.evaluate(() => document.body.innerText).catch(() => '?');
        throw new Error(`${what}: ${e.message}\npage text:\n${text.slice(0, 1500)}\npage log:\n${p.logs.join('\n')}`);
    }
}

// Accessible-name selectors: the link or button named exactly so.
const link = (name) => `::-p-aria([name="${name}"][role="link"])`;
const button = (name) => `::-p-aria([name="${name}"][role="button"])`;

const noLoading = () => document.querySelector('#view .state-loading') === null && document.querySelector('#view').childElementCount > 0;

async function shot(p, name) {
    await sleep(150); // the charts' ResizeObserver has drawn
    await p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

// ---------------------------------------------------------------- the tests

test('/console and its files: a strict CSP, their content types, ETags and 304; unknown files 404', async () => {
    const page = await srv.req('GET', '/console', { validate: false });
    assert.equal(page.status, 200);
    assert.equal(page.contentType, 'text/html; charset=utf-8');
    const csp = page.header('content-security-policy');
    for (const d of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]) {
        assert.ok(csp.includes(d), `${d} in ${csp}`);
    }
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    assert.equal(page.header('x-content-type-options'), 'nosniff');
    assert.equal(page.header('referrer-policy'), 'no-referrer');
    assert.doesNotMatch(page.text, /<script>|<script(?![^>]*\bsrc=)[^>]*>|\sstyle=|\son[a-z]+=/i, 'no inline script, style or handler');
    const scripts = [...page.text.matchAll(/src="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(scripts, ['/console/console.js']);
    for (const [file, type] of [['console.js', 'text/javascript; charset=utf-8'], ['console.css', 'text/css; charset=utf-8'], ['charts.js', 'text/javascript; charset=utf-8']]) {
        const r = await srv.req('GET', `/console/${file}`, { validate: false });
        assert.equal(r.status, 200, file);
        assert.equal(r.contentType, type, file);
        assert.equal(r.header('cache-control'), 'no-cache');
        assert.match(r.header('etag'), /^"[0-9a-f]{32}"$/);
        assert.equal(r.header('content-security-policy'), csp);
        const again = await srv.req('GET', `/console/${file}`, { validate: false, headers: { 'If-None-Match': r.header('etag') } });
        assert.equal(again.status, 304);
    }
    for (const [bad, status] of [['/console/nope.js', 404], ['/console/..%2Fclient.js', 400], [`/console/${'a'.repeat(80)}.js`, 404], ['/console/console.js/x', 404]]) {
        const r = await srv.req('GET', bad, { validate: false });
        assert.equal(r.status, status, bad);
        assert.equal(r.contentType, 'application/problem+json', bad);
    }
    const q = await srv.req('GET', '/console?x=1', { validate: false });
    assert.equal(q.status, 400);
});

test('sign-in: a wrong key is refused with a message; the key sits in sessionStorage; sign out forgets it', async () => {
    const p = await tab(1280);
    await signIn(p, 'tsk_00000000_nottherightkeynottherightkeynottherightkey00');
    await pageWait(p, () => !document.querySelector('#signin-msg').hidden, null, 'the refusal');
    assert.match(await p.$eval('#signin-msg', (e) => e.textContent), /refused/);
    assert.equal(await p.evaluate(() => sessionStorage.length), 0);
    await p.type('::-p-aria(API key)', key);
    await p.keyboard.press('Enter');
    await pageWait(p, () => !document.querySelector('#app').hidden, null, 'signed in');
    assert.equal(await p.evaluate(() => Object.values(sessionStorage).join()), key);
    await p.click(button('Sign out'));
    await pageWait(p, () => !document.querySelector('#signin').hidden, null, 'signed out');
    assert.equal(await p.evaluate(() => sessionStorage.length), 0);
    assert.deepEqual(errorsOf(p, [/status of 401/]), []);
});

test('a 401 after sign-in (the key revoked) goes back to the sign-in with a message', async () => {
    const p = await tab(1280);
    await signIn(p);
    await pageWait(p, () => !document.querySelector('#app').hidden, null, 'signed in');
    await p.evaluate(() => sessionStorage.setItem('tocsin.console.key', 'tsk_00000000_revokedrevokedrevokedrevokedrevokedrevoked0'));
    await p.click(link('Endpoints'));
    await pageWait(p, () => !document.querySelector('#signin').hidden && /no longer accepts/.test(document.querySelector('#signin-msg').textContent),
        null, 'back to the sign-in');
    assert.equal(await p.evaluate(() => sessionStorage.length), 0);
});

test('a failed delivery found by search, sent again with Retry: the receiver gets it, signed', async () => {
    const p = await tab(1280);
    await signIn(p);
    await pageWait(p, noLoading, null, 'the overview');
    await p.click(link('Deliveries'));
    await p.waitForSelector('input[type=search]');
    await p.type('input[type=search]', 'northwind');
    await p.select('#status', 'failed');
    await p.keyboard.press('Enter');
    await pageWait(p, (id) => location.hash.includes('q=northwind') && document.querySelector(`tr[data-id="${id}"]`) !== null,
        fx.failed.id, 'the failed delivery in the results');
    const rows = await p.$$eval('table.deliveries tbody tr', (trs) => trs.map((tr) => [tr.dataset.id, tr.dataset.status]));
    assert.deepEqual(rows, [[fx.failed.id, 'failed']], 'only the failed Northwind delivery');
    assert.match(await p.$eval(`tr[data-id="${fx.failed.id}"]`, (tr) => tr.textContent), /failedCustomer call: Northwind/);
    // Opened by keyboard: focus the row's button, Enter.
    await p.focus(`tr[data-id="${fx.failed.id}"] button`);
    await p.keyboard.press('Enter');
    await p.waitForSelector('table.attempts');
    assert.deepEqual(await p.$$eval('table.attempts tbody tr td:nth-child(3)', (tds) => tds.map((t) => t.textContent)), ['failed', 'failed']);
    await shot(p, 'deliveries-detail-failed-1280');
    const webhookId = `rem_${fx.failed.reminder_id}_${Date.parse(fx.failed.fire_at)}`;
    const before = fx.bad.got.filter((g) => g.headers['webhook-id'] === webhookId).length;
    assert.equal(before, 2);
    fx.bad.status = 200; // the receiver is fixed
    await p.click(button('Retry'));
    await pageWait(p, () => /Sent again: delivered/.test(document.querySelector('.panel .result')?.textContent ?? ''), null, 'the result on the page');
    const got = fx.bad.got.filter((g) => g.headers['webhook-id'] === webhookId);
    assert.equal(got.length, before + 1, 'sent once more');
    new Webhook(fx.hookBad.secret).verify(got.at(-1).body, got.at(-1).headers); // throws on a bad signature
    assert.equal(JSON.parse(got.at(-1).body).data.meeting.title, 'Customer call: Northwind');
    assert.deepEqual(await p.$$eval('table.attempts tbody tr td:nth-child(3)', (tds) => tds.map((t) => t.textContent)), ['failed', 'failed', 'delivered']);
    assert.equal(await p.$eval(`tr[data-id="${fx.failed.id}"]`, (tr) => tr.dataset.status), 'delivered', 'the row follows');
    // Now delivered: its action is Resend. Escape closes the detail and gives focus back.
    await p.waitForSelector(button('Resend'));
    await shot(p, 'deliveries-detail-resent-1280');
    await p.keyboard.press('Escape');
    await pageWait(p, () => document.querySelector('aside.panel').hidden, null, 'the detail closed');
    assert.equal(await p.evaluate(() => document.activeElement?.closest('tr')?.dataset.id), fx.failed.id);
    assert.deepEqual(errorsOf(p), []);
});

test('endpoints: health by word, disable and enable, recover since, rotate shows the new secret once', async () => {
    // Another failure on the bad webhook to recover.
    fx.bad.status = 500;
    const m = await meeting('Quarterly planning', DUE);
    const failed = await waitFor(async () => (await srv.req('GET', `/v1/deliveries?meeting_id=${m.id}&status=failed&webhook_id=${fx.hookBad.id}`, { key })).json.items[0], BOUND_MS, 100);
    assert.ok(failed, 'the planning delivery failed');
    const p = await tab(1280);
    await signIn(p);
    await p.click(link('Endpoints'));
    const card = `article.endpoint[data-id="${fx.hookBad.id}"]`;
    await p.waitForSelector(card);
    assert.match(await p.$eval(`${card} .endpoint-head .badge`, (b) => b.textContent), /^(failing|open)$/);
    assert.equal(await p.$eval(`article.endpoint[data-id="${fx.hookOk.id}"] .endpoint-head .badge`, (b) => b.textContent), 'healthy');
    await shot(p, 'endpoints-1280');
    await p.click(`${card} ${button('Disable')}`);
    await pageWait(p, (c) => document.querySelector(c)?.dataset.state === 'disabled', card, 'disabled');
    assert.equal((await call('GET', `/v1/webhooks/${fx.hookBad.id}`)).disabled, true);
    await p.click(`${card} ${button('Enable')}`);
    await pageWait(p, (c) => document.querySelector(c)?.dataset.state !== 'disabled', card, 'enabled again');
    assert.equal((await call('GET', `/v1/webhooks/${fx.hookBad.id}`)).disabled, false);
    fx.bad.status = 204;
    await p.click(`${card} ${button('Recover')}`);
    await pageWait(p, (c) => /Queued \d+ failed/.test(document.querySelector(`${c} .result`)?.textContent ?? ''), card, 'recover queued');
    const queued = Number(/Queued (\d+)/.exec(await p.$eval(`${card} .result`, (e) => e.textContent))[1]);
    assert.ok(queued >= 1, `queued ${queued}`);
    assert.ok(await waitFor(async () => (await call('GET', `/v1/deliveries/${failed.id}`)).status === 'delivered', BOUND_MS, 100), 'recovered and delivered');
    await p.click(`${card} ${button('Rotate secret')}`);
    await p.waitForSelector(`${card} code.secret`);
    const secret = await p.$eval(`${card} code.secret`, (e) => e.textContent);
    assert.match(secret, /^whsec_[A-Za-z0-9+/]+={0,2}$/);
    assert.notEqual(secret, fx.hookBad.secret);
    await shot(p, 'endpoints-rotated-1280');
    assert.deepEqual(errorsOf(p), []);
});

test('meetings: found by title; the timeline shows its reminders and deliveries', async () => {
    const p = await tab(1280);
    await signIn(p);
    await p.click(link('Meetings'));
    await p.waitForSelector('#mq');
    await p.type('#mq', 'NORTHWIND');
    await p.keyboard.press('Enter');
    await pageWait(p, () => document.querySelectorAll('li.meeting-row').length === 1, null, 'one meeting found');
    await p.click('li.meeting-row a');
    await pageWait(p, () => document.querySelectorAll('li.tl-delivery').length >= 2, null, 'the timeline');
    const kinds = await p.$$eval('li.tl .tl-kind', (e) => e.map((x) => x.textContent));
    assert.ok(kinds.includes('Reminder') && kinds.includes('Starts') && kinds.includes('Delivery'), kinds.join());
    assert.deepEqual(errorsOf(p), []);
});

test('meetings: a search past one page ends in Load more; an unknown meeting shows the error state', async () => {
    const PAGE = 25; // web/console/meetings.js
    for (let i = 0; i < PAGE + 1; i++) {
        await meeting(`Bulk review ${String(i).padStart(2, '0')}`, 120 + i);
    }
    const p = await tab(390);
    await signIn(p);
    await p.evaluate(() => { location.hash = '#/meetings?q=bulk%20review'; });
    await pageWait(p, (n) => document.querySelectorAll('li.meeting-row').length === n, PAGE, 'the first page');
    await p.click(button('Load more'));
    await pageWait(p, (n) => document.querySelectorAll('li.meeting-row').length === n && !document.querySelector('.more button'), PAGE + 1, 'the second page');
    const titles = await p.$$eval('li.meeting-row .meeting-title', (e) => e.map((x) => x.textContent));
    assert.deepEqual(titles, Array.from({ length: PAGE + 1 }, (_, i) => `Bulk review ${String(i).padStart(2, '0')}`));
    await p.evaluate(() => { location.hash = '#/meetings/00000000-0000-4000-8000-000000000000'; });
    await pageWait(p, () => document.querySelector('#view .state-error') !== null, null, 'the error state');
    assert.match(await p.$eval('#view .state-error', (e) => e.textContent), /not found/i);
    assert.ok(await p.$(button('Try again')));
    assert.deepEqual(errorsOf(p, [/status of 404/]), []);
});

test('every view at 1280 and 390 px: no console error, no horizontal overflow at 390', async () => {
    const views = [
        ['overview', '#/overview'],
        ['overview-24h', '#/overview?window=24h'],
        ['deliveries', '#/deliveries'],
        ['deliveries-detail', '#/deliveries?status=delivered&channel=webhook'],
        ['endpoints', '#/endpoints'],
        ['meetings', '#/meetings'],
        ['meeting-timeline', `#/meetings/${fx.northwind.id}`],
        ['series-timeline', `#/meetings/${fx.standup.id}`],
        ['deliveries-empty', '#/deliveries?q=no-such-thing-anywhere'],
    ];
    for (const width of WIDTHS) {
        const p = await tab(width);
        await p.goto(`${srv.base}/console`, { waitUntil: 'load' });
        await p.waitForSelector('::-p-aria(API key)');
        await shot(p, `signin-${width}`);
        await p.type('::-p-aria(API key)', key);
        await p.keyboard.press('Enter');
        await pageWait(p, () => !document.querySelector('#app').hidden, null, 'signed in');
        for (const [name, hash] of views) {
            await p.evaluate((x) => { location.hash = x; }, hash);
            await pageWait(p, noLoading, null, `${name} loaded`);
            if (name === 'deliveries-detail') {
                await p.click('table.deliveries tbody tr button');
                await p.waitForSelector('table.attempts');
            }
            await shot(p, `${name}-${width}`);
            const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
            if (width === 390) {
                assert.ok(overflow <= 0, `${name} at 390 px: ${overflow} px wider than the viewport`);
            }
            for (const tabName of ['Overview', 'Deliveries', 'Endpoints', 'Meetings']) {
                assert.ok(await p.$(link(tabName)), `the ${tabName} link at ${width}`);
            }
        }
        assert.deepEqual(errorsOf(p), [], `no console error at ${width} px`);
    }
});
