// stream_load.test.mjs -- the stream's bounds under load, against a real tocsin: a reader that
// stops reading is cut once TOCSIN_STREAM_BUFFER_MAX bytes wait for it, while the streams that
// read on get every reminder in time (their lateness is measured), and the cut one resumes with
// nothing lost; reminders whose frames are larger than the buffer bound still reach readers that
// keep up; 1,000 open streams and SIGTERM: every stream is ended, the replica exits 0 within the
// shutdown grace, and libmicrohttpd reports no API violation.
import { before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { test, harness, sleep, waitFor } from './harness.mjs';
import {
    openLive, openStream, follow, mintToken, signToken, createSigningKey, meetingFiringNow, dbEvents,
    tenantIdOf, assertOrderedUnique, closeAll, metric,
} from './sse.mjs';

const BUFFER_MAX = 1 << 20;     // TOCSIN_STREAM_BUFFER_MAX: more than what one hub round writes here
const FAST = 4;                 // readers that keep reading
const BIG_MEETINGS = 40;        // of five reminders each: 200 frames of about 40 KB, 8 MB
const FIRE_GAP_MS = 80;         // between meetings: 2.5 MB/s per reader, what a shared 2-core machine keeps up with
const LATE_BOUND_MS = 5000;     // generous: the readers that keep up get each reminder within this
const EVENT_BOUND_MS = 30000;   // everything fired is on the streams within this
const SMALL_BUFFER = 16384;     // a bound smaller than one reminder of a large meeting
const STREAMS = 1000;
const SHUTDOWN_GRACE_MS = 10000;

const h = await harness('stream_load');
let srv;
let key;
let tenantId;

before(async () => {
    srv = await h.startServer({ TOCSIN_STREAM_BUFFER_MAX: String(BUFFER_MAX), TOCSIN_STREAM_HEARTBEAT_MS: '1000' });
    key = await srv.createKey('load');
    tenantId = await tenantIdOf(h, 'load');
});

afterEach(closeAll);

after(async () => {
    await srv.stop();
});

// The participants of a meeting whose request body is close to the 64 KiB the API takes, so that
// its reminder frames are about that large: the subs named, then padding people with long names
// (two-byte characters).
const BODY_BYTES = 60000;
function bigParticipants(subs) {
    const out = subs.map((id) => ({ id }));
    for (let i = 0; Buffer.byteLength(JSON.stringify(out)) < BODY_BYTES && out.length < 500; i++) {
        out.push({ id: `pad${String(i).padStart(3, '0')}`, name: 'é'.repeat(60), email: `p${i}@example.com` });
    }
    return out;
}

test('a reader that stops is cut at the buffer bound, the others keep up, and it resumes with nothing lost', async (t) => {
    const fastSubs = Array.from({ length: FAST }, (_, i) => `fast${i}`);
    const slow = await openLive(srv.base, { token: (await mintToken(srv, key, { sub: 'slow' })).token });
    const fast = [];
    for (const sub of fastSubs) {
        fast.push(await openLive(srv.base, { token: (await mintToken(srv, key, { sub })).token }));
    }
    slow.pause();
    const cutBefore = await metric(srv, 'tocsin_streams_cut_total');
    const participants = bigParticipants(['slow', ...fastSubs]);
    for (let i = 0; i < BIG_MEETINGS; i++) {
        await meetingFiringNow(srv, key, { participants, n: 5, title: `big ${i}` });
        await sleep(FIRE_GAP_MS);
    }
    const total = BIG_MEETINGS * 5;
    for (const s of fast) {
        await s.remindersAtLeast(total, EVENT_BOUND_MS);
    }
    const frameBytes = Buffer.byteLength(JSON.stringify(fast[0].reminders[0].body));
    // The slow one was cut (the replica counts it and holds one stream fewer).
    assert.ok(await waitFor(async () => (await metric(srv, 'tocsin_streams_cut_total')) > cutBefore, 10000),
        'no stream was cut');
    assert.ok(await waitFor(async () => (await metric(srv, 'tocsin_streams_open')) === FAST, 10000),
        `open streams: ${await metric(srv, 'tocsin_streams_open')}, want ${FAST}`);
    // The others got everything, in order, in time.
    const fired = new Map((await dbEvents(h, tenantId, 'slow')).map((e) => [e.seq, e.firedMs]));
    assert.equal(fired.size, total);
    const late = [];
    for (const s of fast) {
        assert.deepEqual(s.reminders.map((r) => r.seq), [...fired.keys()]);
        late.push(...s.reminders.map((r) => r.at - fired.get(r.seq)));
    }
    late.sort((a, b) => a - b);
    t.diagnostic(`frames of ${frameBytes} B; lateness of the ${FAST} readers over ${late.length} frames: ` +
        `p50 ${late[Math.floor(late.length / 2)]} ms, max ${late.at(-1)} ms`);
    assert.ok(late.at(-1) <= LATE_BOUND_MS, `a reader that keeps up was ${late.at(-1)} ms late`);
    // The slow one reads again: what the kernel held, then the connection ends, not cleanly.
    slow.res.socket.resume();
    slow.res.resume();
    const end = await Promise.race([slow.ended, sleep(10000).then(() => null)]);
    assert.ok(end, 'the cut stream ended');
    assert.notEqual(end.how, 'end', 'a cut is not a clean end');
    const got = slow.reminders;
    assert.ok(got.length < total, `the cut stream had all ${got.length}`);
    // Its resume is more than the bound: it comes in parts, each connection ending cleanly.
    const again = await follow(srv.base, { token: (await mintToken(srv, key, { sub: 'slow' })).token, lastEventId: slow.lastEventId },
        total - got.length, EVENT_BOUND_MS);
    t.diagnostic(`the cut reader had ${got.length}; it resumed over ${again.streams.length} connections`);
    assert.ok(again.streams.slice(0, -1).every((x) => x.end?.how === 'end'), 'a resume part was cut');
    const all = [...got, ...again.reminders];
    assertOrderedUnique(all, 'across the cut');
    assert.deepEqual(all.map((r) => r.seq), [...fired.keys()]);
});

test('a backlog larger than the buffer bound resumes in parts, and a frame larger than it still goes out', async (t) => {
    const small = await h.startServer({ TOCSIN_STREAM_BUFFER_MAX: String(SMALL_BUFFER), TOCSIN_STREAM_RETRY_MS: '100' });
    try {
        const sub = 'behind';
        const tok = (await mintToken(small, key, { sub })).token;
        const first = await openLive(small.base, { token: tok });
        const cursor = first.lastEventId;
        first.close();
        // Missed: 30 reminders of about 5 KB (150 KB), then one of about 40 KB.
        const mid = bigParticipants([sub]).slice(0, 40);
        for (let i = 0; i < 6; i++) {
            await meetingFiringNow(small, key, { participants: mid, n: 5, title: `mid ${i}` });
        }
        await meetingFiringNow(small, key, { participants: bigParticipants([sub]).slice(0, 320), title: 'large' });
        const want = await waitFor(async () => {
            const ev = await dbEvents(h, tenantId, sub);
            return ev.length === 31 && ev;
        }, EVENT_BOUND_MS);
        assert.ok(want, 'the 31 reminders fired');
        const r = await follow(small.base, { token: tok, lastEventId: cursor }, 31, EVENT_BOUND_MS);
        const sizes = r.reminders.map((x) => Buffer.byteLength(JSON.stringify(x.body)));
        t.diagnostic(`31 frames (${Math.min(...sizes)}..${Math.max(...sizes)} B) behind a bound of ${SMALL_BUFFER} B: ` +
            `${r.streams.length} connections`);
        assert.ok(Math.max(...sizes) > SMALL_BUFFER, 'one frame is larger than the bound');
        assert.ok(r.streams.length > 1, 'the backlog came in parts');
        assert.ok(r.streams.slice(0, -1).every((x) => x.end?.how === 'end'), 'every part ended cleanly, none was cut');
        assertOrderedUnique(r.reminders, 'the backlog');
        assert.deepEqual(r.reminders.map((x) => x.seq), want.map((e) => e.seq));
        // Live: a frame larger than the bound reaches a reader that keeps up.
        const live = await openLive(small.base, { token: tok, lastEventId: r.streams.at(-1).lastEventId });
        assert.deepEqual(JSON.parse(live.frames[0].data).replayed, 0);
        await meetingFiringNow(small, key, { participants: bigParticipants([sub]).slice(0, 320), title: 'large live' });
        await live.remindersAtLeast(1, EVENT_BOUND_MS);
        assert.equal(live.end, null, 'still open');
    } finally {
        closeAll();
        await small.stop();
    }
});

test('1,000 open streams and SIGTERM: all ended, exit 0 within the grace, no MHD API violation', async (t) => {
    const big = await h.startServer({
        TOCSIN_HTTP_CONNECTIONS_MAX: String(STREAMS + 200),
        TOCSIN_HTTP_CONNECTIONS_PER_ADDR: String(STREAMS + 200), // every client is 127.0.0.1
        TOCSIN_SHUTDOWN_GRACE_MS: String(SHUTDOWN_GRACE_MS),
        TOCSIN_STREAM_HEARTBEAT_MS: '5000',
        TOCSIN_LOG_LEVEL: 'info',
    });
    const sk = await createSigningKey(big, key);
    const streams = [];
    const t0 = Date.now();
    for (let i = 0; i < STREAMS; i += 100) {
        const batch = await Promise.all(Array.from({ length: 100 }, async (_, j) =>
            openStream(big.base, { token: await signToken(sk, { sub: `many${(i + j) % 250}` }) })));
        streams.push(...batch);
    }
    for (const s of streams) {
        assert.equal(s.status, 200, s.body);
    }
    for (const s of streams) {
        await s.next('hello', 30000);
    }
    t.diagnostic(`${STREAMS} streams open with hello in ${Date.now() - t0} ms`);
    assert.equal(await metric(big, 'tocsin_streams_open'), STREAMS);
    // A reminder to 250 participants reaches all their streams first.
    const participants = Array.from({ length: 250 }, (_, i) => ({ id: `many${i}` }));
    await meetingFiringNow(big, key, { participants });
    for (const s of streams) {
        await s.remindersAtLeast(1, EVENT_BOUND_MS);
    }
    const stopAt = Date.now();
    const st = await big.stop();
    const took = Date.now() - stopAt;
    t.diagnostic(`SIGTERM with ${STREAMS} open streams: exit ${JSON.stringify(st)} after ${took} ms`);
    assert.deepEqual(st, { code: 0, signal: null }, big.log.slice(-2000));
    assert.ok(took < SHUTDOWN_GRACE_MS, `exit took ${took} ms`);
    assert.doesNotMatch(big.log, /API violation/i);
    const ends = await Promise.all(streams.map((s) => Promise.race([s.ended, sleep(5000).then(() => null)])));
    assert.equal(ends.filter((e) => e === null).length, 0, 'streams still open after the exit');
    assert.equal(ends.filter((e) => e.how === 'end').length, STREAMS, 'every stream ended cleanly');
});
