// mirror.test.mjs -- the Redis mirror seen from outside: one key <prefix>:rem:<id>:<fire_at_ms> per
// pending reminder due within the horizon, PEXPIRETIME == fire_at_ms, moved on reschedule, removed
// on delete, repaired after FLUSHALL, after a Redis outage and across a tocsin restart. Uses a
// private redis-server (this file stops it and flushes it).
import { before } from 'node:test';
import assert from 'node:assert/strict';
import { harness, test, isoIn, waitFor, MIN, HOUR } from './harness.mjs';

const HORIZON_S = 3600;
const WRITE_BOUND_MS = 1000; // DESIGN 3: keys exist within a second of the PostgreSQL write
const REPAIR_BOUND_MS = 10000;

const h = await harness('mirror');
let srv;
let redis;
let key;

before(async () => {
    redis = await h.startRedis();
    srv = await h.startServer({
        TOCSIN_REDIS_URL: redis.url,
        TOCSIN_MIRROR_HORIZON_S: String(HORIZON_S),
        TOCSIN_RECON_INTERVAL_MS: '200',
    });
    key = await srv.createKey('mirror');
});

const remKey = (rid, fireMs) => `${srv.prefix}:rem:${rid}:${fireMs}`;

// The keys a meeting must have: its pending reminders due within the horizon.
function expectedKeys(m) {
    const limit = Date.now() + HORIZON_S * 1000 - 5000;
    return m.reminders
        .filter((r) => r.status === 'pending' && Date.parse(r.fire_at) <= limit)
        .map((r) => ({ key: remKey(r.id, Date.parse(r.fire_at)), fireMs: Date.parse(r.fire_at), rid: r.id }));
}

// Keys under this meeting's reminder ids (any fire time).
async function keysOfReminders(rids) {
    const out = [];
    for (const rid of rids) {
        out.push(...(await redis.cli.keys(`${srv.prefix}:rem:${rid}:*`)));
    }
    return out.sort();
}

// Waits until the reminder keys of m are exactly the expected ones with the exact expiry times.
async function assertMirrored(m, boundMs, extraRids = []) {
    const want = expectedKeys(m);
    const rids = [...new Set([...m.reminders.map((r) => r.id), ...extraRids])];
    let got = [];
    const ok = await waitFor(async () => {
        got = await keysOfReminders(rids);
        return JSON.stringify(got) === JSON.stringify(want.map((w) => w.key).sort());
    }, boundMs, 50);
    assert.ok(ok, `keys of meeting ${m.id}: want ${JSON.stringify(want.map((w) => w.key))}, got ${JSON.stringify(got)}`);
    for (const w of want) {
        assert.equal(await redis.cli.pexpiretime(w.key), w.fireMs, `PEXPIRETIME of ${w.key}`);
    }
    return want;
}

