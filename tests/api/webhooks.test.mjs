// webhooks.test.mjs -- webhooks and delivery against real servers: registration rules (shape,
// private targets, tenant isolation, the secret shown once), then reminders fired for real and
// delivered to local receivers whose signatures are checked by the Standard Webhooks reference
// library (not our code): a receiver that fails twice, one that always fails, one that is down
// across a restart of tocsin, a webhook deleted with notifications still pending, SIGTERM with a
// request in flight, and a receiver slower than the delivery lease with two replicas.
import { before } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createRequire } from 'node:module';
import { harness, test, waitFor, sleep, MIN } from './harness.mjs';

const { Webhook } = createRequire(import.meta.url)('standardwebhooks');
const LEAD_MS = 1500;
const BOUND_MS = 20000; // generous bound for a delivery (or its retries) to be recorded

// Replicas on one database share its outbox, so each server configuration below gets a database of
// its own: a replica with other settings would otherwise take part in the deliveries under test.
const h = await harness('webhooks');
const hGuarded = await harness('webhooks_guarded');
const hRestart = await harness('webhooks_restart');
const hDeleted = await harness('webhooks_deleted');
const hStop = await harness('webhooks_sigterm');
const hSlow = await harness('webhooks_slow');
let guarded; // a server with the private-address guard on (the default)
let open;    // TOCSIN_WEBHOOK_ALLOW_PRIVATE=1, quick retries, three attempts
let key;
let otherKey;

before(async () => {
    guarded = await hGuarded.startServer();
    open = await h.startServer({
        TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
        TOCSIN_DELIVERY_RETRY_BASE_MS: '200',
        TOCSIN_DELIVERY_MAX_ATTEMPTS: '3',
        TOCSIN_LOG_LEVEL: 'info', // the fire and delivery lines an operator reads (below)
    });
    key = await open.createKey('hooks');
    otherKey = await open.createKey('hooks-other');
});

// A receiver on 127.0.0.1 answering each request with plan(n) (the n-th request, from 1), closed
// when test t ends, passed or not (an open server would keep this file's process alive).
async function receiver(t, plan = () => 204) {
    const rx = { got: [] };
    rx.server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
            rx.got.push({ headers: req.headers, body: Buffer.concat(chunks).toString(), method: req.method });
            res.writeHead(plan(rx.got.length)).end();
        });
    });
    await new Promise((r) => rx.server.listen(0, '127.0.0.1', r));
    rx.url = `http://127.0.0.1:${rx.server.address().port}/hook`;
    rx.close = () => new Promise((r) => {
        rx.server.closeAllConnections();
        rx.server.close(() => r());
    });
    t.after(rx.close);
    return rx;
}

