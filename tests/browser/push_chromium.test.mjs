// push_chromium.test.mjs -- tocsin's service worker (GET /v1/sw.js) in a real browser: Debian's
// Chromium, headless, driven by puppeteer-core. The demo page's push toggle registers the worker
// for /demo; Chromium's pushManager.subscribe() needs Google's push service, which is out of reach
// here, so the push messages are handed to the worker through the DevTools protocol
// (ServiceWorker.deliverPushMessage: the plaintext goes straight to the worker's push handler).
// Checked: the notification's title, body and tag (= the reminder's id), one notification for a
// message delivered twice, the postMessage to open pages, messages of another shape ignored, and
// that enablePush gives up on a push service that never answers. The real subscription, the
// encryption and the push service are push_firefox.test.mjs's. A missing Chromium is a failure.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium } from './launch.mjs';
import { harness, test, waitFor } from '../api/harness.mjs';

const WAIT_MS = 15000;          // generous bound for anything the browser does here
const GIVE_UP_MS = 500;         // enablePush's timeoutMs in the test of the bound

const h = await harness('push_chromium');
let srv;
let token;
let browser;
let chromium;
let page;
let cdp;
const logs = [];
const registrations = new Map(); // registrationId -> ServiceWorker.ServiceWorkerRegistration
const versions = new Map();      // versionId -> ServiceWorker.ServiceWorkerVersion

before(async () => {
    srv = await h.startServer({ TOCSIN_DEMO: '1' });
    const key = await srv.createKey('push-chromium');
    const t = await srv.req('POST', '/v1/browser-tokens', { key, json: { sub: 'ada', scope: 'notifications push', ttl_s: 900 } });
    assert.equal(t.status, 201, t.text);
    token = t.json.token;
    chromium = await launchChromium();
    browser = chromium.browser;
    // The permission a person would grant at the prompt, for tocsin's origin only.
    const b = await browser.target().createCDPSession();
    await b.send('Browser.grantPermissions', { origin: srv.base, permissions: ['notifications'] });
    page = await browser.newPage();
    page.on('console', (m) => logs.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => logs.push(`pageerror: ${e.message}`));
    cdp = await page.createCDPSession();
    cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => {
        for (const r of e.registrations) registrations.set(r.registrationId, r);
    });
    cdp.on('ServiceWorker.workerVersionUpdated', (e) => {
        for (const v of e.versions) versions.set(v.versionId, v);
    });
    await cdp.send('ServiceWorker.enable');
});

after(async () => {
    await chromium?.close();
    await srv?.stop();
});

const why = () => `page log:\n${logs.join('\n')}`;

// The active worker's registration for /demo, as the DevTools protocol reports it.
function demoRegistration() {
    const reg = [...registrations.values()].find((r) => r.scopeURL === `${srv.base}/demo` && !r.isDeleted);
    if (!reg) return null;
    const active = [...versions.values()].find((v) => v.registrationId === reg.registrationId && v.status === 'activated');
    return active ? { ...reg, scriptURL: active.scriptURL } : null;
}

// The notifications of the /demo registration: [{title, body, tag, data}].
const notifications = () => page.evaluate(async () => {
    const reg = await navigator.serviceWorker.getRegistration('/demo');
    return (await reg.getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data }));
});

const messages = () => page.evaluate(() => window.tocsinMessages);

function deliver(registrationId, data) {
    return cdp.send('ServiceWorker.deliverPushMessage', { origin: srv.base, registrationId, data });
}

function reminder(id, title, minutesBefore) {
    return {
        type: 'meeting.reminder',
        id,
        meeting_id: '0b6f3f5e-2a57-4c57-9a61-3f0d1b1c2d3e',
        title,
        starts_at: new Date(Date.now() + minutesBefore * 60000).toISOString(),
        minutes_before: minutesBefore,
    };
}

test('the demo toggle registers /v1/sw.js for /demo; subscribe() waits on an unreachable push service and the note says so', async () => {
    await page.goto(`${srv.base}/demo#token=${token}`, { waitUntil: 'load', timeout: WAIT_MS });
    await page.waitForSelector('#push-toggle:not([disabled])', { timeout: WAIT_MS });
    assert.equal(await page.$eval('#push-toggle', (e) => e.checked), false);
    await page.evaluate(() => {
        window.tocsinMessages = [];
        navigator.serviceWorker.addEventListener('message', (e) => {
            window.tocsinMessages.push(e.data);
            // What a page that shows the reminder itself does: find the notification to close it.
            if (window.lookOnMessage) {
                window.lookOnMessage.getNotifications({ tag: e.data.reminder.id })
                    .then((n) => { window.foundOnMessage = n.length; });
                window.lookOnMessage = null;
            }
        });
    });
    await page.click('label.switch'); // what a person clicks: the checkbox itself is hidden
    const reg = await waitFor(() => demoRegistration(), WAIT_MS);
    assert.ok(reg, `no active worker registered for /demo: ${JSON.stringify([...registrations.values()])} ${why()}`);
    assert.equal(reg.scriptURL, `${srv.base}/v1/sw.js`);
    const seen = await page.evaluate(async () => {
        const r = await navigator.serviceWorker.getRegistration('/demo');
        return {
            scope: r.scope,
            active: r.active.scriptURL,
            controller: navigator.serviceWorker.controller?.scriptURL ?? null,
            subscription: await r.pushManager.getSubscription(),
        };
    });
    // clients.claim(): the page that registered the worker is controlled without a reload.
    assert.deepEqual(seen, { scope: `${srv.base}/demo`, active: `${srv.base}/v1/sw.js`, controller: `${srv.base}/v1/sw.js`, subscription: null });
    // Chromium keeps subscribe() pending (no way to Google's push service): the toggle says it
    // is working on it instead of looking switched on.
    assert.equal(await page.$eval('#push-note', (e) => e.textContent), 'Turning on…');
    assert.deepEqual(await page.$eval('#push-toggle', (e) => [e.checked, e.disabled]), [true, true]);
});

