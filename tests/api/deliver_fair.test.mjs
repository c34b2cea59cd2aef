// deliver_fair.test.mjs -- fair delivery between tenants, against real receivers on loopback, with
// one delivery worker of a few slots so that a handful of rows fills it: tenant a's slow webhooks
// (2xx after SLOW_MS, well under the timeout) must not keep tenant b's fast webhook waiting
// (TOCSIN_DELIVERY_TENANT_SHARE bounds a tenant's share of a worker's slots), every row of the
// tenant held back is still delivered exactly once, and tocsin_delivery_tenant_deferred_total
// counts the rows that waited for their tenant's share; and a receiver whose successes take most
// of the timeout has its circuit opened like one that fails.
import assert from 'node:assert/strict';
import http from 'node:http';
import { harness, test, serveLocal, waitFor, sleep, MIN } from './harness.mjs';

const LEAD_MS = 1500;      // a reminder falls due this long after its meeting is created
const BOUND_MS = 30000;    // what must happen does within this
const SLOTS = 8;           // TOCSIN_DELIVERY_CONCURRENCY of the one worker
const PER_RECEIVER = 2;    // TOCSIN_DELIVERY_RECEIVER_CONCURRENCY
const SLOW_HOOKS = 4;      // tenant a's webhooks: SLOW_HOOKS * PER_RECEIVER fill every slot
const MEETINGS = 3;        // tenant a's meetings, each a row per webhook
const SLOW_MS = 4000;      // tenant a's receivers answer 200 this late
const FAST_BOUND_MS = 1500; // tenant b's delivery after its fire time, at most (ASan, a busy host)
const CIRCUIT_FAILURES = 5; // DELIVER_CIRCUIT_FAILURES (src/delivery/deliver_policy.h)

const hFair = await harness('deliver_fair');
const hSlow = await harness('deliver_fair_slow');

// A receiver on 127.0.0.1 that answers every request with 200 after delayMs, recording when each
// arrived and its webhook-id.
async function receiver(t, delayMs) {
    const rx = { got: [] };
    const server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            rx.got.push({ at: Date.now(), id: req.headers['webhook-id'] });
            setTimeout(() => res.writeHead(200).end(), delayMs);
        });
    });
    rx.url = await serveLocal(t, server);
    return rx;
}

async function register(srv, key, url) {
    const r = await srv.req('POST', '/v1/webhooks', { key, json: { url } });
    assert.equal(r.status, 201, r.text);
}

