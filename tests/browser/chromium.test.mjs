// chromium.test.mjs -- tocsin from a real browser: Debian's Chromium, headless, driven by
// puppeteer-core. A small static server on 127.0.0.1:B serves the test page; two tocsin replicas
// allow the origin http://127.0.0.1:B (TOCSIN_CORS_ORIGINS); a TCP proxy between the browser and
// one replica cuts its connections on command and can be pointed at the other. Checked: a page
// on the allowed origin creates a meeting with a browser token and reads ETag and Location, the
// same page on localhost:B is blocked; a native EventSource gets a reminder, resumes across cuts
// with Last-Event-ID with exactly the missed events, also after kill -9 of the replica behind the
// proxy; web/client.js (served as /v1/client.js) resumes across cuts and takes a new token on
// reauth; seven tabs share one stream; the demo page shows a live reminder, and its unread badge
// follows a mark made in a tab on the other replica within a second. A missing Chromium is a
// failure.
import { before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { launchChromium } from './launch.mjs';
import { test, harness, sleep, waitFor } from '../api/harness.mjs';
import { mintToken, meetingFiringNow, dbEvents, tenantIdOf, assertOrderedUnique } from '../api/sse.mjs';

const RETRY_MS = 200;           // TOCSIN_STREAM_RETRY_MS: EventSource reconnects after this
const EVENT_BOUND_MS = 15000;   // generous: a fired reminder is on the page within this
const TABS = 7;

// ---------------------------------------------------------------- the test page's origin

// Serves a blank page at / on 127.0.0.1 (the allowed origin; localhost:port is another origin).
async function startPageServer() {
    const server = http.createServer((req, res) => {
        res.writeHead(req.url === '/' ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
        res.end('<!doctype html><html><head><meta charset="utf-8"><title>tocsin test page</title></head><body></body></html>');
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { server, port: server.address().port };
}

// A TCP proxy to a replica: cut() closes every connection through it, to(port) changes where
// new connections go. It keeps the head of each request it forwarded.
class CutProxy {
    constructor(targetPort) {
        this.targetPort = targetPort;
        this.pairs = new Set();
        this.requests = [];
    }

    async start() {
        this.server = net.createServer((client) => {
            const up = net.connect(this.targetPort, '127.0.0.1');
            const pair = { client, up };
            this.pairs.add(pair);
            let head = '';
            const onHead = (d) => {
                head += d.toString('latin1');
                const end = head.indexOf('\r\n\r\n');
                if (end >= 0 || head.length > 16384) {
                    this.requests.push(head.slice(0, end >= 0 ? end : undefined));
                    client.off('data', onHead);
                }
            };
            client.on('data', onHead);
            client.pipe(up);
            up.pipe(client);
            const drop = () => {
                this.pairs.delete(pair);
                client.destroy();
                up.destroy();
            };
            client.on('error', drop).on('close', drop);
            up.on('error', drop).on('close', drop);
        });
        await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
        this.port = this.server.address().port;
        this.base = `http://127.0.0.1:${this.port}`;
        return this;
    }

    to(port) {
        this.targetPort = port;
    }

    cut() {
        const n = this.pairs.size;
        for (const p of [...this.pairs]) {
            p.client.destroy();
            p.up.destroy();
        }
        this.pairs.clear();
        return n;
    }

    // Stream requests seen so far: [{lastEventId}] (null: the request had no Last-Event-ID).
    streamRequests() {
        return this.requests.filter((r) => /^GET \/v1\/stream\b/.test(r)).map((r) => {
            const m = /\r\nlast-event-id: *([^\r]*)/i.exec(r);
            return { lastEventId: m ? m[1] : null };
        });
    }

    close() {
        this.cut();
        return new Promise((resolve) => this.server.close(resolve));
    }
}

// ---------------------------------------------------------------- set-up

const h = await harness('chromium');
let pages;
let origin;
let reps;
let proxy;
let key;
let tenantId;
let browser;
let chromium;
const open = [];

before(async () => {
    pages = await startPageServer();
    origin = `http://127.0.0.1:${pages.port}`;
    const env = {
        TOCSIN_CORS_ORIGINS: origin,
        TOCSIN_DEMO: '1',
        TOCSIN_STREAM_RETRY_MS: String(RETRY_MS),
        TOCSIN_STREAM_HEARTBEAT_MS: '1000',
        TOCSIN_REDIS_PREFIX: `chr${process.pid}`,
        TOCSIN_CLAIM_TTL_MS: '1000',
    };
    reps = [];
    for (let i = 0; i < 2; i++) {
        reps.push(await h.startServer({ ...env, TOCSIN_INSTANCE_ID: `replica-${i + 1}` }));
    }
    proxy = await new CutProxy(reps[0].port).start();
    key = await reps[0].createKey('chromium');
    tenantId = await tenantIdOf(h, 'chromium');
    chromium = await launchChromium();
    browser = chromium.browser;
});

afterEach(async () => {
    for (const p of open.splice(0)) {
        await p.close().catch(() => {});
    }
});

after(async () => {
    await chromium?.close();
    await proxy?.close();
    await new Promise((resolve) => pages.server.close(resolve));
    for (const r of reps) {
        await r.stop();
    }
});

// A new tab on url whose console errors are kept for failure messages.
async function tab(url) {
    const p = await browser.newPage();
    p.logs = [];
    p.on('console', (m) => p.logs.push(`${m.type()}: ${m.text()}`));
    p.on('pageerror', (e) => p.logs.push(`pageerror: ${e.message}`));
    p.on('response', (r) => { if (r.status() >= 400) p.logs.push(`http ${r.status()}: ${r.url()}`); });
    open.push(p);
    await p.goto(url, { waitUntil: 'load', timeout: EVENT_BOUND_MS });
    return p;
}

// Waits until fn (run in the page, with arg) is truthy; the page's log on failure.
async function pageWait(p, fn, arg, what, timeoutMs = EVENT_BOUND_MS) {
    try {
        await p.waitForFunction(fn, { timeout: timeoutMs, polling: 50 }, arg);
    } catch (e) {
        const state = await p.evaluate(() => JSON.stringify(window.t ?? null)).catch(() => '?');
        throw new Error(`${what}: ${e.message}\npage state: ${state.slice(0, 1500)}\npage log:\n${p.logs.join('\n')}`);
    }
}

const token = async (sub, scope = 'notifications', ttl_s = 900) => (await mintToken(reps[0], key, { sub, scope, ttl_s })).token;

// Creates `meetings` meetings of `per` due reminders for sub, `gapMs` apart, on the replicas in turn.
async function burst(sub, meetings, per, gapMs, servers = reps) {
    for (let i = 0; i < meetings; i++) {
        await meetingFiringNow(servers[i % servers.length], key, { participants: [{ id: sub }], n: per });
        await sleep(gapMs);
    }
}

// In the page: a native EventSource on url whose events go to window.t.
async function openEventSource(p, url) {
    await p.evaluate((u) => {
        window.t = { hello: [], reminders: [], errors: 0, opens: 0 };
        const es = new EventSource(u);
        window.es = es;
        es.addEventListener('open', () => { window.t.opens += 1; });
        es.addEventListener('error', () => { window.t.errors += 1; });
        es.addEventListener('hello', (e) => window.t.hello.push(JSON.parse(e.data)));
        es.addEventListener('reminder', (e) => window.t.reminders.push({ seq: Number(e.lastEventId), id: JSON.parse(e.data).id }));
    }, url);
    await pageWait(p, () => window.t.hello.length > 0, null, 'hello on the EventSource');
}

const pageReminders = (p) => p.evaluate(() => window.t.reminders);

// ---------------------------------------------------------------- the tests

test('CORS: the allowed origin creates a meeting with a browser token and reads ETag and Location; another origin is blocked', async () => {
    const tok = await token('cors-user', 'meetings:write meetings:read');
    const create = (api, t) => window.fetch(`${api}/v1/meetings`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${t}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ title: 'from a page', starts_at: new Date(Date.now() + 3600e3).toISOString() }),
    }).then(async (r) => ({ status: r.status, etag: r.headers.get('ETag'), location: r.headers.get('Location'), body: await r.json() }),
        (e) => ({ error: `${e.name}: ${e.message}` }));
    const p = await tab(`${origin}/`);
    const r = await p.evaluate(create, reps[0].base, tok);
    assert.equal(r.status, 201, JSON.stringify(r));
    assert.match(r.etag ?? '', /^"[^"]+"$/, 'ETag readable from the page');
    assert.equal(r.location, `/v1/meetings/${r.body.id}`, 'Location readable from the page');
    assert.equal(r.body.organizer_id, 'cors-user');
    const g = await reps[0].req('GET', r.location, { key });
    assert.equal(g.status, 200);
    assert.equal(g.header('etag'), r.etag);
    // The same page from localhost:B is another origin: the preflight fails, nothing is created.
    const before = await h.sql(`SELECT count(*) FROM meetings WHERE tenant_id = ${tenantId}`);
    const other = await tab(`http://localhost:${pages.port}/`);
    const blocked = await other.evaluate(create, reps[0].base, tok);
    assert.deepEqual(blocked, { error: 'TypeError: Failed to fetch' });
    assert.equal(await h.sql(`SELECT count(*) FROM meetings WHERE tenant_id = ${tenantId}`), before);
    const read = await other.evaluate((api, t) => window.fetch(`${api}/v1/meetings`, { headers: { Authorization: `Bearer ${t}` } })
        .then((x) => `status ${x.status}`, (e) => `${e.name}: ${e.message}`), reps[0].base, tok);
    assert.equal(read, 'TypeError: Failed to fetch');
});

test('a native EventSource with ?access_token= receives a reminder', async () => {
    const p = await tab(`${origin}/`);
    await openEventSource(p, `${reps[1].base}/v1/stream?access_token=${await token('es-user')}`);
    const m = await meetingFiringNow(reps[0], key, { participants: [{ id: 'es-user' }] });
    await pageWait(p, () => window.t.reminders.length >= 1, null, 'a reminder on the EventSource');
    const [got] = await pageReminders(p);
    const [want] = await dbEvents(h, tenantId, 'es-user');
    assert.equal(got.seq, want.seq);
    assert.equal(got.id, `rem_${m.reminders[0].id}_${Date.parse(m.reminders[0].fire_at)}`);
});

test('EventSource through a proxy that cuts mid-burst: reconnects with Last-Event-ID and gets exactly the missed events', async () => {
    const sub = 'es-cut';
    const p = await tab(`${origin}/`);
    proxy.to(reps[0].port);
    const before = proxy.streamRequests().length;
    await openEventSource(p, `${proxy.base}/v1/stream?access_token=${await token(sub)}`);
    const firing = burst(sub, 8, 5, 60); // 40 reminders over about a second
    await pageWait(p, () => window.t.reminders.length >= 8, null, 'the first reminders');
    assert.ok(proxy.cut() >= 1, 'a connection was cut');
    await firing;
    await pageWait(p, () => window.t.reminders.length >= 40, null, 'all 40 reminders');
    await sleep(500);
    const got = await pageReminders(p);
    assertOrderedUnique(got, 'across the cut');
    assert.deepEqual(got.map((r) => r.seq), (await dbEvents(h, tenantId, sub)).map((e) => e.seq));
    const reqs = proxy.streamRequests().slice(before);
    assert.ok(reqs.length >= 2, `${reqs.length} stream requests`);
    assert.equal(reqs[0].lastEventId, null, 'the first has no cursor');
    assert.match(reqs[1].lastEventId ?? '', /^\d+$/, 'the reconnection sends Last-Event-ID');
    const hello = await p.evaluate(() => window.t.hello);
    assert.equal(hello[1].resumed, true);
});

test('EventSource: kill -9 of the replica behind the proxy, the proxy turns to the other, nothing lost or repeated', async () => {
    const sub = 'es-kill';
    const victim = reps[0];
    proxy.to(victim.port);
    const p = await tab(`${origin}/`);
    await openEventSource(p, `${proxy.base}/v1/stream?access_token=${await token(sub)}`);
    const firing = burst(sub, 8, 5, 60, [reps[1]]);
    await pageWait(p, () => window.t.reminders.length >= 8, null, 'the first reminders');
    proxy.to(reps[1].port);
    await victim.kill();
    await firing;
    await pageWait(p, () => window.t.reminders.length >= 40, null, 'all 40 reminders');
    await sleep(500);
    const got = await pageReminders(p);
    assertOrderedUnique(got, 'across the kill');
    assert.deepEqual(got.map((r) => r.seq), (await dbEvents(h, tenantId, sub)).map((e) => e.seq));
    assert.ok((await p.evaluate(() => window.t.errors)) >= 1, 'the EventSource saw its connection fail');
    await victim.start();
});

// In the page: web/client.js from tocsin (a cross-origin module import), connect() with a token
// from the test (window.getTocsinToken, exposed per page), events into window.t.
async function openClient(p, { baseUrl, moduleBase = reps[1].base, shareTabs = false, heartbeatMs = 1000 }) {
    await p.evaluate(async (o) => {
        window.t = { reminders: [], states: [], tokens: 0, resets: 0 };
        const m = await import(`${o.moduleBase}/v1/client.js`);
        window.conn = m.connect({
            baseUrl: o.baseUrl,
            shareTabs: o.shareTabs,
            heartbeatMs: o.heartbeatMs,
            backoffBaseMs: 100,
            backoffMaxMs: 1000,
            getToken: async () => { window.t.tokens += 1; return window.getTocsinToken(); },
            onReminder: (n, { seq }) => window.t.reminders.push({ seq, id: n.id }),
            onReset: () => { window.t.resets += 1; },
            onState: (s, d) => window.t.states.push(`${s}/${d.role}`),
        });
    }, { baseUrl, moduleBase, shareTabs, heartbeatMs });
    await pageWait(p, () => window.conn.state() === 'open', null, 'the client open');
}

test('web/client.js resumes across cuts with exactly the missed events and takes a new token on reauth', async () => {
    const sub = 'client-cut';
    proxy.to(reps[1].port);
    const p = await tab(`${origin}/`);
    // Tokens of 35 s: reauth comes 30 s before exp, so within seconds of each connection.
    let minted = 0;
    await p.exposeFunction('getTocsinToken', async () => {
        minted += 1;
        return token(sub, 'notifications', 35);
    });
    await openClient(p, { baseUrl: proxy.base });
    const firing = burst(sub, 8, 5, 60, [reps[1]]);
    await pageWait(p, () => window.t.reminders.length >= 8, null, 'the first reminders');
    proxy.cut();
    await sleep(300);
    proxy.cut(); // and once more while it reconnects or reads the backlog
    await firing;
    await pageWait(p, () => window.t.reminders.length >= 40, null, 'all 40 reminders');
    // A reauth (at most about 5 s after a connection opened) gets a new token and a new connection.
    await pageWait(p, () => window.t.tokens >= 2 && window.conn.state() === 'open', null, 'a new token after reauth', 20000);
    await meetingFiringNow(reps[1], key, { participants: [{ id: sub }] });
    await pageWait(p, () => window.t.reminders.length >= 41, null, 'a reminder after the new token');
    await sleep(500);
    const got = await pageReminders(p);
    assertOrderedUnique(got, 'client across cuts and reauth');
    assert.deepEqual(got.map((r) => r.seq), (await dbEvents(h, tenantId, sub)).map((e) => e.seq));
    assert.ok(minted >= 2, `tokens minted: ${minted}`);
    const states = await p.evaluate(() => window.t.states);
    assert.ok(states.includes('reconnecting/solo'), `states: ${states.join(' ')}`);
});

test(`${TABS} tabs share one stream; when the reading tab closes another takes over`, async () => {
    const sub = 'tabs';
    const streamsOpen = async () => {
        const r = await reps[1].req('GET', '/metrics', { validate: false });
        return Number(/^tocsin_streams_open (\d+)$/m.exec(r.text)[1]);
    };
    assert.ok(await waitFor(async () => (await streamsOpen()) === 0, 10000), `streams open before: ${await streamsOpen()}`);
    const tabs = [];
    for (let i = 0; i < TABS; i++) {
        const p = await tab(`${origin}/`);
        await p.exposeFunction('getTocsinToken', () => token(sub));
        await openClient(p, { baseUrl: reps[1].base, shareTabs: true });
        tabs.push(p);
    }
    const roles = await Promise.all(tabs.map((p) => p.evaluate(() => window.conn.role())));
    assert.deepEqual(roles.filter((r) => r === 'leader').length, 1, `roles: ${roles}`);
    assert.equal(await streamsOpen(), 1, 'one stream for all tabs');
    await meetingFiringNow(reps[0], key, { participants: [{ id: sub }], n: 2 });
    for (const p of tabs) {
        await pageWait(p, () => window.t.reminders.length >= 2, null, 'both reminders in every tab');
    }
    // The leader goes away: another tab takes the lock and goes on from the shared cursor.
    const leader = tabs[roles.indexOf('leader')];
    await leader.close();
    const rest = tabs.filter((p) => p !== leader);
    await waitFor(async () => (await Promise.all(rest.map((p) => p.evaluate(() => window.conn.role())))).includes('leader'), 10000);
    await meetingFiringNow(reps[0], key, { participants: [{ id: sub }] });
    for (const p of rest) {
        await pageWait(p, () => window.t.reminders.length >= 3, null, 'the next reminder in every remaining tab');
    }
    await sleep(500);
    const want = (await dbEvents(h, tenantId, sub)).map((e) => e.seq);
    for (const p of rest) {
        const got = await pageReminders(p);
        assert.deepEqual(got.map((r) => r.seq), want, 'each tab: every reminder once');
    }
    assert.ok(await waitFor(async () => (await streamsOpen()) === 1, 10000), `streams open after the handover: ${await streamsOpen()}`);
});

test('the demo page shows a live reminder', async () => {
    const sub = 'demo-user';
    await meetingFiringNow(reps[0], key, { participants: [{ id: sub, name: 'Demo User' }], title: 'Already fired' });
    const tok = await token(sub, 'notifications meetings:read');
    const p = await tab(`${reps[0].base}/demo#token=${tok}&api=${encodeURIComponent(reps[0].base)}`);
    await pageWait(p, () => document.querySelector('#state')?.dataset.state === 'open', null, 'the demo connected');
    await pageWait(p, () => document.querySelectorAll('li.reminder').length >= 1, null, 'the inbox on the page');
    const m = await meetingFiringNow(reps[1], key, { participants: [{ id: sub, name: 'Demo User' }], title: 'Design review' });
    const occurrence = `rem_${m.reminders[0].id}_${Date.parse(m.reminders[0].fire_at)}`;
    await pageWait(p, (id) => document.querySelector(`li.reminder[data-live="true"][data-id="${id}"]`) !== null, occurrence,
        'the live reminder on the demo page');
    const text = await p.evaluate((id) => document.querySelector(`li.reminder[data-id="${id}"]`).textContent, occurrence);
    assert.match(text, /Design review/);
    assert.equal(await p.evaluate(() => document.querySelector('#who').textContent.includes('demo-user')), true);
});

test('the demo\'s unread badge agrees across two tabs on two replicas within a second', async () => {
    const sub = 'badge-user';
    for (const title of ['Standup', 'Planning', 'Retro']) {
        await meetingFiringNow(reps[0], key, { participants: [{ id: sub }], title });
    }
    assert.ok(await waitFor(async () => (await dbEvents(h, tenantId, sub)).length === 3, EVENT_BOUND_MS), 'three fired');
    const tok = await token(sub, 'notifications meetings:read');
    // Each page is served by, and streams from, its own replica: two origins share no stream.
    const tabs = [];
    for (const r of reps) {
        const p = await tab(`${r.base}/demo#token=${tok}&api=${encodeURIComponent(r.base)}`);
        await pageWait(p, () => document.querySelector('#state')?.dataset.state === 'open', null, `demo on ${r.base}`);
        await pageWait(p, () => document.querySelector('#unread')?.textContent === '3', null, 'three unread');
        tabs.push(p);
    }
    const badge = (p) => p.evaluate(() => document.querySelector('#unread').hidden ? '0' : document.querySelector('#unread').textContent);
    const [first, second] = tabs;
    const target = await first.evaluate(() => document.querySelector('li.reminder').dataset.seq);
    await first.bringToFront();
    await first.evaluate((seq) => document.querySelector(`li.reminder[data-seq="${seq}"] button.mark`).click(), target);
    await pageWait(first, () => document.querySelector('#unread').textContent === '2', null, 'its own badge');
    const start = Date.now();
    await pageWait(second, (seq) => document.querySelector('#unread').textContent === '2' &&
        document.querySelector(`li.reminder[data-seq="${seq}"]`).dataset.read === 'true', target, 'the other tab', 1000);
    const lagMs = Date.now() - start;
    // "Mark all as read" in the second tab empties both badges.
    await second.bringToFront();
    await second.evaluate(() => document.querySelector('#read-all').click());
    await pageWait(first, () => document.querySelector('#unread').hidden &&
        [...document.querySelectorAll('li.reminder')].every((li) => li.dataset.read === 'true'), null, 'all read, first tab', 1000);
    assert.equal(await badge(second), '0');
    for (const p of tabs) {
        assert.deepEqual(p.logs.filter((l) => /^(error|pageerror)/.test(l)), [], `no console error:\n${p.logs.join('\n')}`);
    }
    console.log(`# the other tab's badge followed ${lagMs} ms after the first tab's`);
});