async function register(srv, k, url, description) {
    const r = await srv.req('POST', '/v1/webhooks', { key: k, json: { url, ...(description ? { description } : {}) } });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

// A meeting whose single reminder fires LEAD_MS from now.
async function dueSoon(srv, k) {
    const starts = new Date(Date.now() + LEAD_MS + 5 * MIN).toISOString();
    const r = await srv.req('POST', '/v1/meetings', { key: k, json: { title: 'hook', starts_at: starts, metadata: { room: 7 } } });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

async function deliveriesWhen(srv, k, id, pred) {
    let last;
    await waitFor(async () => {
        last = await srv.req('GET', `/v1/meetings/${id}/deliveries`, { key: k });
        return last.status === 200 && pred(last.json.items);
    }, BOUND_MS, 100);
    return last;
}

test('registration: 201 with Location and the secret once; lists never show it; delete is 204 then 404', async () => {
    const w = await register(open, key, 'http://127.0.0.1:9/x', 'desk');
    assert.match(w.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    assert.equal(w.description, 'desk');
    const list = await open.req('GET', '/v1/webhooks', { key });
    assert.equal(list.status, 200);
    const mine = list.json.items.find((x) => x.id === w.id);
    assert.ok(mine && !('secret' in mine), 'listed without the secret');
    assert.equal((await open.req('GET', '/v1/webhooks', { key: otherKey })).json.items.some((x) => x.id === w.id), false);
    assert.equal((await open.req('DELETE', `/v1/webhooks/${w.id}`, { key: otherKey })).status, 404, 'other tenant');
    assert.equal((await open.req('DELETE', `/v1/webhooks/${w.id}`, { key })).status, 204);
    assert.equal((await open.req('DELETE', `/v1/webhooks/${w.id}`, { key })).status, 404, 'already deleted');
    assert.equal((await open.req('DELETE', '/v1/webhooks/not-a-uuid', { key })).status, 404);
});

test('bad webhook input: 400 validation naming the field, 415, and nothing stored', async () => {
    const before = (await open.req('GET', '/v1/webhooks', { key })).json.items.length;
    const cases = [
        [{}, 'url'], [{ url: 5 }, 'url'], [{ url: '' }, 'url'], [{ url: 'ftp://example.com/x' }, 'url'],
        [{ url: 'http://' }, 'url'], [{ url: 'not a url' }, 'url'], [{ url: 'http://u:p@127.0.0.1/' }, 'url'],
        [{ url: `http://127.0.0.1/${'a'.repeat(2049)}` }, 'url'], [{ url: 'http://127.0.0.1/\u0001' }, 'url'],
        [{ url: 'http://127.0.0.1/', description: 'd'.repeat(501) }, 'description'],
        [{ url: 'http://127.0.0.1/', extra: 1 }, 'extra'],
    ];
    for (const [json, field] of cases) {
        const r = await open.req('POST', '/v1/webhooks', { key, json });
        assert.equal(r.status, 400, `${JSON.stringify(json).slice(0, 80)}: ${r.text}`);
        assert.equal(r.json.code, 'validation');
        assert.ok(r.json.errors.some((e) => e.field === field), `${field} named in ${r.text}`);
    }
    const t = await open.req('POST', '/v1/webhooks', { key, body: 'url=x', headers: { 'Content-Type': 'text/plain' } });
    assert.equal(t.status, 415);
    assert.equal((await open.req('GET', '/v1/webhooks', { key })).json.items.length, before);
});

test('private targets are refused unless TOCSIN_WEBHOOK_ALLOW_PRIVATE=1; public ones are taken', async () => {
    const k = await guarded.createKey('hooks-guarded');
    for (const url of ['http://127.0.0.1/', 'http://localhost:8080/x', 'http://10.1.2.3/', 'http://192.168.0.1/',
        'http://172.16.5.4/', 'http://169.254.169.254/latest', 'http://[::1]/', 'http://[fd00::1]/',
        'http://[::ffff:127.0.0.1]/', 'http://0.0.0.0/', 'http://100.64.0.1/', 'https://[fe80::1]/']) {
        const r = await guarded.req('POST', '/v1/webhooks', { key: k, json: { url } });
        assert.equal(r.status, 400, `${url}: ${r.text}`);
        assert.equal(r.json.errors[0].field, 'url');
    }
    const ok = await guarded.req('POST', '/v1/webhooks', { key: k, json: { url: 'https://93.184.216.34/hook' } });
    assert.equal(ok.status, 201, ok.text);
});

test('delivery: signed per Standard Webhooks (checked by the reference library), retried after two failures with the same id and bytes', async (t) => {
    const rx = await receiver(t, (n) => (n <= 2 ? 500 : 200));
    const k = await open.createKey('hooks-deliver');
    const w = await register(open, k, rx.url);
    const m = await dueSoon(open, k);
    const d = await deliveriesWhen(open, k, m.id, (items) => items.length === 1 && items[0].status === 'delivered');
    assert.equal(d.json.items[0].status, 'delivered', d.text);
    assert.equal(d.json.items[0].attempts, 3);
    assert.equal(d.json.items[0].last_status, 200);
    assert.equal(d.json.items[0].webhook_id, w.id);
    assert.equal(rx.got.length, 3);
    const verifier = new Webhook(w.secret);
    for (const g of rx.got) {
        assert.equal(g.method, 'POST');
        assert.equal(g.headers['content-type'], 'application/json');
        verifier.verify(g.body, g.headers); // throws on a bad signature
        assert.equal(g.headers['webhook-id'], rx.got[0].headers['webhook-id'], 'stable webhook-id');
        assert.equal(g.body, rx.got[0].body, 'identical bytes on every attempt');
    }
    assert.throws(() => new Webhook(`whsec_${Buffer.from('wrong key').toString('base64')}`).verify(rx.got[0].body, rx.got[0].headers));
    const body = JSON.parse(rx.got[0].body);
    assert.equal(body.type, 'meeting.reminder');
    assert.equal(body.data.meeting.id, m.id);
    assert.deepEqual(body.data.meeting.metadata, { room: 7 });
    assert.equal(body.data.reminder.id, m.reminders[0].id);
    assert.equal(body.data.reminder.fire_at, m.reminders[0].fire_at);
    assert.equal(rx.got[0].headers['webhook-id'], `rem_${m.reminders[0].id}_${Date.parse(m.reminders[0].fire_at)}`);

    // An operator sees fires and deliveries at info level (rate-limited to one line a second each;
    // this is the server's first delivery, so its lines are not held back).
    assert.match(open.log, /INFO dispatch: fired \d+ reminders \(\d+ missed\), at most \d+ ms late/);
    assert.match(open.log, /INFO deliver: webhook delivery \d+ of reminder \d+ \(meeting [^)]+\) delivered \d+ ms after its fire time, attempt \d+/);
});

test('a receiver that always fails: failed after the last attempt, with the last error', async (t) => {
    const rx = await receiver(t, () => 500);
    const k = await open.createKey('hooks-fail');
    await register(open, k, rx.url);
    const m = await dueSoon(open, k);
    const d = await deliveriesWhen(open, k, m.id, (items) => items.length === 1 && items[0].status === 'failed');
    assert.equal(d.json.items[0].status, 'failed', d.text);
    assert.equal(d.json.items[0].attempts, 3);
    assert.equal(d.json.items[0].last_status, 500);
    assert.equal(d.json.items[0].last_error, 'HTTP 500');
    assert.equal(rx.got.length, 3);
    assert.equal((await open.req('GET', `/v1/meetings/${m.id}/deliveries`, { key: otherKey })).status, 404);
    // `open` alone serves this database: its counters hold this test's and the one before.
    const text = (await open.req('GET', '/metrics', { validate: false })).text;
    const counter = (name) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
    assert.equal(counter('tocsin_deliveries_delivered_total'), 1, text);
    assert.equal(counter('tocsin_delivery_attempts_failed_total'), 4, text);
    assert.equal(counter('tocsin_deliveries_failed_total'), 1, text);
});

test('failures answered in the same round as deliveries are recorded with their own error, once', async (t) => {
    // Two receivers, N webhooks on each: every request waits until all 2N are in, then all are
    // answered together and alternately, so one worker takes answers of both kinds in one round.
    // Such a round once wrote the deliveries' bodies as the failures' reasons: the database
    // refused them, the failed attempts went unrecorded, and the rows were sent again.
    const N = 20;
    let arrived = 0;
    const waiting = { 204: [], 500: [] };
    const hits = new Map(); // path on the failing receiver -> requests
    const release = () => {
        while (waiting[204].length + waiting[500].length > 0) {
            for (const q of [waiting[204], waiting[500]]) q.shift()?.();
        }
    };
    const servers = [];
    for (const status of [204, 500]) {
        const server = http.createServer((req, res) => {
            if (status === 500) hits.set(req.url, (hits.get(req.url) ?? 0) + 1);
            req.resume();
            req.on('end', () => {
                waiting[status].push(() => res.writeHead(status).end());
                if (++arrived >= 2 * N) release(); // and later ones (retries) at once
            });
        });
        await new Promise((r) => server.listen(0, '127.0.0.1', r));
        t.after(() => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }));
        servers.push(server);
    }
    const k = await open.createKey('hooks-mixed');
    for (const server of servers) {
        for (let i = 0; i < N; i++) await register(open, k, `http://127.0.0.1:${server.address().port}/hook${i}`);
    }
    const m = await dueSoon(open, k);
    // `open` makes three attempts: every failing row ends failed after exactly three requests.
    const d = await deliveriesWhen(open, k, m.id,
        (items) => items.length === 2 * N && items.every((x) => x.status !== 'pending'));
    const bad = d.json.items.filter((x) => x.status === 'failed');
    assert.equal(bad.length, N, d.text);
    for (const x of bad) {
        assert.equal(x.attempts, 3, d.text);
        assert.equal(x.last_status, 500, d.text);
        assert.equal(x.last_error, 'HTTP 500', d.text);
    }
    assert.deepEqual([...hits.values()], Array(N).fill(3), 'requests per failing webhook');
    assert.doesNotMatch(open.log, /not recorded/);
});

