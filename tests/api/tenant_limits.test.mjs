// tenant_limits.test.mjs -- what one tenant may take of a replica: requests a second
// (TOCSIN_TENANT_RATE, a token bucket TOCSIN_TENANT_BURST deep: over it 429 rate_limited with
// Retry-After) and live meetings (TOCSIN_TENANT_MEETINGS_MAX: over it a create gets 403
// quota_exceeded). Each tenant has its own bucket and quota, a browser token counts to its tenant,
// a stream counts once when it opens, and the defaults limit nothing.
import { before } from 'node:test';
import assert from 'node:assert/strict';
import { harness, test, isoIn, sleep, DAY } from './harness.mjs';
import { metric, mintToken, openLive, closeAll } from './sse.mjs';

const h = await harness('tenant_limits');
const RATE = 1;   // requests a second: slow enough that a burst of requests outruns the refill
const BURST = 10;
const QUOTA = 5;
const RACE_QUOTA = 20;
const RACE_THREADS = 4;  // TOCSIN_HTTP_THREADS of the server the quota race runs on
const RACE_CREATES = 80;
let limited; // TOCSIN_TENANT_RATE / BURST
let quota;   // TOCSIN_TENANT_MEETINGS_MAX
let race;    // the same quota, few HTTP threads, for concurrent creates
let plain;   // the defaults
let keys;

before(async () => {
    [limited, quota, race, plain] = await Promise.all([
        h.startServer({ TOCSIN_TENANT_RATE: String(RATE), TOCSIN_TENANT_BURST: String(BURST), TOCSIN_STREAM_HEARTBEAT_MS: '100' }),
        h.startServer({ TOCSIN_TENANT_MEETINGS_MAX: String(QUOTA) }),
        h.startServer({ TOCSIN_TENANT_MEETINGS_MAX: String(RACE_QUOTA), TOCSIN_HTTP_THREADS: String(RACE_THREADS) }),
        h.startServer(),
    ]);
    keys = {};
    for (const t of ['a', 'b', 'c']) {
        keys[t] = await limited.createKey(`limits-${t}`);
    }
});

const meeting = (title = 'm') => ({ title, starts_at: isoIn(2 * DAY), reminders: [] });

// n requests at once: their statuses, and the 429s' Retry-After values.
async function burst(srv, n, auth, path = '/v1/meetings?limit=1') {
    const rs = await Promise.all(Array.from({ length: n }, () => srv.req('GET', path, { key: auth })));
    for (const r of rs) {
        if (r.status === 429) {
            assert.equal(r.json.code, 'rate_limited', r.text);
            assert.match(r.contentType, /^application\/problem\+json/);
            assert.match(r.header('retry-after') ?? '', /^[1-9][0-9]*$/, 'Retry-After: whole seconds, at least 1');
        } else {
            assert.equal(r.status, 200, r.text);
        }
    }
    return rs.map((r) => r.status);
}

const count = (statuses, s) => statuses.filter((x) => x === s).length;

