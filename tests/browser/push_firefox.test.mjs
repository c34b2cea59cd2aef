// push_firefox.test.mjs -- Web Push end to end in a real browser, offline: Debian's Firefox ESR,
// headless, driven by puppeteer-core over WebDriver BiDi, subscribes through the demo page's push
// toggle to a local stand-in for Mozilla's push service (mozpush.mjs); tocsin encrypts and signs
// each reminder for that subscription and POSTs it to the stand-in, which hands the encrypted
// body to Firefox over its push WebSocket; Firefox decrypts it itself (RFC 8291) and runs
// /v1/sw.js, which shows the notification and tells the page. Then the toggle turns push off:
// the subscription leaves tocsin (DELETE 204) and Firefox, and a later reminder reaches nobody.
// What is real: Firefox, its push client, its decryption, the service worker, tocsin, PostgreSQL
// and Redis. What is a stand-in: the push service (its HTTP and WebSocket sides, ~150 lines).
// A missing Firefox is a failure.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import puppeteer from 'puppeteer-core';
import { harness, test, waitFor, sleep } from '../api/harness.mjs';
import { startMozPush } from './mozpush.mjs';

const FIREFOX = process.env.TOCSIN_TEST_FIREFOX || '/usr/bin/firefox-esr';
const LAUNCH_TIMEOUT_MS = 60000;
const WAIT_MS = 20000;      // generous bound for a reminder due in FIRE_IN_MS to be on the page
const FIRE_IN_MS = 3000;    // the reminders fire this long after they are created
const QUIET_MS = 2000;      // after a fire, how long the push service must hear nothing
const ACK_OK = 100;         // Firefox's ack code for a message decrypted and delivered
const GRACE_MS = 60000;     // TOCSIN_MISSED_GRACE_MS

if (!fs.existsSync(FIREFOX)) {
    throw new Error(`${FIREFOX} does not exist: the browser tests need Debian's firefox-esr (scripts/lib.sh installs it); refusing to skip`);
}

// Firefox's settings for the test profile (puppeteer-core writes them to its user.js).
const prefs = (pushServerUrl) => ({
    // The push service: the stand-in, over ws:// (Firefox takes only wss:// without the second).
    'dom.push.serverURL': pushServerUrl,
    'dom.push.testing.allowInsecureServerURL': true,
    'dom.push.connection.enabled': true,
    // Notifications allowed without a prompt, as a person would at the prompt.
    'permissions.default.desktop-notification': 1,
    // Firefox's own alert windows instead of the desktop's notification service (libnotify over
    // D-Bus), which a headless machine does not have: with it Firefox logs "libnotify: Failed to
    // connect to proxy" and registration.getNotifications() stays empty after showNotification().
    'alerts.useSystemBackend': false,
});

const h = await harness('push_firefox');
let mp;
let srv;
let key;
let token;
let browser;
let page;
let subId;
const logs = [];

before(async () => {
    mp = await startMozPush();
    srv = await h.startServer({
        TOCSIN_DEMO: '1',
        TOCSIN_WEBPUSH_ALLOW_PRIVATE: '1', // the stand-in is plain http on 127.0.0.1
        TOCSIN_MISSED_GRACE_MS: String(GRACE_MS),
        TOCSIN_LOG_LEVEL: 'info', // the request log shows the DELETE's status
    });
    key = await srv.createKey('push-firefox');
    const t = await srv.req('POST', '/v1/browser-tokens', { key, json: { sub: 'ada', scope: 'notifications push', ttl_s: 900 } });
    assert.equal(t.status, 201, t.text);
    token = t.json.token;
    browser = await puppeteer.launch({
        // puppeteer-core 22 names the browser `product`; later versions `browser`.
        product: 'firefox',
        browser: 'firefox',
        protocol: 'webDriverBiDi',
        executablePath: FIREFOX,
        headless: true,
        timeout: LAUNCH_TIMEOUT_MS,
        protocolTimeout: LAUNCH_TIMEOUT_MS,
        extraPrefsFirefox: prefs(mp.url),
    });
    page = await browser.newPage();
    page.on('console', (m) => logs.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => logs.push(`pageerror: ${e.message}`));
});