test('receiver down, tocsin restarted: the pending delivery resumes and arrives once', async (t) => {
    const srv = await hRestart.startServer({ TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1', TOCSIN_DELIVERY_RETRY_BASE_MS: '1000' });
    const k = await srv.createKey('hooks-restart');
    const rx = await receiver(t);
    const port = rx.server.address().port;
    await rx.close(); // the port is closed: attempts fail with a connection error
    const w = await register(srv, k, `http://127.0.0.1:${port}/hook`);
    const m = await dueSoon(srv, k);
    const p = await deliveriesWhen(srv, k, m.id, (items) => items.length === 1 && items[0].attempts >= 1);
    assert.equal(p.json.items[0].status, 'pending', p.text);
    assert.ok(p.json.items[0].last_error, 'the connection error is recorded');
    await srv.stop();
    const back = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => { back.got.push({ headers: req.headers, body: Buffer.concat(chunks).toString() }); res.writeHead(204).end(); });
    });
    back.got = [];
    await new Promise((r) => back.listen(port, '127.0.0.1', r));
    t.after(() => new Promise((r) => {
        back.closeAllConnections();
        back.close(() => r());
    }));
    await srv.start();
    const d = await deliveriesWhen(srv, k, m.id, (items) => items[0].status === 'delivered');
    assert.equal(d.json.items[0].status, 'delivered', d.text);
    assert.equal(back.got.length, 1);
    new Webhook(w.secret).verify(back.got[0].body, back.got[0].headers);
});

