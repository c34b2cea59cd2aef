// deliveries.test.mjs -- the operator's delivery API against real servers: reminders fired for
// real and delivered to receivers on loopback (one answering 204, one always 500), then the
// tenant-wide search GET /v1/deliveries: every filter alone and together, q over the meeting's
// title, the recipient and the last error (case-insensitive, LIKE's wildcards taken literally),
// newest first and paged by cursor without a gap or a repeat, another tenant seeing nothing, and
// each bad parameter answered 400 problem+json naming it; one delivery with its attempts, each
// written with its outcome (time, outcome, HTTP status, duration, error, replica); a retry and a
// webhook's recover since a time, each delivery sent exactly once more across two replicas.
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createRequire } from 'node:module';
import { harness, test, waitFor, sleep, MIN } from './harness.mjs';

const { Webhook } = createRequire(import.meta.url)('standardwebhooks');

const LEAD_MS = 1500;
const BOUND_MS = 20000; // for the fired reminders' deliveries to settle

const h = await harness('deliveries');
// Quick retries, two attempts: a failing receiver's deliveries fail within a second.
const SERVER_ENV = {
    TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
    TOCSIN_DELIVERY_RETRY_BASE_MS: '100',
    TOCSIN_DELIVERY_MAX_ATTEMPTS: '2',
};
let srv;
let key;
let otherKey;
const fx = {}; // the fixture: webhooks, meetings and their settled deliveries

async function receiver(t, status) {
    const rx = { got: [] };
    rx.server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
            rx.got.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
            const want = rx.status ?? status;
            const code = typeof want === 'function' ? want(rx.got.length) : want;
            setTimeout(() => res.writeHead(code).end(), rx.delayMs ?? 0);
        });
    });
    await new Promise((r) => rx.server.listen(0, '127.0.0.1', r));
    rx.url = `http://127.0.0.1:${rx.server.address().port}/hook`;
    if (t) {
        t.after(() => new Promise((r) => {
            rx.server.closeAllConnections();
            rx.server.close(() => r());
        }));
    }
    return rx;
}

