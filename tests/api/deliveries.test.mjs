// deliveries.test.mjs -- the operator's delivery API against real servers: reminders fired for
// real and delivered to receivers on loopback (one answering 204, one always 500), then the
// tenant-wide search GET /v1/deliveries: every filter alone and together, q over the meeting's
// title, the recipient and the last error (case-insensitive, LIKE's wildcards taken literally),
// newest first and paged by cursor without a gap or a repeat, another tenant seeing nothing, and
// each bad parameter answered 400 problem+json naming it.
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { harness, test, waitFor, MIN } from './harness.mjs';

const LEAD_MS = 1500;
const BOUND_MS = 20000; // for the fired reminders' deliveries to settle

const h = await harness('deliveries');
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
            res.writeHead(typeof status === 'function' ? status(rx.got.length) : status).end();
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
    srv = await h.startServer({
        TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
        TOCSIN_DELIVERY_RETRY_BASE_MS: '100',
        TOCSIN_DELIVERY_MAX_ATTEMPTS: '2',
    });
    key = await srv.createKey('ops');
    otherKey = await srv.createKey('ops-other');
    fx.ok = await receiver(null, 204);
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
