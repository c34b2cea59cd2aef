// engine.test.mjs -- the reminder engine against real servers: three `tocsin serve` replicas on one
// PostgreSQL and one private Redis (same key prefix), reminders made to fall due a few seconds
// ahead. Checks what the database records: each occurrence fired once (status, fired_at never
// before fire_at, exactly one outbox row per webhook), whatever happens to a replica, the
// subscriber, Redis or PostgreSQL. A webhook row is inserted directly so every fire writes outbox
// rows; nothing delivers them here (the webhook tests do that).
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { harness, test, waitFor, sleep, MIN } from './harness.mjs';

const REPLICAS = 3;
const LEAD_MS = 2500;        // the first reminder of a batch falls due this long after creation
const FIRE_BOUND_MS = 30000; // generous: everything due must be fired this long after its time
const SETTLE_MS = 1500;      // after the last is fired, wait this long for a (wrong) second fire

const h = await harness('engine');
const prefix = `eng${process.pid}`;
let redis;
let reps = [];
let key;
let tenantId;

before(async () => {
    redis = await h.startRedis();
    for (let i = 0; i < REPLICAS; i++) {
        reps.push(await h.startServer({
            TOCSIN_REDIS_URL: redis.url,
            TOCSIN_REDIS_PREFIX: prefix,
            TOCSIN_INSTANCE_ID: `replica-${i + 1}`,
            TOCSIN_RECON_INTERVAL_MS: '500',
            TOCSIN_CLAIM_TTL_MS: '1000',
            TOCSIN_LOG_LEVEL: 'warn',
        }));
    }
    key = await reps[0].createKey('engine');
    tenantId = Number(await h.sql("SELECT id FROM tenants WHERE name = 'engine'"));
    await h.sql(`INSERT INTO webhooks (id, tenant_id, url, secret) VALUES (gen_random_uuid(), ${tenantId},
        'http://127.0.0.1:9/unused', 'whsec_dGVzdA==')`);
});

after(async () => {
    for (const r of reps) {
        await r.stop();
    }
});

// starts_at such that a reminder `minutes_before` fires at fireMs.
const startsFor = (fireMs, minutesBefore = 5) => new Date(fireMs + minutesBefore * MIN).toISOString();