test('over TOCSIN_TENANT_BURST a tenant gets 429 rate_limited with Retry-After; other tenants do not', async () => {
    const before429 = await metric(limited, 'tocsin_http_rate_limited_total');
    const t0 = Date.now();
    const a = await burst(limited, 3 * BURST, keys.a);
    const refill = Math.ceil(((Date.now() - t0) / 1000) * RATE);
    assert.ok(count(a, 200) >= BURST && count(a, 200) <= BURST + refill,
        `tenant a: ${count(a, 200)} of ${3 * BURST} answered, want ${BURST}..${BURST + refill}`);
    assert.ok(count(a, 429) >= 2 * BURST - refill, `tenant a: ${count(a, 429)} refused`);
    // Tenant b's bucket is its own: full, while a's is empty.
    const b = await burst(limited, BURST, keys.b);
    assert.equal(count(b, 200), BURST, 'tenant b is not limited by a');
    assert.equal(await metric(limited, 'tocsin_http_rate_limited_total') - before429, count(a, 429) + count(b, 429),
        'tocsin_http_rate_limited_total counts every 429');
    // Public routes and requests without a tenant are not counted: a has no token left.
    assert.equal((await limited.req('GET', '/healthz')).status, 200);
    assert.equal((await limited.req('GET', '/v1/meetings', { key: 'tsk_00000000_nope' })).status, 401);
    // The bucket refills at TOCSIN_TENANT_RATE: after the Retry-After of a 429, a is served again.
    // Requests go in parallel rounds of more than a second's refill, so that a slow machine,
    // on which each request takes longer than a refill, still takes the refill first.
    let r;
    for (let i = 0; i < 5 && r?.status !== 429; i++) {
        const rs = await Promise.all(Array.from({ length: 2 * RATE + 2 }, () =>
            limited.req('GET', '/v1/meetings?limit=1', { key: keys.a })));
        r = rs.find((x) => x.status === 429) ?? rs[0];
    }
    assert.equal(r.status, 429, 'a is refused again once its refill is taken');
    await sleep(Number(r.header('retry-after')) * 1000 + 50);
    assert.equal((await limited.req('GET', '/v1/meetings?limit=1', { key: keys.a })).status, 200, 'a refilled');
});

test('a browser token counts to its tenant, and an open stream counted once when it opened', async () => {
    const tok = await mintToken(limited, keys.c, { sub: 'u1', scope: 'notifications meetings:read' });
    const s = await openLive(limited.base, { token: tok.token });
    try {
        // The stream sends a heartbeat every 100 ms; were it counted per frame or per callback
        // (10 a second against a refill of RATE), the bucket would be empty long before this.
        await sleep(3000);
        assert.ok(s.comments.length >= 10, `heartbeats came (${s.comments.length})`);
        assert.ok(!s.end, 'the stream is still open');
        const t0 = Date.now();
        const rs = await Promise.all(Array.from({ length: 2 * BURST }, () =>
            limited.req('GET', '/v1/meetings?limit=1', { key: tok.token })));
        const refill = Math.ceil(((Date.now() - t0) / 1000) * RATE);
        const ok = rs.filter((r) => r.status === 200).length;
        assert.ok(ok >= BURST && ok <= BURST + refill, `the token's requests: ${ok} answered, want ${BURST}..${BURST + refill}`);
        // Its tenant's API key is refused too now; the bucket is the tenant's, not the token's.
        // A parallel round of more than a second's refill: one is refused however slow the
        // machine answers.
        const ks = await Promise.all(Array.from({ length: 2 * RATE + 2 }, () =>
            limited.req('GET', '/v1/meetings?limit=1', { key: keys.c })));
        const k = ks.find((x) => x.status === 429) ?? ks[0];
        assert.equal(k.status, 429, 'the API key of the token\'s tenant shares its bucket');
        assert.equal(k.json.code, 'rate_limited');
    } finally {
        closeAll();
    }
});

test('the defaults limit nothing: 300 requests of one tenant within a second or so are all answered', async () => {
    const key = await plain.createKey('plain');
    // 50 at a time: one address holds at most 128 connections, and fetch opens new ones while
    // the server still counts those it just closed.
    for (let i = 0; i < 6; i++) {
        const st = await burst(plain, 50, key);
        assert.equal(count(st, 200), 50);
    }
});