async function create(json) {
    const r = await srv.req('POST', '/v1/meetings', { key, json });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

test('POST mirrors each pending reminder with PEXPIRETIME == fire_at_ms', async () => {
    const m = await create({ title: 'soon', starts_at: isoIn(40 * MIN), reminders: [{ minutes_before: 5 }, { minutes_before: 30 }, { minutes_before: 0 }] });
    const want = await assertMirrored(m, WRITE_BOUND_MS);
    assert.equal(want.length, 3);
    assert.equal(await redis.cli.cmd('GET', want[0].key), '', 'the value is empty');
});

test('PATCH of starts_at moves the keys: old ones gone, new ones with the new expiry', async () => {
    const m = await create({ title: 'move', starts_at: isoIn(40 * MIN), reminders: [{ minutes_before: 5 }, { minutes_before: 20 }] });
    const before = await assertMirrored(m, WRITE_BOUND_MS);
    const p = await srv.req('PATCH', `/v1/meetings/${m.id}`, { key, json: { starts_at: isoIn(50 * MIN) } });
    assert.equal(p.status, 200, p.text);
    const after = await assertMirrored(p.json, WRITE_BOUND_MS, m.reminders.map((r) => r.id));
    for (const b of before) {
        assert.equal(await redis.cli.cmd('EXISTS', b.key), '0', `old key ${b.key} removed`);
    }
    assert.equal(after.length, 2);

    // Dropping a reminder removes its key; a PUT that moves the meeting out of the horizon removes all.
    const q = await srv.req('PATCH', `/v1/meetings/${m.id}`, { key, json: { reminders: [{ minutes_before: 20 }] } });
    assert.equal(q.status, 200, q.text);
    await assertMirrored(q.json, WRITE_BOUND_MS, p.json.reminders.map((r) => r.id));
    const far = await srv.req('PUT', `/v1/meetings/${m.id}`, { key, json: { title: 'far', starts_at: isoIn(5 * HOUR) } });
    assert.equal(far.status, 200, far.text);
    const gone = await assertMirrored(far.json, WRITE_BOUND_MS, q.json.reminders.map((r) => r.id));
    assert.equal(gone.length, 0);
});

test('DELETE removes the keys', async () => {
    const m = await create({ title: 'gone', starts_at: isoIn(40 * MIN), reminders: [{ minutes_before: 5 }, { minutes_before: 15 }] });
    const want = await assertMirrored(m, WRITE_BOUND_MS);
    const d = await srv.req('DELETE', `/v1/meetings/${m.id}`, { key });
    assert.equal(d.status, 204);
    const ok = await waitFor(async () => (await keysOfReminders(want.map((w) => w.rid))).length === 0, WRITE_BOUND_MS);
    assert.ok(ok, `keys left after DELETE: ${await keysOfReminders(want.map((w) => w.rid))}`);
});

test('reminders beyond the horizon are not mirrored; those within it are', async () => {
    // Meeting 3 h ahead, horizon 1 h: the 5-minute reminder is out, the 150-minute one (due in 30 min) in.
    const m = await create({ title: 'later', starts_at: isoIn(3 * HOUR), reminders: [{ minutes_before: 5 }, { minutes_before: 150 }] });
    const want = await assertMirrored(m, WRITE_BOUND_MS);
    assert.equal(want.length, 1);
    assert.equal(want[0].rid, m.reminders.find((r) => r.minutes_before === 150).id);
    // And it stays that way across reconciler rounds.
    await new Promise((r) => setTimeout(r, 600));
    await assertMirrored(m, 0);
});

test('FLUSHALL: the reconciler puts every key back within a bounded wait', async () => {
    const ms = [
        await create({ title: 'f1', starts_at: isoIn(30 * MIN) }),
        await create({ title: 'f2', starts_at: isoIn(45 * MIN), reminders: [{ minutes_before: 1 }, { minutes_before: 10 }] }),
    ];
    for (const m of ms) {
        await assertMirrored(m, WRITE_BOUND_MS);
    }
    await redis.cli.flushall();
    for (const m of ms) {
        await assertMirrored(m, REPAIR_BOUND_MS);
    }
});

async function readyz() {
    return srv.req('GET', '/readyz', { timeoutMs: 10000 });
}

test('Redis down: POST still 201 quickly, /readyz 200 reporting Redis down; Redis back: key re-armed exactly', async () => {
    const earlier = await create({ title: 'before outage', starts_at: isoIn(35 * MIN) });
    await assertMirrored(earlier, WRITE_BOUND_MS);
    await redis.stop();

    const t0 = Date.now();
    const r = await srv.req('POST', '/v1/meetings', { key, json: { title: 'during outage', starts_at: isoIn(40 * MIN), reminders: [{ minutes_before: 5 }, { minutes_before: 25 }] } });
    const took = Date.now() - t0;
    assert.equal(r.status, 201, r.text);
    assert.ok(took < 5000, `POST took ${took} ms with Redis down`);
    const m = r.json;
    const g = await srv.req('GET', `/v1/meetings/${m.id}`, { key });
    assert.equal(g.status, 200, 'reads work without Redis');

    // The API works without Redis, so readiness does not follow it: it only reports it.
    let rz;
    const down = await waitFor(async () => {
        rz = await readyz();
        assert.equal(rz.status, 200, `/readyz while Redis is down: ${rz.text}`);
        return rz.json.checks.redis === 'down';
    }, 5000, 100);
    assert.ok(down, `/readyz reports Redis down: ${rz.text}`);
    assert.equal(rz.json.status, 'ready', rz.text);
    assert.equal(rz.json.checks.postgres, 'ok', rz.text);

    await redis.start(); // same port, empty data, default config
    await assertMirrored(m, REPAIR_BOUND_MS);
    await assertMirrored(earlier, REPAIR_BOUND_MS);

    const up = await waitFor(async () => {
        rz = await readyz();
        return rz.status === 200 && Object.values(rz.json.checks).every((v) => v === 'ok');
    }, REPAIR_BOUND_MS, 100);
    assert.ok(up, `/readyz after Redis is back: ${rz.status} ${rz.text}`);
    assert.deepEqual(rz.json, {
        status: 'ready', checks: { postgres: 'ok', redis: 'ok', migrations: 'ok', notify_config: 'ok', subscriber: 'ok' },
    });
    const nke = await redis.cli.cmd('CONFIG', 'GET', 'notify-keyspace-events');
    const flags = nke.split('\n')[1] || '';
    assert.ok(flags.includes('E') && /[xA]/.test(flags),
        `notify-keyspace-events set again on the new Redis: ${JSON.stringify(flags)}`);
});

test('restart: meetings persist and keys exist (also after a FLUSHALL while tocsin was down)', async () => {
    const m = await create({ title: 'persist', starts_at: isoIn(40 * MIN), reminders: [{ minutes_before: 10 }] });
    await assertMirrored(m, WRITE_BOUND_MS);
    const exit = await srv.stop();
    assert.deepEqual(exit, { code: 0, signal: null }, `graceful SIGTERM exit:\n${srv.log}`);
    await srv.start();
    const g = await srv.req('GET', `/v1/meetings/${m.id}`, { key });
    assert.equal(g.status, 200, g.text);
    assert.deepEqual(g.json, m);
    await assertMirrored(m, REPAIR_BOUND_MS);

    await srv.stop();
    await redis.cli.flushall();
    await srv.start();
    await assertMirrored(m, REPAIR_BOUND_MS);
});