async function create(srv, fireMs, extra = {}) {
    const r = await srv.req('POST', '/v1/meetings', {
        key, json: { title: 'engine', starts_at: startsFor(fireMs), reminders: [{ minutes_before: 5 }], ...extra },
    });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

// n meetings due evenly over spreadMs from LEAD_MS ahead, created round-robin on the live replicas.
async function createBatch(n, spreadMs, live = reps) {
    const t0 = Date.now() + LEAD_MS;
    const made = [];
    for (let i = 0; i < n; i++) {
        made.push(create(live[i % live.length], t0 + Math.floor((i * spreadMs) / n)));
        if (made.length % 20 === 0) {
            await Promise.all(made.slice(-20));
        }
    }
    return Promise.all(made);
}

const ids = (ms) => ms.map((m) => m.reminders[0].id).join(',');

// Waits until every reminder of ms left 'pending', then checks the record of each.
async function assertFiredOnce(ms, { status = 'fired' } = {}) {
    const list = ids(ms);
    const done = await waitFor(async () => Number(await h.sql(
        `SELECT count(*) FROM reminders WHERE id IN (${list}) AND status = 'pending'`)) === 0, FIRE_BOUND_MS, 100);
    const left = await h.sql(`SELECT count(*) FROM reminders WHERE id IN (${list}) AND status = 'pending'`);
    assert.ok(done, `${left} of ${ms.length} reminders still pending ${FIRE_BOUND_MS} ms after they were due`);
    await sleep(SETTLE_MS);
    const rows = (await h.sql(`SELECT r.status, (r.fired_at >= r.fire_at)::int,
            (SELECT count(*) FROM outbox o WHERE o.reminder_id = r.id AND o.fire_at = r.fire_at)
        FROM reminders r WHERE r.id IN (${list})`)).split('\n').map((l) => l.split('|'));
    assert.equal(rows.length, ms.length);
    const wantOutbox = status === 'fired' ? '1' : '0';
    for (const [st, notEarly, outbox] of rows) {
        assert.equal(st, status, 'final status');
        assert.equal(notEarly, '1', 'fired_at is never before fire_at');
        assert.equal(outbox, wantOutbox, 'outbox rows for the occurrence');
    }
}

test('a reminder fires once, on time, and the API shows it fired', async () => {
    const fireMs = Date.now() + LEAD_MS;
    const m = await create(reps[0], fireMs);
    await assertFiredOnce([m]);
    const late = Number(await h.sql(`SELECT extract(epoch FROM fired_at - fire_at) * 1000 FROM reminders
        WHERE id = ${m.reminders[0].id}`));
    assert.ok(late >= 0 && late < 2000, `fired ${late} ms after its time`);
    const g = await reps[1].req('GET', `/v1/meetings/${m.id}`, { key });
    assert.equal(g.json.reminders[0].status, 'fired');
    assert.ok(Date.parse(g.json.reminders[0].fired_at) >= fireMs);
});

test('a reminder created with its fire time already past fires at once', async () => {
    const m = await create(reps[2], Date.now() - 60000); // meeting in 4 minutes, reminder 5 before
    await assertFiredOnce([m]);
});

test('missed: processed after the meeting start plus the grace is recorded missed, not sent', async () => {
    // Past start + 60 s grace when created (the API takes past meetings; the engine judges them).
    const m = await create(reps[0], Date.now() - 10 * MIN);
    await assertFiredOnce([m], { status: 'missed' });
});

test('three replicas, a burst of 300 due within 3 s: each fired exactly once', async () => {
    const ms = await createBatch(300, 3000);
    await assertFiredOnce(ms);
    const metrics = await Promise.all(reps.map((r) => r.req('GET', '/metrics', { validate: false })));
    const fired = metrics.map((r) => Number(/^tocsin_reminders_fired_total (\d+)$/m.exec(r.text)[1]));
    assert.ok(fired.every((n) => n >= 0) && fired.reduce((a, b) => a + b) >= 300, `fired per replica ${fired}`);
});

test('reschedule fires at the new time only; delete never fires', async () => {
    const now = Date.now();
    const moved = await create(reps[0], now + LEAD_MS);
    const gone = await create(reps[1], now + LEAD_MS);
    const newFire = now + LEAD_MS + 3000;
    const p = await reps[2].req('PATCH', `/v1/meetings/${moved.id}`, { key, json: { starts_at: startsFor(newFire) } });
    assert.equal(p.status, 200, p.text);
    const d = await reps[2].req('DELETE', `/v1/meetings/${gone.id}`, { key });
    assert.equal(d.status, 204);
    await sleep(LEAD_MS + 1000);
    assert.equal(await h.sql(`SELECT status FROM reminders WHERE id = ${moved.reminders[0].id}`), 'pending',
        'not fired at the old time');
    await assertFiredOnce([p.json]);
    assert.ok(Number(await h.sql(`SELECT (extract(epoch FROM fired_at) * 1000)::bigint FROM reminders
        WHERE id = ${moved.reminders[0].id}`)) >= newFire);
    assert.equal(await h.sql(`SELECT status || '/' || (SELECT count(*) FROM outbox WHERE reminder_id = r.id)
        FROM reminders r WHERE id = ${gone.reminders[0].id}`), 'cancelled/0');
});

test('kill -9 of one replica mid-burst: nothing lost, nothing fired twice', async () => {
    const ms = await createBatch(200, 3000);
    await sleep(LEAD_MS + 1000);
    await reps[1].kill();
    await assertFiredOnce(ms);
    await reps[1].start();
});

test('subscriber connections killed (CLIENT KILL TYPE pubsub): nothing lost, the subscription comes back', async () => {
    const ms = await createBatch(100, 2000);
    await redis.cli.cmd('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await assertFiredOnce(ms);
    for (const r of reps) {
        let rz;
        const ok = await waitFor(async () => {
            rz = await r.req('GET', '/readyz');
            return rz.status === 200 && rz.json.checks.subscriber === 'ok' && rz.json.checks.notify_config === 'ok';
        }, 10000, 100);
        assert.ok(ok, `the subscriber reconnects and its probe sees expired events again: ${rz.text}`);
    }
});

test('FLUSHALL while reminders are pending: nothing lost, nothing fired twice', async () => {
    const ms = await createBatch(100, 2000);
    await redis.cli.flushall();
    await assertFiredOnce(ms);
});

test('Redis down while reminders fall due, then back: all fire once, from PostgreSQL', async () => {
    const ms = await createBatch(60, 2000);
    await redis.stop();
    await sleep(LEAD_MS + 2500);
    await assertFiredOnce(ms);
    await redis.start();
    const after = await createBatch(30, 1000);
    await assertFiredOnce(after);
});

test('PostgreSQL restarted while reminders fall due: all fire once', async () => {
    const ms = await createBatch(60, 3000);
    await sleep(LEAD_MS);
    await h.restartPostgres();
    await assertFiredOnce(ms);
});