async function register(k, url) {
    const r = await srv.req('POST', '/v1/webhooks', { key: k, json: { url } });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

async function dueSoon(k, title) {
    const starts = new Date(Date.now() + LEAD_MS + 5 * MIN).toISOString();
    const r = await srv.req('POST', '/v1/meetings', { key: k, json: { title, starts_at: starts } });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

const search = (query, k = key) => srv.req('GET', `/v1/deliveries${query ? `?${query}` : ''}`, { key: k });

// Every page of a search, following next_cursor; the items in order.
async function allPages(query, k = key) {
    const items = [];
    let cursor = null;
    for (let i = 0; i < 100; i++) {
        const r = await search([query, cursor && `cursor=${encodeURIComponent(cursor)}`].filter(Boolean).join('&'), k);
        assert.equal(r.status, 200, r.text);
        items.push(...r.json.items);
        cursor = r.json.next_cursor;
        if (cursor === null) {
            return items;
        }
    }
    throw new Error('more than 100 pages');
}

const ids = (items) => items.map((d) => d.id);
const byIdDesc = (a, b) => Number(BigInt(b.id) - BigInt(a.id));

before(async () => {
    srv = await h.startServer({ ...SERVER_ENV, TOCSIN_INSTANCE_ID: 'ops-replica-a' });
    key = await srv.createKey('ops');
    otherKey = await srv.createKey('ops-other');
    fx.ok = await receiver(null, 204);
    fx.ok.delayMs = 120; // so that an attempt's duration shows it
    fx.bad = await receiver(null, 500);
    fx.hookOk = await register(key, fx.ok.url);
    fx.hookBad = await register(key, fx.bad.url);
    fx.hookTheirs = await register(otherKey, fx.ok.url);
    fx.planning = await dueSoon(key, 'Quarterly Planning Review');
    fx.standup = await dueSoon(key, 'Daily 100%_standup');
    fx.theirs = await dueSoon(otherKey, 'Quarterly Planning Review');
    // Two meetings x two webhooks, all settled; and the other tenant's one.
    const settled = await waitFor(async () => {
        const r = await search('limit=200');
        const mine = r.json.items.filter((d) => d.channel === 'webhook');
        return mine.length === 4 && mine.every((d) => d.status !== 'pending') && r;
    }, BOUND_MS, 100);
    assert.ok(settled, 'the four webhook deliveries settled');
    fx.all = settled.json.items;
    assert.ok(await waitFor(async () => (await search('status=delivered', otherKey)).json.items.length === 1, BOUND_MS, 100));
});

after(async () => {
    for (const rx of [fx.ok, fx.bad]) {
        rx?.server.closeAllConnections();
        await new Promise((r) => (rx ? rx.server.close(() => r()) : r()));
    }
});

test('the search lists every delivery of the tenant, newest first, each with its meeting', () => {
    const all = fx.all;
    assert.deepEqual(ids(all), ids([...all].sort(byIdDesc)), 'newest first');
    const meetings = new Set(all.map((d) => d.meeting_id));
    assert.deepEqual([...meetings].sort(), [fx.planning.id, fx.standup.id].sort(), 'mine only');
    for (const d of all) {
        const m = d.meeting_id === fx.planning.id ? fx.planning : fx.standup;
        assert.equal(d.meeting_title, m.title);
    }
    const webhooks = all.filter((d) => d.channel === 'webhook');
    assert.equal(webhooks.filter((d) => d.webhook_id === fx.hookOk.id && d.status === 'delivered').length, 2);
    assert.equal(webhooks.filter((d) => d.webhook_id === fx.hookBad.id && d.status === 'failed').length, 2);
});

test('each filter alone and together', async () => {
    const all = fx.all;
    const want = (pred) => ids(all.filter(pred));
    const cases = [
        ['status=failed', (d) => d.status === 'failed'],
        ['status=delivered', (d) => d.status === 'delivered'],
        ['status=pending', () => false],
        ['status=skipped', () => false],
        ['channel=webhook', (d) => d.channel === 'webhook'],
        ['channel=stream', (d) => d.channel === 'stream'],
        ['channel=email', () => false],
        [`webhook_id=${fx.hookBad.id}`, (d) => d.webhook_id === fx.hookBad.id],
        [`meeting_id=${fx.standup.id}`, (d) => d.meeting_id === fx.standup.id],
        [`meeting_id=${fx.theirs.id}`, () => false], // another tenant's meeting: nothing of it
        [`status=delivered&meeting_id=${fx.planning.id}&channel=webhook`,
            (d) => d.status === 'delivered' && d.meeting_id === fx.planning.id && d.channel === 'webhook'],
        [`from=${encodeURIComponent(new Date(Date.now() + 60 * MIN).toISOString())}`, () => false],
        [`to=${encodeURIComponent(new Date(Date.now() + 60 * MIN).toISOString())}`, () => true],
        [`from=2020-01-01T00:00:00Z&to=${encodeURIComponent(fx.planning.reminders[0].fire_at)}`,
            (d) => Date.parse(d.fire_at) < Date.parse(fx.planning.reminders[0].fire_at)],
    ];
    for (const [query, pred] of cases) {
        assert.deepEqual(ids(await allPages(query)), want(pred), query);
    }
});

test('q: a case-insensitive substring of the title, the recipient or the last error; wildcards are literal', async () => {
    const all = fx.all;
    const want = (pred) => ids(all.filter(pred));
    assert.deepEqual(ids(await allPages('q=PLANNING')), want((d) => d.meeting_id === fx.planning.id));
    assert.deepEqual(ids(await allPages('q=planning%20rev')), want((d) => d.meeting_id === fx.planning.id));
    assert.deepEqual(ids(await allPages('q=http%20500')), want((d) => d.last_error === 'HTTP 500'));
    assert.deepEqual(ids(await allPages('q=http%20500&status=delivered')), []);
    assert.deepEqual(ids(await allPages(`q=${encodeURIComponent('100%_s')}`)), want((d) => d.meeting_id === fx.standup.id));
    assert.deepEqual(ids(await allPages(`q=${encodeURIComponent('%')}`)), want((d) => d.meeting_id === fx.standup.id));
    assert.deepEqual(ids(await allPages(`q=${encodeURIComponent('Quarterly_Planning')}`)), [], '_ is no wildcard');
    assert.deepEqual(ids(await allPages('q=no-such-thing')), []);
    // The recipient (a participant's id on push and email rows), set here by hand on one row.
    const one = all.find((d) => d.status === 'delivered');
    await h.sql(`UPDATE outbox SET recipient = 'Alice-Ops' WHERE id = ${Number(one.id)}`);
    try {
        assert.deepEqual(ids(await allPages('q=alice-OPS')), [one.id]);
        assert.deepEqual(ids(await allPages('q=alice-ops', otherKey)), [], 'not across tenants');
    } finally {
        await h.sql(`UPDATE outbox SET recipient = NULL WHERE id = ${Number(one.id)}`);
    }
});

test('pages: limit and cursor walk every match once, in order, the filters kept', async () => {
    for (const query of ['', 'status=failed', 'q=quarterly', 'channel=webhook']) {
        const whole = ids(await allPages(`${query}&limit=200`.replace(/^&/, '')));
        const paged = ids(await allPages(`${query}&limit=1`.replace(/^&/, '')));
        assert.deepEqual(paged, whole, query);
        assert.equal(new Set(paged).size, paged.length, `no repeat: ${query}`);
    }
    const first = await search('limit=2');
    assert.equal(first.json.items.length, 2);
    assert.equal(typeof first.json.next_cursor, 'string');
    // The other tenant's cursor walk starts from its own rows only.
    const theirs = await allPages('limit=1', otherKey);
    assert.ok(theirs.length >= 1 && theirs.every((d) => d.meeting_id === fx.theirs.id), JSON.stringify(theirs));
    // A cursor read by another tenant shows that tenant's rows only.
    const crossed = await search(`cursor=${encodeURIComponent(first.json.next_cursor)}`, otherKey);
    assert.equal(crossed.status, 200);
    assert.ok(crossed.json.items.every((d) => d.meeting_id === fx.theirs.id));
});

test('bad parameters: 400 problem+json naming the parameter', async () => {
    const meetingCursor = Buffer.from('d1:5').toString('hex'); // another endpoint's cursor
    const cases = [
        ['status=lost', 'status'], ['status=Failed', 'status'], ['status=', 'status'],
        ['status=failed&status=pending', 'status'], ['channel=sms', 'channel'],
        ['webhook_id=nope', 'webhook_id'], [`meeting_id=${fx.planning.id.toUpperCase()}`, 'meeting_id'],
        ['from=yesterday', 'from'], ['to=2030-01-01', 'to'],
        ['from=2030-01-02T00:00:00Z&to=2030-01-01T00:00:00Z', 'from'],
        ['q=', 'q'], [`q=${'x'.repeat(201)}`, 'q'], ['q=%FF', 'q'], ['q=a&q=b', 'q'],
        ['limit=0', 'limit'], ['limit=201', 'limit'], ['limit=1x', 'limit'],
        ['cursor=zz', 'cursor'], [`cursor=${meetingCursor}`, 'cursor'],
        [`cursor=${Buffer.from('s1:-1').toString('hex')}`, 'cursor'],
        [`cursor=${Buffer.from('s1:99999999999999999999').toString('hex')}`, 'cursor'],
        ['receiver=x', 'receiver'],
    ];
    for (const [query, field] of cases) {
        const r = await search(query);
        assert.equal(r.status, 400, `${query}: ${r.text}`);
        assert.equal(r.header('content-type'), 'application/problem+json', query);
        assert.equal(r.json.code, 'bad_query', query);
        assert.equal(r.json.errors[0].field, field, `${query}: ${r.text}`);
    }
    assert.equal(q200(await search(`q=${'x'.repeat(200)}`)), 0, 'q at its bound');
});

function q200(r) {
    assert.equal(r.status, 200, r.text);
    return r.json.items.length;
}

test('only API keys: no key is 401, a browser token 403', async () => {
    assert.equal((await srv.req('GET', '/v1/deliveries')).status, 401);
    const tok = await srv.req('POST', '/v1/browser-tokens', { key, json: { sub: 'p1', scope: 'notifications' } });
    assert.equal(tok.status, 201, tok.text);
    assert.equal((await srv.req('GET', '/v1/deliveries', { key: tok.json.token })).status, 403);
});

test('one delivery with its attempts: each recorded with its outcome, HTTP status, duration, error and replica', async () => {
    const failed = fx.all.find((d) => d.status === 'failed');
    const r = await srv.req('GET', `/v1/deliveries/${failed.id}`, { key });
    assert.equal(r.status, 200, r.text);
    const d = r.json;
    assert.equal(d.id, failed.id);
    assert.equal(d.meeting_id, failed.meeting_id);
    assert.equal(d.meeting_title, failed.meeting_title);
    assert.equal(d.status, 'failed');
    assert.equal(d.attempt_count, 2);
    assert.deepEqual(d.attempts.map((a) => [a.n, a.status, a.http_status, a.error, a.instance]),
        [[1, 'failed', 500, 'HTTP 500', 'ops-replica-a'], [2, 'failed', 500, 'HTTP 500', 'ops-replica-a']]);
    assert.ok(Date.parse(d.attempts[0].at) <= Date.parse(d.attempts[1].at), 'oldest first');
    assert.ok(Date.parse(d.attempts[0].at) >= Date.parse(d.fire_at) - 1000, 'after the fire');
    assert.ok(d.attempts.every((a) => a.duration_ms >= 0 && a.duration_ms < 10000));

    const delivered = fx.all.find((x) => x.status === 'delivered' && x.channel === 'webhook');
    const ok = (await srv.req('GET', `/v1/deliveries/${delivered.id}`, { key })).json;
    assert.equal(ok.attempt_count, 1);
    assert.equal(ok.attempts.length, 1);
    assert.equal(ok.attempts[0].status, 'delivered');
    assert.equal(ok.attempts[0].http_status, 204);
    assert.equal(ok.attempts[0].error, null);
    assert.ok(ok.attempts[0].duration_ms >= 100, `the receiver took 120 ms: ${ok.attempts[0].duration_ms}`);
});

test('webhook health from the recorded attempts: healthy, failing; in the list and one by one', async () => {
    const list = (await srv.req('GET', '/v1/webhooks', { key })).json.items;
    const ok = list.find((w) => w.id === fx.hookOk.id).health;
    assert.equal(ok.state, 'healthy');
    assert.equal(ok.attempts_1h, 2);
    assert.equal(ok.success_rate_1h, 1);
    assert.ok(Date.parse(ok.last_success_at) > 0);
    assert.equal(ok.last_failure_at, null);
    assert.equal(ok.last_error, null);
    const bad = (await srv.req('GET', `/v1/webhooks/${fx.hookBad.id}`, { key })).json.health;
    assert.deepEqual({ ...bad, last_failure_at: typeof bad.last_failure_at },
        { state: 'failing', attempts_1h: 4, success_rate_1h: 0, last_success_at: null,
            last_failure_at: 'string', last_error: 'HTTP 500' });
    const fresh = await register(otherKey, 'http://127.0.0.1:9/never');
    const none = (await srv.req('GET', `/v1/webhooks/${fresh.id}`, { key: otherKey })).json.health;
    assert.deepEqual(none, { state: 'healthy', attempts_1h: 0, success_rate_1h: null, last_success_at: null,
        last_failure_at: null, last_error: null });
});

test('a delivery of another tenant, or no delivery, is 404 delivery_not_found', async () => {
    const mine = fx.all[0];
    const r = await srv.req('GET', `/v1/deliveries/${mine.id}`, { key: otherKey });
    assert.equal(r.status, 404, r.text);
    assert.equal(r.json.code, 'delivery_not_found');
    for (const id of ['0', '999999999', 'abc', '-1', '1.5', '99999999999999999999', '%20']) {
        const x = await srv.req('GET', `/v1/deliveries/${id}`, { key });
        assert.equal(x.status, 404, `${id}: ${x.text}`);
    }
    assert.equal((await srv.req('GET', `/v1/deliveries/${mine.id}?x=1`, { key })).status, 400, 'no query taken');
});

// The requests a receiver got for one delivery (its webhook-id).
const sentFor = (rx, webhookId) => rx.got.filter((g) => g.headers['webhook-id'] === webhookId);
const webhookIdOf = (d) => `rem_${d.reminder_id}_${Date.parse(d.fire_at)}`;

async function deliveryWhen(k, id, pred) {
    let last;
    await waitFor(async () => {
        last = await srv.req('GET', `/v1/deliveries/${id}`, { key: k });
        return last.status === 200 && pred(last.json);
    }, BOUND_MS, 100);
    return last.json;
}

test('retry: a failed delivery goes out once more with the same webhook-id and a new attempt; a delivered one is resent', async () => {
    const failed = fx.all.find((d) => d.status === 'failed' && d.webhook_id === fx.hookBad.id);
    const before = sentFor(fx.bad, webhookIdOf(failed)).length;
    assert.equal(before, 2, 'two attempts so far');
    fx.bad.status = 204; // the receiver is fixed
    const r = await srv.req('POST', `/v1/deliveries/${failed.id}/retry`, { key });
    assert.equal(r.status, 202, r.text);
    assert.deepEqual(r.json, { status: 'pending' });
    const d = await deliveryWhen(key, failed.id, (x) => x.status === 'delivered');
    assert.equal(d.status, 'delivered');
    assert.equal(d.attempt_count, 3);
    assert.deepEqual(d.attempts.map((a) => a.status), ['failed', 'failed', 'delivered']);
    assert.equal(sentFor(fx.bad, webhookIdOf(failed)).length, before + 1, 'sent once more');

    const delivered = fx.all.find((x) => x.status === 'delivered' && x.webhook_id === fx.hookOk.id);
    const sent = sentFor(fx.ok, webhookIdOf(delivered)).length;
    assert.equal((await srv.req('POST', `/v1/deliveries/${delivered.id}/retry`, { key })).status, 202);
    const again = await deliveryWhen(key, delivered.id, (x) => x.status === 'delivered' && x.attempt_count === 2);
    assert.equal(again.attempts.length, 2);
    assert.equal(sentFor(fx.ok, webhookIdOf(delivered)).length, sent + 1, 'resent once');
});

test('retry: a pending delivery is 409, another tenant\'s or none 404', async () => {
    const d = fx.all.find((x) => x.webhook_id === fx.hookOk.id);
    await h.sql(`UPDATE outbox SET status = 'pending', next_attempt_at = now() + interval '1 hour' WHERE id = ${Number(d.id)}`);
    try {
        const r = await srv.req('POST', `/v1/deliveries/${d.id}/retry`, { key });
        assert.equal(r.status, 409, r.text);
        assert.equal(r.json.code, 'delivery_pending');
    } finally {
        await h.sql(`UPDATE outbox SET status = 'delivered' WHERE id = ${Number(d.id)}`);
    }
    const other = await srv.req('POST', `/v1/deliveries/${d.id}/retry`, { key: otherKey });
    assert.equal(other.status, 404, other.text);
    assert.equal(other.json.code, 'delivery_not_found');
    assert.equal((await srv.req('POST', '/v1/deliveries/abc/retry', { key })).status, 404);
    assert.equal((await srv.req('POST', '/v1/deliveries/999999999/retry', { key })).status, 404);
    assert.equal((await srv.req('GET', `/v1/deliveries/${d.id}/retry`, { key })).status, 405);
});

test('recover since a time: every failed delivery of the webhook sent once more, exactly once across two replicas', async (t) => {
    const N = 12;
    const k = await srv.createKey('ops-recover');
    const rx = await receiver(t, () => rx.status);
    rx.status = 422; // a failure that is no sign of trouble: no circuit opens over a dozen of them
    const hook = await register(k, rx.url);
    const other = await register(k, fx.ok.url); // its deliveries stay as they are
    const since = new Date().toISOString();
    const meetings = [];
    for (let i = 0; i < N; i++) {
        meetings.push(await dueSoon(k, `recover ${i}`));
    }
    const failedNow = async () => (await allPages(`webhook_id=${hook.id}&status=failed`, k));
    assert.ok(await waitFor(async () => (await failedNow()).length === N, BOUND_MS, 200), 'all failed');
    const failed = await failedNow();
    assert.equal(rx.got.length, 2 * N);

    // Validation first: nothing is queued by a bad request.
    const bad = [
        [{ since: new Date(Date.now() + 60 * MIN).toISOString() }, 'since'], [{}, 'since'],
        [{ since: 'yesterday' }, 'since'], [{ since: 5 }, 'since'], [{ since, extra: 1 }, 'extra'],
    ];
    for (const [json, field] of bad) {
        const r = await srv.req('POST', `/v1/webhooks/${hook.id}/recover`, { key: k, json });
        assert.equal(r.status, 400, `${JSON.stringify(json)}: ${r.text}`);
        assert.equal(r.json.code, 'validation');
        assert.equal(r.json.errors[0].field, field);
    }
    assert.equal((await srv.req('POST', `/v1/webhooks/${hook.id}/recover`, { key: k, body: '{', headers: { 'Content-Type': 'application/json' } })).status, 400);
    assert.equal((await srv.req('POST', `/v1/webhooks/${hook.id}/recover`, { key: k, body: 'since=x', headers: { 'Content-Type': 'text/plain' } })).status, 415);
    const foreign = await srv.req('POST', `/v1/webhooks/${hook.id}/recover`, { key, json: { since } });
    assert.equal(foreign.status, 404, foreign.text);
    assert.equal(foreign.json.code, 'webhook_not_found');
    assert.equal((await srv.req('POST', '/v1/webhooks/nope/recover', { key: k, json: { since } })).status, 404);
    const late = await srv.req('POST', `/v1/webhooks/${hook.id}/recover`, { key: k, json: { since: new Date().toISOString() } });
    assert.equal(late.status, 202, late.text);
    assert.equal(late.json.queued, 0, 'nothing fired since now');
    assert.equal((await failedNow()).length, N);

    const open = (await srv.req('GET', `/v1/webhooks/${hook.id}`, { key: k })).json.health;
    assert.equal(open.state, 'open', JSON.stringify(open));
    assert.equal(open.attempts_1h, 2 * N);
    assert.equal(open.last_error, 'HTTP 422');

    // A second replica on the same database: the two share the re-queued rows.
    const second = await h.startServer({ ...SERVER_ENV, TOCSIN_INSTANCE_ID: 'ops-replica-b' });
    t.after(() => second.stop());
    rx.status = 204;
    const r = await srv.req('POST', `/v1/webhooks/${hook.id}/recover`, { key: k, json: { since } });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.json.queued, N);
    assert.ok(await waitFor(async () => (await allPages(`webhook_id=${hook.id}&status=delivered`, k)).length === N,
        BOUND_MS, 100), 'all delivered');
    for (const d of failed) {
        assert.equal(sentFor(rx, webhookIdOf(d)).length, 3, `${d.id}: two failures, then once`);
        const x = (await srv.req('GET', `/v1/deliveries/${d.id}`, { key: k })).json;
        assert.deepEqual(x.attempts.map((a) => a.status), ['failed', 'failed', 'delivered']);
        assert.ok(['ops-replica-a', 'ops-replica-b'].includes(x.attempts[2].instance));
    }
    assert.equal(rx.got.length, 3 * N, 'nothing sent twice');
    const healed = (await srv.req('GET', `/v1/webhooks/${hook.id}`, { key: k })).json.health;
    assert.equal(healed.state, 'healthy');
    assert.equal(healed.attempts_1h, 3 * N);
    assert.equal(healed.success_rate_1h, N / (3 * N));
    const again = await srv.req('POST', `/v1/webhooks/${hook.id}/recover`, { key: k, json: { since } });
    assert.equal(again.json.queued, 0, 'no failed delivery left');
    assert.equal((await allPages(`webhook_id=${other.id}&status=delivered`, k)).length, N, 'the other webhook untouched');
    const del = await srv.req('DELETE', `/v1/webhooks/${hook.id}`, { key: k });
    assert.equal(del.status, 204);
    assert.equal((await srv.req('POST', `/v1/webhooks/${hook.id}/recover`, { key: k, json: { since } })).status, 404, 'deleted');
});

const patchHook = (k, id, json, headers) => srv.req('PATCH', `/v1/webhooks/${id}`, { key: k, json, headers });

test('a webhook: GET and PATCH (url, description, disabled); turned off, its deliveries fail without a request; recover is 409 until it is on again', async (t) => {
    const k = await srv.createKey('ops-patch');
    const rx = await receiver(t, 204);
    const hook = await register(k, rx.url);
    const got = await srv.req('GET', `/v1/webhooks/${hook.id}`, { key: k });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual({ ...got.json, created_at: undefined, health: undefined },
        { id: hook.id, url: rx.url, description: null, created_at: undefined, disabled: false, disabled_at: null,
            health: undefined });
    assert.equal((await srv.req('GET', `/v1/webhooks/${hook.id}`, { key })).status, 404, 'another tenant');
    assert.equal((await srv.req('GET', '/v1/webhooks/nope', { key: k })).status, 404);

    assert.equal((await patchHook(k, hook.id, { description: 'desk' })).json.description, 'desk');
    assert.equal((await patchHook(k, hook.id, { description: null })).json.description, null);
    const moved = await patchHook(k, hook.id, { url: `${rx.url}?v=2` });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.json.url, `${rx.url}?v=2`);
    for (const [json, field] of [[{ url: 'ftp://example.com/' }, 'url'], [{ url: null }, 'url'],
        [{ disabled: 'yes' }, 'disabled'], [{ x: 1 }, 'x'], [{ description: 'd'.repeat(501) }, 'description']]) {
        const r = await patchHook(k, hook.id, json);
        assert.equal(r.status, 400, `${JSON.stringify(json)}: ${r.text}`);
        assert.equal(r.json.errors[0].field, field);
    }
    assert.equal((await patchHook(k, hook.id, { disabled: true }, { 'Content-Type': 'application/json' })).status, 415);
    assert.equal((await patchHook(key, hook.id, { disabled: true })).status, 404, 'another tenant');

    const off = await patchHook(k, hook.id, { disabled: true });
    assert.equal(off.status, 200, off.text);
    assert.equal(off.json.disabled, true);
    assert.ok(Date.parse(off.json.disabled_at) > 0);
    const listed = (await srv.req('GET', '/v1/webhooks', { key: k })).json.items.find((w) => w.id === hook.id);
    assert.equal(listed.disabled, true);
    assert.equal(listed.health.state, 'disabled');

    const since = new Date().toISOString();
    const m = await dueSoon(k, 'while off');
    let d;
    assert.ok(await waitFor(async () => {
        [d] = (await search(`meeting_id=${m.id}`, k)).json.items;
        return d && d.status === 'failed';
    }, BOUND_MS, 100), 'failed while off');
    assert.equal(d.last_error, 'webhook disabled');
    assert.equal(rx.got.length, 0, 'no request while off');
    const detail = (await srv.req('GET', `/v1/deliveries/${d.id}`, { key: k })).json;
    assert.deepEqual(detail.attempts.map((a) => [a.status, a.http_status, a.error, a.duration_ms]),
        [['failed', null, 'webhook disabled', 0]]);
    const refused = await srv.req('POST', `/v1/webhooks/${hook.id}/recover`, { key: k, json: { since } });
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.json.code, 'webhook_disabled');

    const on = await patchHook(k, hook.id, { disabled: false });
    assert.equal(on.json.disabled, false);
    assert.equal(on.json.disabled_at, null);
    const r = await srv.req('POST', `/v1/webhooks/${hook.id}/recover`, { key: k, json: { since } });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.json.queued, 1);
    await deliveryWhen(k, d.id, (x) => x.status === 'delivered');
    assert.equal(rx.got.length, 1, 'sent once, on again');
    assert.equal(rx.got[0].headers['webhook-id'], webhookIdOf(d));
});