after(async () => {
    await browser?.close();
    await mp?.close();
    await srv?.stop();
});

const why = () => `page log:\n${logs.join('\n')}\npush service log:\n${JSON.stringify(mp.log).slice(0, 4000)}`;

// A meeting of ada's whose one reminder, on `channels`, fires FIRE_IN_MS from now.
async function meetingFiringSoon(title, channels) {
    const r = await srv.req('POST', '/v1/meetings', {
        key,
        json: {
            title,
            starts_at: new Date(Date.now() + 60000 + FIRE_IN_MS).toISOString(),
            participants: [{ id: 'ada', name: 'Ada Lovelace' }],
            reminders: [{ minutes_before: 1, channels }],
        },
    });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

async function reminderFired(meetingId) {
    const r = await srv.req('GET', `/v1/meetings/${meetingId}`, { key });
    return r.json.reminders[0].status === 'fired';
}

async function deliveries(meetingId) {
    const r = await srv.req('GET', `/v1/meetings/${meetingId}/deliveries`, { key });
    assert.equal(r.status, 200, r.text);
    return r.json.items;
}

const note = () => page.$eval('#push-note', (e) => e.textContent);

test('Firefox subscribes through the demo toggle; a reminder tocsin pushes is decrypted by Firefox and shown by /v1/sw.js', async () => {
    await page.goto(`${srv.base}/demo#token=${token}`, { waitUntil: 'load', timeout: WAIT_MS });
    await page.waitForSelector('#push-toggle:not([disabled])', { timeout: WAIT_MS });
    assert.equal(await page.$eval('#push-toggle', (e) => e.checked), false);
    await page.evaluate(() => {
        window.tocsinMessages = [];
        navigator.serviceWorker.addEventListener('message', (e) => window.tocsinMessages.push(e.data));
    });
    // A click, as a person's: Firefox grants notifications and subscribes only after a gesture.
    await page.click('label.switch');
    assert.ok(await waitFor(async () => (await note()).startsWith('On:'), WAIT_MS), `the toggle did not turn on: ${await note()}; ${why()}`);

    // Firefox registered one channel with the push service, made for the tenant's VAPID key.
    const vapid = await srv.req('GET', '/v1/push/vapid-public-key', { key });
    assert.equal(mp.channels.size, 1, why());
    const [[channelID, channel]] = [...mp.channels];
    assert.deepEqual(Buffer.from(channel.key, 'base64url'), Buffer.from(vapid.json.key, 'base64url'));
    const endpoint = `http://127.0.0.1:${mp.port}/wpush/${channelID}`;
    const inPage = await page.evaluate(async () => {
        const reg = await navigator.serviceWorker.getRegistration('/demo');
        const sub = await reg.pushManager.getSubscription();
        return { scope: reg.scope, script: reg.active.scriptURL, endpoint: sub && sub.endpoint };
    });
    assert.deepEqual(inPage, { scope: `${srv.base}/demo`, script: `${srv.base}/v1/sw.js`, endpoint });
    // tocsin has it, for ada.
    const rows = await h.sql('SELECT id, participant_id, endpoint FROM push_subscriptions');
    const [id, participant, stored] = rows.split('|');
    assert.deepEqual([participant, stored], ['ada', endpoint], rows);
    subId = id;
    assert.match(srv.log, new RegExp(`POST /v1/push/subscriptions 201 `));

    const m = await meetingFiringSoon('Firefox push', ['push']);
    const fireMs = Date.parse(m.reminders[0].fire_at);
    const occurrence = `rem_${m.reminders[0].id}_${fireMs}`;
    const acked = await waitFor(() => mp.acks.find((a) => a.channelID === channelID), WAIT_MS);
    assert.ok(acked, `Firefox acknowledged nothing; pushes: ${JSON.stringify(mp.pushes)}; ${why()}`);
    assert.equal(acked.code, ACK_OK, `Firefox could not decrypt or deliver the message: ack ${JSON.stringify(acked)}`);
    assert.equal(mp.pushes.length, 1, JSON.stringify(mp.pushes));
    const push = mp.pushes[0];
    assert.equal(push.status, 201, push.problem ?? '');
    assert.equal(push.headers.urgency, 'high');
    assert.match(push.headers.topic, /^[A-Za-z0-9_-]{32}$/);
    // TTL: the seconds from the push to the meeting's start, plus the missed grace.
    const ttl = Number(push.headers.ttl);
    const want = (Date.parse(m.starts_at) - push.at) / 1000 + GRACE_MS / 1000;
    assert.ok(Math.abs(ttl - want) <= 2, `TTL ${ttl}, expected about ${want}`);

    // The worker told the page, and the notification is up, named by the occurrence id.
    assert.ok(await waitFor(async () => (await page.evaluate(() => window.tocsinMessages.length)) > 0, WAIT_MS),
        `the page got no message from the worker; ${why()}`);
    assert.deepEqual(await page.evaluate(() => window.tocsinMessages), [{
        type: 'tocsin.reminder',
        reminder: { type: 'meeting.reminder', id: occurrence, meeting_id: m.id, title: 'Firefox push', starts_at: m.starts_at, minutes_before: 1 },
    }]);
    // The worker tells the page once the notification is up.
    const shown = await page.evaluate(async () => {
        const reg = await navigator.serviceWorker.getRegistration('/demo');
        return (await reg.getNotifications()).map((x) => ({ title: x.title, tag: x.tag, body: x.body }));
    });
    assert.equal(shown.length, 1, JSON.stringify(shown));
    assert.equal(shown[0].title, 'Firefox push');
    assert.equal(shown[0].tag, occurrence);
    assert.match(shown[0].body, /^Starts in 1 min \(.+\)$/);

    const d = await deliveries(m.id);
    assert.deepEqual(d.map((x) => [x.channel, x.recipient, x.status, x.last_status]), [['push', 'ada', 'delivered', 201]]);
});

test('the toggle turned off removes the subscription from tocsin and Firefox; a later reminder reaches nobody', async () => {
    assert.ok(subId, 'the previous test subscribed');
    const [channelID] = [...mp.channels.keys()];
    await page.click('label.switch');
    assert.ok(await waitFor(async () => (await note()).startsWith('Off:'), WAIT_MS), `the toggle did not turn off: ${await note()}; ${why()}`);
    assert.match(srv.log, new RegExp(`DELETE /v1/push/subscriptions/${subId} 204 `));
    assert.equal(await h.sql('SELECT count(*) FROM push_subscriptions'), '0');
    assert.equal(await page.evaluate(async () => {
        const reg = await navigator.serviceWorker.getRegistration('/demo');
        return reg.pushManager.getSubscription();
    }), null);
    // Firefox told the push service the channel is gone.
    assert.ok(await waitFor(() => mp.log.some(([dir, msg]) => dir === 'in' && msg.messageType === 'unregister' && msg.channelID === channelID), WAIT_MS), why());
    assert.equal(mp.channels.size, 0);
    // The page says off after a reload too.
    await page.reload({ waitUntil: 'load', timeout: WAIT_MS });
    await page.waitForSelector('#push-toggle:not([disabled])', { timeout: WAIT_MS });
    assert.equal(await page.$eval('#push-toggle', (e) => e.checked), false);

    const pushesBefore = mp.pushes.length;
    const m = await meetingFiringSoon('Nobody gets this', ['push']);
    assert.ok(await waitFor(() => reminderFired(m.id), WAIT_MS), 'the reminder did not fire');
    // Push rows are written with the fire: there are none, and none is sent.
    assert.deepEqual(await deliveries(m.id), []);
    await sleep(QUIET_MS);
    assert.equal(mp.pushes.length, pushesBefore, JSON.stringify(mp.pushes.slice(pushesBefore)));
    assert.equal(mp.acks.length, 1);
});