test('enablePush gives up after timeoutMs when the push service never answers', async () => {
    const r = await page.evaluate(async (tok, ms) => {
        const { enablePush, pushEnabled } = await import('/v1/client.js');
        const t0 = performance.now();
        try {
            await enablePush({ getToken: () => tok, timeoutMs: ms });
            return { resolved: true };
        } catch (e) {
            return { message: e.message, ms: performance.now() - t0, enabled: await pushEnabled({}) };
        }
    }, token, GIVE_UP_MS);
    assert.equal(r.message, "the browser's push service did not answer within 1 s", JSON.stringify(r));
    assert.ok(r.ms >= GIVE_UP_MS - 20 && r.ms < WAIT_MS, `gave up after ${r.ms} ms`); // performance.now() is coarsened
    assert.equal(r.enabled, false);
});

test('a reminder pushed to the worker shows one notification (tag = id) and tells the page; other shapes are ignored', async () => {
    const reg = demoRegistration();
    assert.ok(reg, 'the previous test registered the worker');
    assert.deepEqual(await notifications(), []);

    // The worker tells the page once the notification is up. Polling getNotifications() while
    // a notification is being shown would lose it now and then: Chromium drops from its
    // database the notifications it does not see displayed yet (measured: 2-4 of 40 lost when
    // polled every 50 ms, none of 120 when not).
    const first = reminder('rem_41_1795000000000', 'Design review', 10);
    await page.evaluate(async () => { window.lookOnMessage = await navigator.serviceWorker.getRegistration('/demo'); });
    await deliver(reg.registrationId, JSON.stringify(first));
    assert.ok(await waitFor(async () => (await messages()).length === 1, WAIT_MS), `no postMessage from the worker; ${why()}`);
    assert.deepEqual(await messages(), [{ type: 'tocsin.reminder', reminder: first }]);
    assert.ok(await waitFor(() => page.evaluate(() => window.foundOnMessage !== undefined), WAIT_MS));
    assert.equal(await page.evaluate(() => window.foundOnMessage), 1, 'the page did not find the notification when it heard of the reminder');
    let shown = await notifications();
    assert.equal(shown.length, 1, JSON.stringify(shown));
    assert.equal(shown[0].title, 'Design review');
    assert.equal(shown[0].tag, first.id);
    assert.match(shown[0].body, /^Starts in 10 min \(.+\)$/);
    assert.deepEqual(shown[0].data, { tocsin: first });

    // The push service delivers the same message again: it replaces its own notification.
    await deliver(reg.registrationId, JSON.stringify(first));
    assert.ok(await waitFor(async () => (await messages()).length === 2, WAIT_MS), `no second postMessage; ${why()}`);
    shown = await notifications();
    assert.deepEqual(shown.map((n) => n.tag), [first.id]);

    // Messages that are not tocsin's, then one that is: once the page hears of it, the worker
    // has handled the ones before it (push events reach the worker in order).
    const others = ['not JSON', '{"type":"meeting.reminder","title":"no id"}', '{"type":"chat.message","id":"c1","title":"hi"}',
        '[1,2]', 'null', JSON.stringify({ ...first, type: 'meeting.created', id: 'rem_x' })];
    for (const data of others) await deliver(reg.registrationId, data);
    const second = { ...reminder('rem_42_1795000060000', 'Standup', 0), url: `${srv.base}/demo?m=42` };
    await deliver(reg.registrationId, JSON.stringify(second));
    assert.ok(await waitFor(async () => (await messages()).length === 3, WAIT_MS), `no third postMessage; ${why()}`);
    assert.deepEqual((await messages()).map((m) => m.reminder.id), [first.id, first.id, second.id]);
    shown = await notifications();
    assert.deepEqual(shown.map((n) => [n.tag, n.title]).sort(), [[first.id, 'Design review'], [second.id, 'Standup']]);
    assert.match(shown.find((n) => n.tag === second.id).body, /^Starts now \(.+\)$/);
});