// A meeting whose single reminder falls due LEAD_MS from now.
async function dueSoon(srv, key, title) {
    const starts = new Date(Date.now() + LEAD_MS + 5 * MIN).toISOString();
    const r = await srv.req('POST', '/v1/meetings', { key, json: { title, starts_at: starts } });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

async function deliveries(srv, key, id) {
    const r = await srv.req('GET', `/v1/meetings/${id}/deliveries`, { key });
    assert.equal(r.status, 200, r.text);
    return r.json.items;
}

function sample(text, name) {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? null : Number(line.slice(name.length + 1));
}

async function scrape(srv) {
    const r = await srv.req('GET', '/metrics', { validate: false });
    assert.equal(r.status, 200, r.text);
    return r.text;
}

test('one tenant\'s slow receivers leave another tenant\'s delivery on time, and every held-back row goes once', async (t) => {
    const srv = await hFair.startServer({
        TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
        TOCSIN_DELIVERY_WORKERS: '1',
        TOCSIN_DELIVERY_CONCURRENCY: String(SLOTS),
        TOCSIN_DELIVERY_RECEIVER_CONCURRENCY: String(PER_RECEIVER),
        TOCSIN_DELIVERY_TENANT_SHARE: '50',
    });
    const ka = await srv.createKey('fair-a');
    const kb = await srv.createKey('fair-b');
    const slow = [];
    for (let i = 0; i < SLOW_HOOKS; i++) {
        slow.push(await receiver(t, SLOW_MS));
        await register(srv, ka, slow[i].url);
    }
    const fast = await receiver(t, 0);
    await register(srv, kb, fast.url);

    const ma = [];
    for (let i = 0; i < MEETINGS; i++) ma.push(await dueSoon(srv, ka, `slow ${i}`));
    // Tenant a's rows fire first and take what they may of the slots.
    const busy = await waitFor(() => slow.reduce((n, rx) => n + rx.got.length, 0) >= SLOTS / 2, BOUND_MS);
    assert.ok(busy, 'tenant a\'s receivers got nothing');
    const mb = await dueSoon(srv, kb, 'fast');
    const fireAt = Date.parse(mb.reminders[0].fire_at);
    assert.ok(await waitFor(() => fast.got.length >= 1, BOUND_MS), 'tenant b\'s webhook got nothing');
    const late = fast.got[0].at - fireAt;
    assert.ok(late <= FAST_BOUND_MS, `tenant b's delivery came ${late} ms after its fire time, behind tenant a's slow receivers`);
    // Tenant a's receivers were busy when it came: b did not just find a gap.
    assert.ok(slow.some((rx) => rx.got.some((g) => g.at < fast.got[0].at && g.at + SLOW_MS > fast.got[0].at)));

    // Every row of tenant a is delivered, each once: none lost while it waited for a slot.
    const all = async () => (await Promise.all(ma.map((m) => deliveries(srv, ka, m.id)))).flat();
    const done = await waitFor(async () => {
        const rows = await all();
        return rows.length === SLOW_HOOKS * MEETINGS && rows.every((d) => d.status === 'delivered') ? rows : null;
    }, BOUND_MS, 200);
    assert.ok(done, JSON.stringify(await all()));
    assert.ok(done.every((d) => d.attempts === 1), JSON.stringify(done));
    await sleep(500);
    for (const rx of slow) {
        assert.equal(rx.got.length, MEETINGS, 'each webhook got one request per meeting');
        assert.equal(new Set(rx.got.map((g) => g.id)).size, MEETINGS, 'no request sent twice');
    }
    const text = await scrape(srv);
    assert.ok(sample(text, 'tocsin_delivery_tenant_deferred_total') > 0, text);
    await srv.stop();
});

test('a receiver whose successes take most of the timeout opens its circuit like a failing one', async (t) => {
    const TIMEOUT_MS = 1000;
    const srv = await hSlow.startServer({
        TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
        TOCSIN_DELIVERY_WORKERS: '1',
        TOCSIN_DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS),
        TOCSIN_DELIVERY_RECEIVER_CONCURRENCY: '1',
    });
    const key = await srv.createKey('fair-slow');
    const rx = await receiver(t, TIMEOUT_MS * 0.7);
    await register(srv, key, rx.url);
    const ms = [];
    for (let i = 0; i < CIRCUIT_FAILURES + 2; i++) ms.push(await dueSoon(srv, key, `slow ${i}`));
    const opened = await waitFor(async () => {
        const line = (await scrape(srv)).split('\n').find((l) => l.startsWith('tocsin_delivery_circuits_open{channel="webhook"} '));
        return line !== undefined && Number(line.split(' ')[1]) === 1;
    }, BOUND_MS, 100);
    assert.ok(opened, 'no circuit opened for a receiver answering in 70 % of the timeout');
    assert.ok(rx.got.length >= CIRCUIT_FAILURES, `opened after ${rx.got.length} answers`);
    // Slow answers are still deliveries: every row ends delivered once.
    const done = await waitFor(async () => {
        const rows = (await Promise.all(ms.map((m) => deliveries(srv, key, m.id)))).flat();
        return rows.length === ms.length && rows.every((d) => d.status === 'delivered') ? rows : null;
    }, BOUND_MS, 200);
    assert.ok(done, 'not every slow row was delivered');
    assert.equal(new Set(rx.got.map((g) => g.id)).size, rx.got.length, 'no request sent twice');
    await srv.stop();
});
