// stream_replicas.test.mjs -- the live stream across three `tocsin serve` replicas on one
// PostgreSQL and one private Redis: a reminder reaches streams on every replica; a connection cut
// mid-burst resumes on another replica with exactly the missed events; the replica holding a
// stream is killed (-9) and the client resumes on another with nothing lost or repeated; with the
// wake-ups lost (CLIENT KILL TYPE pubsub, Redis stopped and started) events are late by at most
// the catch-up poll; thirty streams resuming on a replica that never held their tenant cost one
// read of the missed events, not thirty. Lateness is measured from fired_at as PostgreSQL recorded
// it to the arrival of the frame (one clock: the same machine).
import { before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { test, harness, sleep, waitFor } from './harness.mjs';
import {
    openLive, mintToken, meetingFiringNow, dbEvents, tenantIdOf, assertOrderedUnique, closeAll, metric,
} from './sse.mjs';

const REPLICAS = 3;
const POLL_MS = 1000;          // the default catch-up poll
const LOST_WAKEUP_SLACK_MS = 1500; // generous, on top of the poll: a shared machine with two cores
const EVENT_BOUND_MS = 15000;  // anything fired is on a stream within this (a killed replica's shards move)

const h = await harness('stream_replicas');
let redis;
const reps = [];
let key;
let tenantId;

before(async () => {
    redis = await h.startRedis();
    const prefix = `srep${process.pid}`;
    for (let i = 0; i < REPLICAS; i++) {
        reps.push(await h.startServer({
            TOCSIN_REDIS_URL: redis.url,
            TOCSIN_REDIS_PREFIX: prefix,
            TOCSIN_INSTANCE_ID: `replica-${i + 1}`,
            TOCSIN_STREAM_POLL_MS: String(POLL_MS),
            TOCSIN_STREAM_HEARTBEAT_MS: '500',
            TOCSIN_RECON_INTERVAL_MS: '500',
            TOCSIN_CLAIM_TTL_MS: '1000',
        }));
    }
    key = await reps[0].createKey('streps');
    tenantId = await tenantIdOf(h, 'streps');
});

afterEach(closeAll);

after(async () => {
    for (const r of reps) {
        await r.stop();
    }
});

const token = async (sub) => (await mintToken(reps[0], key, { sub })).token;

// Lateness of each reminder a stream got: arrival minus fired_at of its seq.
async function lateness(stream, sub) {
    const fired = new Map((await dbEvents(h, tenantId, sub)).map((e) => [e.seq, e.firedMs]));
    return stream.reminders.map((r) => {
        assert.ok(fired.has(r.seq), `seq ${r.seq} is not an event of ${sub}`);
        return r.at - fired.get(r.seq);
    });
}

// Creates `meetings` meetings of `per` reminders each for sub, one at a time `gapMs` apart, on
// the servers in turn; resolves when all are created.
async function burst(servers, sub, meetings, per, gapMs) {
    for (let i = 0; i < meetings; i++) {
        await meetingFiringNow(servers[i % servers.length], key, { participants: [{ id: sub }], n: per });
        await sleep(gapMs);
    }
}

test('a reminder reaches open streams on every replica', async (t) => {
    const streams = [];
    for (const r of reps) {
        streams.push(await openLive(r.base, { token: await token('every') }));
    }
    for (let i = 0; i < REPLICAS; i++) {
        await meetingFiringNow(reps[i], key, { participants: [{ id: 'every' }], n: 2 });
    }
    const want = [];
    for (const s of streams) {
        await s.remindersAtLeast(2 * REPLICAS, EVENT_BOUND_MS);
    }
    want.push(...(await dbEvents(h, tenantId, 'every')).map((e) => e.seq));
    await sleep(300);
    const late = [];
    for (const [i, s] of streams.entries()) {
        assert.deepEqual(s.reminders.map((r) => r.seq), want, `replica ${i + 1}`);
        late.push(...(await lateness(s, 'every')));
    }
    const fired = await Promise.all(reps.map(async (r) => {
        const m = await r.req('GET', '/metrics', { validate: false });
        return Number(/^tocsin_reminders_fired_total (\d+)$/m.exec(m.text)[1]);
    }));
    t.diagnostic(`fired per replica ${fired.join('/')}; lateness max ${Math.max(...late)} ms over ${late.length}`);
    assert.ok(Math.max(...late) <= POLL_MS + LOST_WAKEUP_SLACK_MS, `lateness ${late.join(',')} ms`);
});

test('a connection cut mid-burst resumes on another replica with exactly the missed events', async () => {
    const sub = 'cut';
    const first = await openLive(reps[1].base, { token: await token(sub) });
    const firing = burst(reps, sub, 16, 5, 40); // 80 reminders over about a second
    await first.remindersAtLeast(12, EVENT_BOUND_MS);
    first.close();
    const got = first.reminders;
    assert.ok(got.length < 80, 'cut before the burst ended');
    const second = await openLive(reps[2].base, { token: await token(sub), lastEventId: first.lastEventId });
    await firing;
    await second.remindersAtLeast(80 - got.length, EVENT_BOUND_MS);
    await sleep(500);
    const all = [...got, ...second.reminders];
    assertOrderedUnique(all, 'across the cut');
    assert.deepEqual(all.map((r) => r.seq), (await dbEvents(h, tenantId, sub)).map((e) => e.seq));
    assert.equal(all.length, 80);
});

test('CLIENT KILL TYPE pubsub: stream events late by at most the catch-up poll', async (t) => {
    const sub = 'pubsub';
    const streams = [];
    for (const r of reps) {
        streams.push(await openLive(r.base, { token: await token(sub) }));
    }
    const subscribers = async () => (await redis.cli.cmd('CLIENT', 'LIST', 'TYPE', 'pubsub')).split('\n').filter(Boolean).length;
    for (let round = 0; round < 3; round++) {
        // Every replica listens again (they resubscribe after a kill) before the next kill.
        assert.ok(await waitFor(async () => (await subscribers()) >= REPLICAS, EVENT_BOUND_MS, 50),
            `${await subscribers()} pub/sub subscribers, want ${REPLICAS}`);
        const killed = await redis.cli.cmd('CLIENT', 'KILL', 'TYPE', 'pubsub');
        assert.ok(Number(killed) >= REPLICAS, `killed ${killed} subscribers`);
        await meetingFiringNow(reps[round], key, { participants: [{ id: sub }] });
        for (const s of streams) {
            await s.remindersAtLeast(round + 1, EVENT_BOUND_MS);
        }
    }
    const late = [];
    for (const s of streams) {
        assert.equal(s.reminders.length, 3);
        late.push(...(await lateness(s, sub)));
    }
    t.diagnostic(`lateness after CLIENT KILL: ${late.join(', ')} ms`);
    assert.ok(Math.max(...late) <= POLL_MS + LOST_WAKEUP_SLACK_MS, `lateness ${late.join(',')} ms`);
});

test('Redis stopped: events still come by the catch-up poll; after its restart, by wake-ups again', async (t) => {
    const sub = 'redis-down';
    const streams = [];
    for (const r of reps) {
        streams.push(await openLive(r.base, { token: await token(sub) }));
    }
    await redis.stop();
    try {
        for (let i = 0; i < REPLICAS; i++) {
            await meetingFiringNow(reps[i], key, { participants: [{ id: sub }] });
        }
        for (const s of streams) {
            await s.remindersAtLeast(REPLICAS, EVENT_BOUND_MS);
        }
    } finally {
        await redis.start();
    }
    const late = [];
    for (const s of streams) {
        late.push(...(await lateness(s, sub)));
    }
    t.diagnostic(`lateness with Redis down: ${late.join(', ')} ms`);
    assert.ok(Math.max(...late) <= POLL_MS + LOST_WAKEUP_SLACK_MS, `lateness ${late.join(',')} ms`);
    await meetingFiringNow(reps[0], key, { participants: [{ id: sub }] });
    for (const s of streams) {
        await s.remindersAtLeast(REPLICAS + 1, EVENT_BOUND_MS);
        assertOrderedUnique(s.reminders, 'after the restart');
    }
});

test('kill -9 of the replica holding the stream: the client resumes on another, nothing lost or repeated', async () => {
    const sub = 'killed';
    const victim = reps[2];
    const first = await openLive(victim.base, { token: await token(sub) });
    const firing = burst([reps[0], reps[1]], sub, 12, 5, 50);
    await first.remindersAtLeast(10, EVENT_BOUND_MS);
    await victim.kill();
    const end = await Promise.race([first.ended, sleep(5000).then(() => null)]);
    assert.ok(end, 'the stream noticed its replica died');
    assert.notEqual(end.how, 'end', 'not a clean end');
    const got = first.reminders;
    const second = await openLive(reps[0].base, { token: await token(sub), lastEventId: first.lastEventId });
    await firing;
    await second.remindersAtLeast(60 - got.length, EVENT_BOUND_MS);
    await sleep(500);
    const all = [...got, ...second.reminders];
    assertOrderedUnique(all, 'across the kill');
    assert.deepEqual(all.map((r) => r.seq), (await dbEvents(h, tenantId, sub)).map((e) => e.seq));
    assert.equal(all.length, 60);
    await victim.start(); // the same port, for the file's after()
});

test('streams resuming on a replica that never held their tenant get the missed events from one read, not one each', async () => {
    const key2 = await reps[0].createKey('backfill'); // a tenant no replica has seen streams of
    const subs = Array.from({ length: 30 }, (_, i) => `bf${String(i + 1).padStart(2, '0')}`);
    const tokenOf = async (sub) => (await mintToken(reps[0], key2, { sub })).token;
    const first = await openLive(reps[0].base, { token: await tokenOf(subs[0]) });
    const cursor = first.lastEventId; // hello's: the tenant's head before the reminders
    await meetingFiringNow(reps[0], key2, { participants: subs.map((id) => ({ id })), n: 3 });
    await first.remindersAtLeast(3, EVENT_BOUND_MS);
    first.close();
    const target = reps[1];
    const before = await metric(target, 'tocsin_stream_backlog_reads_total');
    const streams = await Promise.all(subs.map(async (sub) =>
        openLive(target.base, { token: await tokenOf(sub), lastEventId: cursor })));
    for (const s of streams) {
        await s.remindersAtLeast(3, EVENT_BOUND_MS);
    }
    await sleep(300);
    const want = first.reminders.map((r) => r.seq);
    for (const s of streams) {
        assertOrderedUnique(s.reminders, 'a resume');
        assert.deepEqual(s.reminders.map((r) => r.seq), want);
    }
    const reads = (await metric(target, 'tocsin_stream_backlog_reads_total')) - before;
    // The first resume fills the replica's recent events from PostgreSQL; the others take them
    // from there (before, each of the 30 read its own).
    assert.ok(reads >= 1 && reads <= 2, `${reads} reads of missed events for ${subs.length} resumes`);
});
