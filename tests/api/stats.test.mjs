// stats.test.mjs -- GET /v1/stats against real servers: reminders fired for real and delivered
// to receivers on loopback (one answering 204, one always 500), then the stats of the window:
// counts exact (fired, delivered, failed, pending, due in the next hour), per channel, in
// buckets of the window's length, lateness present when something fired; another tenant and an
// empty one seeing only their own (zeros, null lateness); a bad window 400 naming it.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { harness, test, waitFor, MIN } from './harness.mjs';

const LEAD_MS = 1500;
const BOUND_MS = 20000;
const CHANNELS = ['webhook', 'push', 'email', 'stream'];

const h = await harness('stats');
let srv;
let key;
let otherKey;
let emptyKey;
const rxs = [];

async function receiver(status) {
    const rx = { got: 0 };
    rx.server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            rx.got++;
            res.writeHead(status).end();
        });
    });
    await new Promise((r) => rx.server.listen(0, '127.0.0.1', r));
    rx.url = `http://127.0.0.1:${rx.server.address().port}/hook`;
    rxs.push(rx);
    return rx;
}

async function register(k, url) {
    const r = await srv.req('POST', '/v1/webhooks', { key: k, json: { url } });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

async function meeting(k, title, startsInMs) {
    const starts = new Date(Date.now() + startsInMs).toISOString();
    const r = await srv.req('POST', '/v1/meetings', { key: k, json: { title, starts_at: starts } });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

const stats = (k, query = '') => srv.req('GET', `/v1/stats${query}`, { key: k });

before(async () => {
    srv = await h.startServer({
        TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
        TOCSIN_DELIVERY_RETRY_BASE_MS: '100',
        TOCSIN_DELIVERY_MAX_ATTEMPTS: '2',
    });
    key = await srv.createKey('stats');
    otherKey = await srv.createKey('stats-other');
    emptyKey = await srv.createKey('stats-empty');
    const ok = await receiver(204);
    const bad = await receiver(500);
    await register(key, ok.url);
    await register(key, bad.url);
    await register(otherKey, ok.url);
    // Three fire now (each: a delivered and a failed webhook row, a stream row); two more are
    // due in 20 and 40 minutes (their reminders 5 minutes before), one in 2 hours.
    for (const t of ['a', 'b', 'c']) {
        await meeting(key, `fires ${t}`, LEAD_MS + 5 * MIN);
    }
    await meeting(key, 'soon', 25 * MIN);
    await meeting(key, 'later', 45 * MIN);
    await meeting(key, 'much later', 125 * MIN);
    await meeting(otherKey, 'theirs', LEAD_MS + 5 * MIN);
    const settled = await waitFor(async () => {
        const r = await srv.req('GET', '/v1/deliveries?channel=webhook&limit=200', { key });
        return r.json.items.length === 6 && r.json.items.every((d) => d.status !== 'pending');
    }, BOUND_MS, 100);
    assert.ok(settled, 'the six webhook deliveries settled');
    assert.ok(await waitFor(async () => (await stats(otherKey)).json.channels.webhook.delivered === 1, BOUND_MS, 100));
});

after(async () => {
    for (const rx of rxs) {
        rx.server.closeAllConnections();
        await new Promise((r) => rx.server.close(() => r()));
    }
});

function assertLateness(l, what) {
    assert.ok(l.p50 !== null && l.p99 !== null && l.max !== null, `${what}: lateness set`);
    assert.ok(l.p50 >= 0 && l.p50 <= l.p99 && l.p99 <= l.max && l.max < BOUND_MS, `${what}: ${JSON.stringify(l)}`);
}

test('counts exact after known fires, deliveries and failures, per channel', async () => {
    // The stream rows as the deliveries API lists them: the counts must agree with it.
    const listed = (await srv.req('GET', '/v1/deliveries?limit=200', { key })).json.items;
    const r = await stats(key, '?window=1h');
    assert.equal(r.status, 200, r.text);
    assert.match(r.header('content-type'), /^application\/json/);
    const s = r.json;
    assert.equal(s.window, '1h');
    const span = Date.parse(s.to) - Date.parse(s.from);
    assert.equal(span, 3600 * 1000);
    assert.ok(Math.abs(Date.parse(s.to) - Date.now()) < 10000, s.to);
    assert.equal(s.fired, 3);
    assert.equal(s.due_next_hour, 2);
    assert.equal(s.pending, 0);
    assert.equal(s.skipped, 0);
    assert.equal(s.channels.webhook.delivered, 3);
    assert.equal(s.channels.webhook.failed, 3);
    assert.deepEqual(Object.keys(s.channels).sort(), [...CHANNELS].sort());
    for (const ch of CHANNELS) {
        const c = s.channels[ch];
        const mine = listed.filter((d) => d.channel === ch);
        assert.equal(c.delivered, mine.filter((d) => d.status === 'delivered').length, ch);
        assert.equal(c.failed, mine.filter((d) => d.status === 'failed').length, ch);
        assert.equal(c.pending, 0, ch);
        assert.equal(c.skipped, 0, ch);
    }
    assert.equal(s.delivered, listed.filter((d) => d.status === 'delivered').length);
    assert.equal(s.failed, 3);
    assertLateness(s.lateness_ms, 'fires');
    assertLateness(s.channels.webhook.lateness_ms, 'webhook');
    assert.deepEqual(s.channels.email.lateness_ms, { p50: null, p99: null, max: null });
});

test('buckets: 12 of 5 minutes for 1h, 24 of an hour for 24h, oldest first, summing to the totals', async () => {
    for (const [query, n, stepMs] of [['', 12, 5 * MIN], ['?window=24h', 24, 60 * MIN]]) {
        const s = (await stats(key, query)).json;
        assert.equal(s.window, query ? '24h' : '1h');
        assert.equal(s.buckets.length, n, query);
        s.buckets.forEach((b, i) => assert.equal(Date.parse(b.start), Date.parse(s.from) + i * stepMs, query));
        const sum = (f) => s.buckets.reduce((a, b) => a + b[f], 0);
        assert.equal(sum('fired'), s.fired);
        assert.equal(sum('delivered'), s.delivered);
        assert.equal(sum('failed'), s.failed);
        const last = s.buckets[n - 1];
        assert.equal(last.fired, 3, 'the fires are in the newest bucket');
        assert.ok(last.lateness_p50_ms <= last.lateness_p99_ms);
        assert.equal(s.buckets[0].lateness_p50_ms, null, 'nothing fired in the oldest');
        assert.equal(s.buckets[0].lateness_p99_ms, null);
    }
});

test('pending counts rows of the tenant that wait now', async () => {
    await h.sql(`UPDATE outbox SET status = 'pending', next_attempt_at = now() + interval '1 day'
                 WHERE id = (SELECT max(id) FROM outbox WHERE channel = 'webhook' AND status = 'failed'
                 AND tenant_id = (SELECT tenant_id FROM outbox WHERE channel = 'webhook' GROUP BY tenant_id
                 ORDER BY count(*) DESC LIMIT 1))`);
    const s = (await stats(key)).json;
    assert.equal(s.pending, 1);
    assert.equal(s.channels.webhook.pending, 1);
    assert.equal(s.failed, 2);
    assert.equal((await stats(otherKey)).json.pending, 0);
});

test('tenants see their own; an empty tenant zeros and null lateness', async () => {
    const o = (await stats(otherKey)).json;
    assert.equal(o.fired, 1);
    assert.equal(o.due_next_hour, 0);
    assert.equal(o.channels.webhook.failed, 0);
    const e = (await stats(emptyKey, '?window=24h')).json;
    for (const f of ['pending', 'due_next_hour', 'fired', 'delivered', 'failed', 'skipped']) {
        assert.equal(e[f], 0, f);
    }
    assert.deepEqual(e.lateness_ms, { p50: null, p99: null, max: null });
    for (const ch of CHANNELS) {
        assert.deepEqual(e.channels[ch], {
            pending: 0, delivered: 0, failed: 0, skipped: 0, lateness_ms: { p50: null, p99: null, max: null },
        }, ch);
    }
    assert.ok(e.buckets.every((b) => b.fired === 0 && b.delivered === 0 && b.lateness_p50_ms === null));
});

test('bad queries: 400 problem+json naming the parameter; no key 401', async () => {
    for (const q of ['?window=2h', '?window=', '?window=1h&window=1h', '?window=1H', '?limit=5']) {
        const r = await stats(key, q);
        assert.equal(r.status, 400, q);
        assert.match(r.header('content-type'), /^application\/problem\+json/, q);
        assert.equal(r.json.code, 'bad_query', q);
        assert.match(r.text, q.includes('limit') ? /limit/ : /window/, q);
    }
    assert.equal((await srv.req('GET', '/v1/stats', {})).status, 401);
});