test('a webhook deleted while its notification is pending: recorded failed, never sent', async (t) => {
    const srv = await hDeleted.startServer({ TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1', TOCSIN_DELIVERY_RETRY_BASE_MS: '1500' });
    const k = await srv.createKey('hooks-deleted');
    const rx = await receiver(t, () => 503);
    const w = await register(srv, k, rx.url);
    const m = await dueSoon(srv, k);
    await deliveriesWhen(srv, k, m.id, (items) => items.length === 1 && items[0].attempts === 1);
    assert.equal((await srv.req('DELETE', `/v1/webhooks/${w.id}`, { key: k })).status, 204);
    const d = await deliveriesWhen(srv, k, m.id, (items) => items[0].status === 'failed');
    assert.equal(d.json.items[0].status, 'failed', d.text);
    assert.equal(d.json.items[0].last_error, 'webhook deleted');
    assert.equal(rx.got.length, 1, 'no request after the delete');
});

test('SIGTERM mid-delivery: the request in flight finishes and is recorded, the rest stay pending and are sent once after', async (t) => {
    const srv = await hStop.startServer({ TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1', TOCSIN_DELIVERY_WORKERS: '1' });
    const k = await srv.createKey('hooks-sigterm');
    const HOLD_MS = 4000;
    let arrived;
    const first = new Promise((r) => { arrived = r; });
    // Holds every answer HOLD_MS: the first request is in flight when the signal comes.
    const rx = await receiver(t, () => 200);
    rx.server.removeAllListeners('request');
    rx.server.on('request', (req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
            rx.got.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
            arrived();
            setTimeout(() => res.writeHead(200).end(), HOLD_MS);
        });
    });
    await register(srv, k, rx.url);
    const ms = [];
    for (let i = 0; i < 3; i++) {
        ms.push(await dueSoon(srv, k));
    }
    await first;
    // All three fired (outbox rows written) while the first request is still held.
    assert.ok(await waitFor(async () => (await hStop.sql('SELECT count(*) FROM outbox')) === '3', HOLD_MS - 500),
        'three outbox rows while the first request is held');
    const exit = await srv.stop();
    assert.deepEqual(exit, { code: 0, signal: null }, `graceful SIGTERM exit:\n${srv.log}`);
    const rows = (await hStop.sql(`SELECT status || ':' || coalesce(lease_owner, '-') FROM outbox ORDER BY id`)).split('\n');
    assert.equal(rows.length, 3, rows.join(' '));
    assert.equal(rows.filter((r) => r === 'delivered:-').length, rx.got.length, `in flight finished: ${rows.join(' ')}`);
    // Rows a worker held, queued or given and did not send were given back (a worker's lease names
    // it "<id>/<n>/<token>").
    assert.ok(rows.every((r) => r === 'delivered:-' || (r.startsWith('pending:') && !r.includes('/'))),
        `no worker lease kept: ${rows.join(' ')}`);
    await srv.start();
    for (const m of ms) {
        const d = await deliveriesWhen(srv, k, m.id, (items) => items.length === 1 && items[0].status === 'delivered');
        assert.equal(d.json.items[0].attempts, 1, d.text);
    }
    const ids = rx.got.map((g) => g.headers['webhook-id']);
    assert.equal(new Set(ids).size, 3, `each sent once: ${ids.join(' ')}`);
    assert.equal(ids.length, 3);
});

test('a receiver slower than the lease, two replicas: the lease is renewed during the request and the notification is sent once', async (t) => {
    const env = { TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1', TOCSIN_DELIVERY_TIMEOUT_MS: '9000', TOCSIN_DELIVERY_WORKERS: '2' };
    const a = await hSlow.startServer(env);
    await hSlow.startServer(env); // the other replica, polling the same outbox
    const k = await a.createKey('hooks-slow');
    const HOLD_MS = 6000; // four times the 1.5 s lease
    const rx = await receiver(t, () => 200);
    rx.server.removeAllListeners('request');
    rx.server.on('request', (req, res) => {
        req.resume();
        req.on('end', () => {
            rx.got.push({ headers: req.headers });
            setTimeout(() => res.writeHead(200).end(), HOLD_MS);
        });
    });
    await register(a, k, rx.url);
    const m = await dueSoon(a, k);
    const d = await deliveriesWhen(a, k, m.id, (items) => items.length === 1 && items[0].status === 'delivered');
    assert.equal(d.json.items[0].attempts, 1, d.text);
    await sleep(1000); // a second sender, if any, would have started long ago
    assert.equal(rx.got.length, 1, `sent ${rx.got.length} times`);
});

// A count-then-insert limit must hold under concurrency: the tenant's requests are serialized
// (db_tenant_lock), so 40 parallel POSTs at 95 webhooks make exactly 5 more. Each POST goes on a
// connection of its own (agent-free http.request), so they really run side by side. A second
// connection holds the tenant's row: with the tenant lock every request waits before it counts;
// without it each counted 95, inserted, and waited only at the foreign key check of its new row,
// so all of them were created once the row was free (105 and more).
test('the webhook limit holds under 40 parallel registrations', async () => {
    const k = await guarded.createKey('hooks-limit');
    const url = 'https://93.184.216.34/hook';
    for (let i = 0; i < 95; i++) {
        const r = await guarded.req('POST', '/v1/webhooks', { key: k, json: { url: `${url}/${i}` } });
        assert.equal(r.status, 201, r.text);
    }
    const post = (i) => new Promise((resolve, reject) => {
        const body = JSON.stringify({ url: `${url}/p${i}` });
        const req = http.request({
            host: '127.0.0.1', port: guarded.port, path: '/v1/webhooks', method: 'POST', agent: false,
            headers: { Authorization: `Bearer ${k}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
        }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode));
        });
        req.on('error', reject);
        req.end(body);
    });
    const s = hGuarded.session();
    let statuses;
    try {
        await s.query('BEGIN');
        await s.query("SELECT 1 FROM tenants WHERE name = 'hooks-limit' FOR UPDATE");
        const all = Promise.all(Array.from({ length: 40 }, (_, i) => post(i)));
        const waiting = async () => Number(await hGuarded.sql(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"));
        // At most TOCSIN_HTTP_THREADS (16) wait: one request per server thread; often fewer.
        await waitFor(async () => (await waiting()) >= 16, 3000);
        await s.query('COMMIT');
        statuses = await all;
    } finally {
        await s.close();
    }
    assert.equal(statuses.filter((c) => c === 201).length, 5, `statuses: ${statuses.join(',')}`);
    assert.equal(statuses.filter((c) => c === 409).length, 35, `statuses: ${statuses.join(',')}`);
    const list = await guarded.req('GET', '/v1/webhooks', { key: k });
    assert.equal(list.json.items.length, 100, 'exactly the limit');
});