// A server of its own (another database): it turns off webhooks failing for 2 s, looking every
// second.
const hOff = await harness('deliveries_disable');

test('a webhook failing without one success for TOCSIN_WEBHOOK_DISABLE_AFTER_S is turned off, logged and counted; a healthy one is not', async (t) => {
    const off = await hOff.startServer({ ...SERVER_ENV, TOCSIN_WEBHOOK_DISABLE_AFTER_S: '2', TOCSIN_RETENTION_INTERVAL_S: '1' });
    const k = await off.createKey('ops-disable');
    const bad = await receiver(t, 500);
    const good = await receiver(t, 204);
    const reg = async (url) => (await off.req('POST', '/v1/webhooks', { key: k, json: { url } })).json;
    const hookBad = await reg(bad.url);
    const hookGood = await reg(good.url);
    const due = async (title) => (await off.req('POST', '/v1/meetings', { key: k,
        json: { title, starts_at: new Date(Date.now() + LEAD_MS + 5 * MIN).toISOString() } })).json;
    await due('first');
    let w;
    assert.ok(await waitFor(async () => {
        w = (await off.req('GET', `/v1/webhooks/${hookBad.id}`, { key: k })).json;
        return w.disabled;
    }, BOUND_MS, 200), 'turned off');
    assert.equal(w.health.state, 'disabled');
    assert.equal(w.health.last_error, 'HTTP 500');
    assert.ok(Date.parse(w.disabled_at) - Date.parse(w.health.last_failure_at) >= 1000, 'after the 2 s, not at once');
    assert.equal((await off.req('GET', `/v1/webhooks/${hookGood.id}`, { key: k })).json.disabled, false);
    assert.match(off.log, new RegExp(`WARN webhooks: webhook ${hookBad.id} of tenant \\d+ turned off: its attempts failed without one success since \\S+ \\(TOCSIN_WEBHOOK_DISABLE_AFTER_S=2\\)`));
    const metrics = (await off.req('GET', '/metrics', { validate: false })).text;
    assert.match(metrics, /^tocsin_webhooks_disabled_total 1$/m);

    // Turned off, its next deliveries are recorded failed without a request.
    const sent = bad.got.length;
    const m = await due('second');
    let d;
    assert.ok(await waitFor(async () => {
        d = (await off.req('GET', `/v1/deliveries?meeting_id=${m.id}&webhook_id=${hookBad.id}`, { key: k })).json.items[0];
        return d && d.status === 'failed';
    }, BOUND_MS, 100));
    assert.equal(d.last_error, 'webhook disabled');
    assert.equal(bad.got.length, sent);
    assert.ok(await waitFor(() => good.got.length === 2, BOUND_MS, 100), 'the healthy one got both');
});

