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
    openLive, openStream, follow, mintToken, signToken, createSigningKey, meetingFiringNow, fireMany, dbEvents,
    tenantIdOf, assertOrderedUnique, closeAll,
} from './sse.mjs';

const BUFFER_MAX = 4 << 20;     // TOCSIN_STREAM_BUFFER_MAX: more than what one hub round writes here
const FAST = 4;                 // readers that keep reading
const BIG_MEETINGS = 60;        // of five reminders each: 300 frames of about 40 KB, 12 MB
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

async function metric(s, name) {
    const r = await s.req('GET', '/metrics', { validate: false });
    const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(r.text);
    assert.ok(m, `no ${name} in /metrics`);
    return Number(m[1]);
}

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
        const sizes = r.reminders.map((x) => JSON.stringify(x.body).length);
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