test('TOCSIN_TENANT_MEETINGS_MAX: a create past the live meetings gets 403 quota_exceeded', async () => {
    const k1 = await quota.createKey('q1');
    const k2 = await quota.createKey('q2');
    const refusedBefore = await metric(quota, 'tocsin_quota_refused_total');
    const made = [];
    for (let i = 0; i < QUOTA - 1; i++) {
        const r = await quota.req('POST', '/v1/meetings', { key: k1, json: meeting(`m${i}`) });
        assert.equal(r.status, 201, r.text);
        made.push(r.json.id);
    }
    // A series is one meeting, however many occurrences it has.
    const series = await quota.req('POST', '/v1/meetings', { key: k1, json: {
        title: 'daily', starts_at: '2030-01-07T09:00:00Z', time_zone: 'UTC', reminders: [],
        recurrence: { rrule: 'FREQ=DAILY;COUNT=50' },
    } });
    assert.equal(series.status, 201, series.text);
    // With an Idempotency-Key: refused past the quota, but the replay of a create that was made
    // is still its 201.
    const over = await quota.req('POST', '/v1/meetings', { key: k1, json: meeting('over'), headers: { 'Idempotency-Key': 'over-1' } });
    assert.equal(over.status, 403, over.text);
    assert.equal(over.json.code, 'quota_exceeded');
    assert.match(over.json.detail, new RegExp(`${QUOTA}`), 'the detail names the quota');
    const plainOver = await quota.req('POST', '/v1/meetings', { key: k1, json: meeting('over') });
    assert.equal(plainOver.status, 403, plainOver.text);
    assert.equal(plainOver.json.code, 'quota_exceeded');
    assert.equal(await metric(quota, 'tocsin_quota_refused_total') - refusedBefore, 2);
    // Changing a meeting is not creating one.
    const put = await quota.req('PATCH', `/v1/meetings/${made[0]}`, { key: k1, json: { title: 'renamed' } });
    assert.equal(put.status, 200, put.text);
    // Another tenant has its own quota.
    const other = await quota.req('POST', '/v1/meetings', { key: k2, json: meeting('other') });
    assert.equal(other.status, 201, other.text);
    // A deleted meeting no longer counts.
    assert.equal((await quota.req('DELETE', `/v1/meetings/${made[0]}`, { key: k1 })).status, 204);
    const again = await quota.req('POST', '/v1/meetings', { key: k1, json: meeting('again'), headers: { 'Idempotency-Key': 'over-1' } });
    assert.equal(again.status, 201, again.text);
    const replay = await quota.req('POST', '/v1/meetings', { key: k1, json: meeting('again'), headers: { 'Idempotency-Key': 'over-1' } });
    assert.equal(replay.status, 201, 'the replay of a create that was made at the quota');
    assert.equal(replay.json.id, again.json.id);
    const live = await h.sql(`SELECT count(*) FROM meetings m JOIN tenants t ON t.id = m.tenant_id
        WHERE t.name = 'q1' AND m.deleted_at IS NULL`);
    assert.equal(Number(live), QUOTA);
});

test('concurrent creates overshoot the quota by less than the HTTP threads, never more', async () => {
    const key = await race.createKey('race');
    const rs = await Promise.all(Array.from({ length: RACE_CREATES }, (_, i) =>
        race.req('POST', '/v1/meetings', { key, json: meeting(`r${i}`) })));
    const created = rs.filter((r) => r.status === 201).length;
    for (const r of rs) {
        assert.ok(r.status === 201 || (r.status === 403 && r.json.code === 'quota_exceeded'), r.text);
    }
    const live = Number(await h.sql(`SELECT count(*) FROM meetings m JOIN tenants t ON t.id = m.tenant_id
        WHERE t.name = 'race' AND m.deleted_at IS NULL`));
    assert.equal(live, created);
    assert.ok(live >= RACE_QUOTA && live <= RACE_QUOTA + RACE_THREADS - 1,
        `${live} live meetings, want ${RACE_QUOTA}..${RACE_QUOTA + RACE_THREADS - 1}`);
    // Once over, every create is refused, however many at once.
    const more = await Promise.all(Array.from({ length: 8 }, () => race.req('POST', '/v1/meetings', { key, json: meeting() })));
    assert.deepEqual(more.map((r) => r.status), Array(8).fill(403));
});