test('secret rotation: both signatures during the overlap (the Standard Webhooks library verifies either), only the new one after', async (t) => {
    const srv2 = await hOff.startServer({ ...SERVER_ENV, TOCSIN_WEBHOOK_ROTATE_OVERLAP_S: '3',
        TOCSIN_INSTANCE_ID: 'ops-rotate' });
    const k = await srv2.createKey('ops-rotate');
    const rx = await receiver(t, 204);
    const hook = (await srv2.req('POST', '/v1/webhooks', { key: k, json: { url: rx.url } })).json;
    const due = async () => (await srv2.req('POST', '/v1/meetings', { key: k,
        json: { title: 'rotate', starts_at: new Date(Date.now() + LEAD_MS + 5 * MIN).toISOString() } })).json;
    const r = await srv2.req('POST', `/v1/webhooks/${hook.id}/rotate-secret`, { key: k });
    assert.equal(r.status, 200, r.text);
    assert.match(r.json.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    assert.notEqual(r.json.secret, hook.secret);
    const until = Date.parse(r.json.previous_until);
    assert.ok(until > Date.now() + 1000 && until <= Date.now() + 4000, r.json.previous_until);
    const stranger = await srv2.createKey('ops-rotate-other');
    assert.equal((await srv2.req('POST', `/v1/webhooks/${hook.id}/rotate-secret`, { key: stranger })).status, 404, 'another tenant');
    assert.equal((await srv2.req('POST', '/v1/webhooks/nope/rotate-secret', { key: k })).status, 404);
    const [oldV, newV] = [new Webhook(hook.secret), new Webhook(r.json.secret)];

    await due();
    assert.ok(await waitFor(() => rx.got.length === 1, BOUND_MS, 50), 'the overlap\'s request');
    const during = rx.got[0];
    assert.equal(during.headers['webhook-signature'].split(' ').length, 2, during.headers['webhook-signature']);
    newV.verify(during.body, during.headers);
    oldV.verify(during.body, during.headers);

    await sleep(Math.max(0, until - Date.now()) + 200);
    await due();
    assert.ok(await waitFor(() => rx.got.length === 2, BOUND_MS, 50), 'the request after it');
    const after = rx.got[1];
    assert.equal(after.headers['webhook-signature'].split(' ').length, 1);
    newV.verify(after.body, after.headers);
    assert.throws(() => oldV.verify(after.body, after.headers), 'the old secret no longer signs');
});
