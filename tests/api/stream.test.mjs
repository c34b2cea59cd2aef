// stream.test.mjs -- GET /v1/stream and GET /v1/me/notifications on one replica, read by the SSE
// client of sse.mjs: hello and its head, resume of a quiet stream from the cursor of hello, the
// cursors that get reset (garbage, purged, ahead), token expiry (reauth before exp, the end at
// exp, a new token resuming with nothing lost), the per-participant and per-replica limits, and
// the inbox's pages and head. Reminders are made due at once; the stream events are checked
// against what PostgreSQL recorded.
import { before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test, harness, sleep, waitFor } from './harness.mjs';
import {
    openLive, refused, mintToken, signToken, createSigningKey, meetingFiringNow, fireMany,
    dbHead, dbHeadAtLeast, dbEvents, tenantIdOf, assertOrderedUnique, assertInvalidToken, documented, closeAll,
} from './sse.mjs';

const HEARTBEAT_MS = 300;   // short, so that the server notices a closed client quickly
const RETRY_MS = 250;
const POLL_MS = 1000;       // the default catch-up poll
const PER_PARTICIPANT = 3;
const EVENT_BOUND_MS = 10000; // generous: a fired reminder is on the stream within this
const T_TEST = { timeout: 120000 };

const h = await harness('stream');
let srv;
let key;
let tenantId;

before(async () => {
    srv = await h.startServer({
        TOCSIN_STREAM_HEARTBEAT_MS: String(HEARTBEAT_MS),
        TOCSIN_STREAM_RETRY_MS: String(RETRY_MS),
        TOCSIN_STREAM_POLL_MS: String(POLL_MS),
        TOCSIN_STREAMS_PER_PARTICIPANT: String(PER_PARTICIPANT),
    });
    key = await srv.createKey('stream');
    tenantId = await tenantIdOf(h, 'stream');
});

afterEach(closeAll);

after(async () => {
    await srv.stop();
});

const token = async (sub, opts = {}) => (await mintToken(srv, key, { sub, ...opts })).token;

// tocsin_streams_open of a server.
async function streamsOpen(s) {
    const r = await s.req('GET', '/metrics', { validate: false });
    return Number(/^tocsin_streams_open (\d+)$/m.exec(r.text)[1]);
}

// Waits until the server counts n open streams (it notices a closed client at a heartbeat).
async function streamsOpenIs(s, n, timeoutMs = 10000) {
    const ok = await waitFor(async () => (await streamsOpen(s)) === n, timeoutMs, 50);
    assert.ok(ok, `tocsin_streams_open is ${await streamsOpen(s)}, want ${n} within ${timeoutMs} ms`);
}

test('hello: retry first, then the head as id; the response is an uncached event stream', T_TEST, async () => {
    // Someone else's reminder, seen on their stream: the replica has read the head that follows.
    const witness = await openLive(srv.base, { token: await token('h-other') });
    await meetingFiringNow(srv, key, { participants: [{ id: 'h-other' }] });
    await witness.remindersAtLeast(1, EVENT_BOUND_MS);
    const head = await dbHead(h, tenantId);
    assert.equal(witness.reminders[0].seq, head);
    const s = await openLive(srv.base, { token: await token('h1') });
    assert.equal(s.retry, RETRY_MS);
    assert.equal(s.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(s.headers['cache-control'], 'no-store');
    assert.deepEqual(s.frames[0], { ...s.frames[0], id: String(head), event: 'hello' });
    assert.deepEqual(JSON.parse(s.frames[0].data), { seq: head, resumed: false });
    // Heartbeats keep it alive.
    await s.until((x) => x.comments.length >= 2, 8000, 'two heartbeats');
    assert.deepEqual(s.comments.slice(0, 2).map((c) => c.text), ['hb', 'hb']);
    // Closed by the client: the replica notices at a heartbeat and frees both.
    s.close();
    witness.close();
    await streamsOpenIs(srv, 0);
});

test('a stream opened where the tenant had no stream says the true head and replays nothing older', T_TEST, async () => {
    const sub = 'idle1';
    const first = await openLive(srv.base, { token: await token(sub) });
    first.close();
    await streamsOpenIs(srv, 0); // the replica holds no stream of the tenant now
    const before = await dbHead(h, tenantId);
    await meetingFiringNow(srv, key, { participants: [{ id: sub }], n: 3 });
    await dbHeadAtLeast(h, tenantId, before + 3, EVENT_BOUND_MS);
    const head = await dbHead(h, tenantId);
    const s = await openLive(srv.base, { token: await token(sub) });
    await sleep(POLL_MS + 500); // past a catch-up poll: what it would read late has arrived
    assert.deepEqual(JSON.parse(s.frames[0].data), { seq: head, resumed: false }, 'hello names the head');
    assert.equal(s.frames[0].id, String(head));
    assert.deepEqual(s.reminders, [], 'reminders fired before the stream opened are not sent as new');
    s.close();
});

test('a quiet stream that reconnects with the cursor of hello gets what fired meanwhile, once', T_TEST, async () => {
    const sub = 'quiet1';
    const tok = await token(sub);
    const s = await openLive(srv.base, { token: tok });
    const cursor = Number(s.lastEventId);
    s.close();
    // Fired while it is away, with someone else's events interleaved.
    await fireMany([srv], key, 4, { participants: [{ id: sub }] });
    await meetingFiringNow(srv, key, { participants: [{ id: 'quiet-other' }], n: 2 });
    await fireMany([srv], key, 3, { participants: [{ id: 'quiet-other' }, { id: sub }] });
    const fired = await waitFor(async () => (await dbEvents(h, tenantId, sub, cursor)).length === 7, EVENT_BOUND_MS);
    assert.ok(fired, 'the seven reminders fired');
    for (const how of ['header', 'query']) {
        const want = await dbEvents(h, tenantId, sub, cursor); // the query run also gets the header run's live one
        const head = await dbHead(h, tenantId);
        const r = await openLive(srv.base, how === 'header' ? { token: tok, lastEventId: cursor } : { token: tok, cursor });
        // The hub may be a wake-up behind PostgreSQL: what it has not read yet follows live.
        const hello = JSON.parse(r.frames[0].data);
        assert.equal(r.frames[0].event, 'hello', how);
        assert.equal(r.frames[0].id, null, 'a resumed hello has no id');
        assert.equal(hello.resumed, true, how);
        assert.ok(hello.seq >= cursor && hello.seq <= head, `hello ${hello.seq}, cursor ${cursor}, head ${head}`);
        await r.until((x) => x.frames.some((f) => f.event === null && f.id === String(hello.seq)), EVENT_BOUND_MS,
            'the id-only block after the replay');
        const end = r.frames.findIndex((f) => f.event === null && f.id === String(hello.seq));
        assert.equal(r.frames.slice(1, end).filter((f) => f.event === 'reminder').length, hello.replayed, 'replayed');
        await r.remindersAtLeast(want.length, EVENT_BOUND_MS);
        assert.deepEqual(r.reminders.map((x) => x.seq), want.map((e) => e.seq), how);
        assertOrderedUnique(r.reminders, how);
        // Each body is the webhook's: its id names the occurrence.
        for (const x of r.reminders) {
            assert.equal(x.body.type, 'meeting.reminder');
            assert.match(x.id, /^rem_\d+_\d+$/);
            assert.ok(x.body.data.meeting.participants.some((p) => p.id === sub));
        }
        // Live again: the next reminder arrives once.
        await meetingFiringNow(srv, key, { participants: [{ id: sub }] });
        await r.remindersAtLeast(want.length + 1, EVENT_BOUND_MS);
        await sleep(300);
        assert.equal(r.reminders.length, want.length + 1);
        assertOrderedUnique(r.reminders, `${how} live`);
        r.close();
    }
});

test('Last-Event-ID wins over ?last_event_id=', T_TEST, async () => {
    const tok = await token('lei');
    const head = await dbHead(h, tenantId);
    const s = await openLive(srv.base, { token: tok, lastEventId: head, cursor: 'garbage' });
    assert.deepEqual(JSON.parse(s.frames[0].data), { seq: head, resumed: true, replayed: 0 });
    s.close();
});

test('garbage, purged and future cursors get reset with the head as id', T_TEST, async () => {
    const head = await dbHead(h, tenantId);
    let n = 0;
    const expectReset = async (opts, reason, what) => {
        n += 1; // a participant of its own each time: closed streams count until the server notices
        const s = await openLive(srv.base, { token: await token(`cur${n}`), ...opts });
        const f = s.frames[0];
        assert.equal(f.event, 'reset', what);
        assert.equal(f.id, String(await dbHead(h, tenantId)), `${what}: id`);
        assert.deepEqual(JSON.parse(f.data), { reason, head: Number(f.id) }, what);
        s.close();
    };
    for (const bad of ['abc', '-1', '1.5', '+7', '7a', '0x10', '99999999999999999999', '']) {
        await expectReset({ lastEventId: bad }, 'cursor_invalid', `Last-Event-ID ${JSON.stringify(bad)}`);
    }
    await expectReset({ cursor: 'x1' }, 'cursor_invalid', '?last_event_id=x1');
    await expectReset({ lastEventId: head + 5 }, 'cursor_ahead', 'five ahead');
    await expectReset({ lastEventId: '9223372036854775807' }, 'cursor_ahead', 'int64 max');

    // Retention: events up to `purged` are gone and the head records it (what a purge does).
    await fireMany([srv], key, 3, { participants: [{ id: 'curp' }] });
    await dbHeadAtLeast(h, tenantId, head + 3, EVENT_BOUND_MS);
    const keep = await openLive(srv.base, { token: await token('cur-keeper') }); // the tenant stays polled
    const purged = head + 1;
    await h.sql(`BEGIN; DELETE FROM stream_events WHERE tenant_id = ${tenantId} AND seq <= ${purged};
        UPDATE stream_heads SET purged_through = ${purged} WHERE tenant_id = ${tenantId}; COMMIT`);
    await sleep(2 * POLL_MS + 500); // the hub reads the heads at its poll
    await expectReset({ lastEventId: purged - 1 }, 'cursor_expired', 'a purged cursor');
    // The cursor at the purge line still resumes: nothing after it was removed.
    const s = await openLive(srv.base, { token: await token('curp'), lastEventId: purged });
    keep.close();
    assert.deepEqual(JSON.parse(s.frames[0].data), { seq: await dbHead(h, tenantId), resumed: true, replayed: 2 });
    s.close();
});

test('a resume more than 1,000 events behind is a reset, also when a meeting-limited token would match few of them', T_TEST, async () => {
    // A tenant of its own with 1,100 events of participant `far` written as the fire writes them:
    // 1,095 of meeting a, then 5 of meeting b. A token limited to b matches 5 of them, but the
    // database read of a resume stops after 1,001: replaying what that read matched and moving the
    // cursor to the head once lost b's 5 events.
    const k = await srv.createKey('stream-far');
    const tid = await tenantIdOf(h, 'stream-far');
    const mk = async (title) => {
        const r = await srv.req('POST', '/v1/meetings', { key: k, json: { title, starts_at: '2099-01-01T10:00:00Z', participants: [{ id: 'far' }] } });
        assert.equal(r.status, 201, r.text);
        return r.json;
    };
    const a = await mk('a');
    const b = await mk('b');
    const base = await dbHead(h, tid);
    await h.sql(`BEGIN;
        INSERT INTO stream_events (tenant_id, seq, reminder_id, fire_at, fired_at, meeting_id, audience)
        SELECT ${tid}, x, 1, now(), now(), CASE WHEN x <= ${base} + 1095 THEN '${a.id}' ELSE '${b.id}' END::uuid, ARRAY['far']
        FROM generate_series(${base} + 1, ${base} + 1100) AS x;
        INSERT INTO stream_heads (tenant_id, seq) VALUES (${tid}, ${base} + 1100)
        ON CONFLICT (tenant_id) DO UPDATE SET seq = EXCLUDED.seq;
        COMMIT`);
    const head = base + 1100;
    const first = async (opts) => {
        const s = await openLive(srv.base, { token: (await mintToken(srv, k, opts.claims)).token, lastEventId: opts.cursor });
        const f = s.frames[0];
        s.close();
        return f;
    };
    for (const claims of [{ sub: 'far' }, { sub: 'far', mtg: [b.id] }]) {
        const f = await first({ claims, cursor: base });
        assert.equal(f.event, 'reset', `${JSON.stringify(claims)}: ${JSON.stringify(f)}`);
        assert.deepEqual(JSON.parse(f.data), { reason: 'too_far_behind', head });
    }
    // 1,000 behind is not too far: b's 5 events come back (from the database or the ring).
    const s = await openLive(srv.base, { token: (await mintToken(srv, k, { sub: 'far', mtg: [b.id] })).token, lastEventId: base + 100 });
    assert.deepEqual(JSON.parse(s.frames[0].data), { seq: head, resumed: true, replayed: 5 });
    await s.until((x) => x.frames.some((f2) => f2.id === String(head) && f2.event === null), 5000, 'the head as id');
    assert.deepEqual(s.frames.filter((f2) => f2.event === 'reminder').map((f2) => Number(f2.id)),
        [head - 4, head - 3, head - 2, head - 1, head]);
    s.close();
});

test('token expiry: reauth before exp, the stream ends at exp, a new token resumes with nothing lost', T_TEST, async () => {
    const sub = 'exp1';
    const minted = await mintToken(srv, key, { sub, ttl_s: 6 });
    const expMs = Date.parse(minted.expires_at);
    const s = await openLive(srv.base, { token: minted.token });
    // Less than 30 s to live: reauth at once, with the token's expiry.
    const reauth = await s.next('reauth', 5000);
    assert.deepEqual(JSON.parse(reauth.data), { expires_at: minted.expires_at });
    assert.ok(reauth.at < expMs);
    await meetingFiringNow(srv, key, { participants: [{ id: sub }] });
    await s.remindersAtLeast(1, EVENT_BOUND_MS);
    const end = await Promise.race([s.ended, sleep(expMs - Date.now() + 5000).then(() => null)]);
    assert.ok(end, `the stream did not end within 5 s of exp: ${s.describe()}`);
    assert.equal(end.how, 'end', 'a clean end of the response');
    assert.ok(end.at >= expMs - 50 && end.at <= expMs + 1500, `ended ${end.at - expMs} ms after exp`);
    // Fired while no stream is open; a new token picks up from the cursor.
    const cursor = s.lastEventId;
    await fireMany([srv], key, 3, { participants: [{ id: sub }] });
    const missed = await waitFor(async () => {
        const ev = await dbEvents(h, tenantId, sub, Number(cursor));
        return ev.length === 3 && ev;
    }, EVENT_BOUND_MS);
    assert.ok(missed, 'three reminders fired');
    const r = await openLive(srv.base, { token: await token(sub), lastEventId: cursor });
    await r.remindersAtLeast(3, EVENT_BOUND_MS);
    assert.deepEqual(r.reminders.map((x) => x.seq), missed.map((e) => e.seq));
    assert.ok(!s.reminders.some((x) => r.reminders.some((y) => y.id === x.id)), 'nothing twice');
    r.close();
});

test('reauth comes 30 s before exp', T_TEST, async () => {
    const sk = await createSigningKey(srv, key);
    const nowS = Math.floor(Date.now() / 1000);
    const tok = await signToken(sk, { sub: 'exp2', iat: nowS, exp: nowS + 33 });
    const s = await openLive(srv.base, { token: tok });
    const reauth = await s.next('reauth', 10000);
    const lead = (nowS + 33) * 1000 - reauth.at;
    assert.ok(lead <= 30000 && lead >= 28500, `reauth ${lead} ms before exp`);
    assert.equal(s.end, null, 'the stream is still open');
    s.close();
    await h.sql(`UPDATE signing_keys SET revoked_at = now() WHERE id = '${sk.id}'`);
});

test('a stream whose client closed its socket frees its place within seconds, not at the next heartbeat', T_TEST, async () => {
    // A minute between heartbeats: a failed heartbeat write cannot be what notices the close.
    const quiet = await h.startServer({ TOCSIN_STREAM_HEARTBEAT_MS: '60000', TOCSIN_STREAMS_PER_PARTICIPANT: '1' });
    const tok = await token('peer1');
    const s = await openLive(quiet.base, { token: tok });
    assert.equal((await refused(quiet.base, { token: tok })).status, 429);
    s.close();
    await streamsOpenIs(quiet, 0, 5000);
    const again = await openLive(quiet.base, { token: tok });
    again.close();
    await quiet.stop();
});

test('a participant gets at most TOCSIN_STREAMS_PER_PARTICIPANT streams; the next is 429 with Retry-After', T_TEST, async () => {
    await streamsOpenIs(srv, 0);
    const base = 0;
    const tok = await token('lim1');
    const open = [];
    for (let i = 0; i < PER_PARTICIPANT; i++) {
        open.push(await openLive(srv.base, { token: tok }));
    }
    const r = await refused(srv.base, { token: tok });
    assert.equal(r.status, 429, r.body);
    assert.match(r.headers['retry-after'], /^[1-9]\d*$/);
    assert.equal(r.json.code, 'too_many_streams');
    assert.equal(r.headers['content-type'], 'application/problem+json');
    // Another participant is not affected.
    const other = await openLive(srv.base, { token: await token('lim2') });
    // A closed one frees its place.
    open.pop().close();
    await streamsOpenIs(srv, base + PER_PARTICIPANT);
    open.push(await openLive(srv.base, { token: tok }));
    for (const s of [...open, other]) {
        s.close();
    }
    await streamsOpenIs(srv, base);
});

test('a replica at TOCSIN_STREAMS_MAX answers 503 with Retry-After and still serves the API', T_TEST, async () => {
    const small = await h.startServer({ TOCSIN_STREAMS_MAX: '2', TOCSIN_STREAM_HEARTBEAT_MS: String(HEARTBEAT_MS) });
    try {
        const a = await openLive(small.base, { token: await token('max1') });
        const b = await openLive(small.base, { token: await token('max2') });
        const r = await refused(small.base, { token: await token('max3') });
        assert.equal(r.status, 503, r.body);
        assert.match(r.headers['retry-after'], /^[1-9]\d*$/);
        assert.equal(r.json.code, 'streams_unavailable');
        assert.equal((await small.req('GET', '/healthz')).status, 200);
        assert.equal((await small.req('GET', '/v1/meetings', { key })).status, 200);
        a.close();
        b.close();
    } finally {
        const st = await small.stop();
        assert.deepEqual(st, { code: 0, signal: null });
    }
});

test('inbox: the newest page and head, then pages after a cursor, the stream\'s ids', T_TEST, async () => {
    const sub = 'inbox1';
    const tok = await token(sub);
    const get = (q) => srv.req('GET', `/v1/me/notifications${q}`, { key: tok, validate: documented('GET', '/v1/me/notifications') });
    const empty = await get('');
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(empty.json, { items: [], head: await dbHead(h, tenantId), unread_count: 0 });

    const s = await openLive(srv.base, { token: tok });
    await fireMany([srv], key, 7, { participants: [{ id: sub }] });
    await meetingFiringNow(srv, key, { participants: [{ id: 'inbox-other' }], n: 2 });
    await s.remindersAtLeast(7, EVENT_BOUND_MS);
    const want = await dbEvents(h, tenantId, sub);
    assert.equal(want.length, 7);
    const head = await dbHeadAtLeast(h, tenantId, want.at(-1).seq + 2, EVENT_BOUND_MS);

    const newest = await get('?limit=3');
    assert.equal(newest.json.head, head);
    assert.deepEqual(newest.json.items.map((i) => i.seq), want.slice(-3).map((e) => e.seq), 'the newest three, ascending');
    const all = await get('');
    assert.deepEqual(all.json.items.map((i) => i.seq), want.map((e) => e.seq), 'default limit: all seven');
    // Items are the stream's bodies plus seq and the reader's marks (none set here).
    for (const item of all.json.items) {
        const onStream = s.reminders.find((x) => x.seq === item.seq);
        assert.ok(onStream, `seq ${item.seq} was on the stream`);
        const { seq, read_at: readAt, archived_at: archivedAt, ...body } = item;
        assert.deepEqual([readAt, archivedAt], [null, null]);
        assert.deepEqual(body, onStream.body);
    }
    // Paging forward from 0 in pages of two reaches every item once, then an empty page.
    const paged = [];
    let after = 0;
    for (let i = 0; i < 10; i++) {
        const p = await get(`?after=${after}&limit=2`);
        assert.equal(p.status, 200);
        assert.equal(p.json.head, head);
        if (p.json.items.length === 0) {
            break;
        }
        assert.ok(p.json.items.length <= 2);
        paged.push(...p.json.items.map((x) => x.seq));
        after = p.json.items.at(-1).seq;
    }
    assert.deepEqual(paged, want.map((e) => e.seq));
    assert.deepEqual((await get(`?after=${head}`)).json, { items: [], head, unread_count: 7 }, 'the count is of all items');
    for (const q of ['?limit=0', '?limit=201', '?limit=x', '?after=-1', '?after=1.5', '?after=1&after=2', '?foo=1']) {
        const r = await get(q);
        assert.equal(r.status, 400, `${q}: ${r.text}`);
        assert.equal(r.json.code, 'bad_query', q);
    }
    // Without the notifications scope: 403; with a bad token: 401.
    const noScope = await srv.req('GET', '/v1/me/notifications', { key: await token(sub, { scope: 'meetings:read' }), validate: false });
    assert.equal(noScope.status, 403);
    assert.equal(noScope.json.code, 'insufficient_scope');
    assertInvalidToken(await srv.req('GET', '/v1/me/notifications', { key: `${tok}x`, validate: false }), 'a bad signature');
    s.close();
});

test('a bad token on the stream is 401 invalid_token, header or URL', T_TEST, async () => {
    const tok = await token('bad1');
    for (const opts of [{ token: `${tok}x` }, { urlToken: `${tok}x` }, { urlToken: 'not.a.token' }]) {
        const r = await refused(srv.base, opts);
        assertInvalidToken(r, JSON.stringify(opts).slice(0, 40));
    }
    const apiKey = await refused(srv.base, { token: key });
    assert.equal(apiKey.status, 403, 'an API key has no participant to stream for');
    assert.equal(apiKey.json.code, 'insufficient_scope');
    const noAuth = await refused(srv.base, {});
    assert.equal(noAuth.status, 401);
    const extra = await refused(srv.base, { token: tok, query: { foo: '1' } });
    assert.equal(extra.status, 400);
});

// A server whose catch-up poll is a minute away: an event whose wake-up is lost waits for it.
const hWake = await harness('stream_wake');

test('a fire that commits while the hub reads is not left for the catch-up poll', T_TEST, async (t) => {
    const ROUNDS = 12, EACH = 6, ROUND_BOUND_MS = 8000;
    const one = await hWake.startServer({ TOCSIN_STREAM_POLL_MS: '60000' });
    t.after(() => one.stop());
    const k = await one.createKey('stream-wake');
    const tok = (await mintToken(one, k, { sub: 'w1' })).token;
    const s = await openLive(one.base, { token: tok });
    // Rounds of reminders fired together, from parallel requests: fires commit one just after
    // another, and a wake-up comes while the hub reads the one before. The last of a round has no
    // later fire to wake the hub: if its wake-up were lost, it would wait out the minute.
    for (let round = 1; round <= ROUNDS; round++) {
        await fireMany([one], k, EACH, { participants: [{ id: 'w1' }], parallel: EACH });
        await s.until((x) => x.reminders.length >= round * EACH, ROUND_BOUND_MS,
            `round ${round}: ${round * EACH} reminders on the stream within ${ROUND_BOUND_MS} ms`);
    }
    assertOrderedUnique(s.reminders, 'the stream');
    s.close();
});

// A client that sends its request and then reads nothing, through a 2 KiB receive buffer: once
// its window is shut libmicrohttpd never calls the stream's reader again, so the stream's end
// is never taken.
const STUCK_CLIENT = `
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
s.connect(('127.0.0.1', int(sys.argv[1])))
s.sendall(('GET /v1/stream HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAccept: text/event-stream\\r\\n'
           'Authorization: Bearer ' + sys.argv[2] + '\\r\\n\\r\\n').encode())
print('sent', flush=True)
time.sleep(300)
`;
const hStuck = await harness('stream_stuck');

test('a stream whose client reads nothing is cut a heartbeat after its end, not held forever', T_TEST, async (t) => {
    const AGE_S = 12; // time enough to fill its buffers first, also under ASan
    const one = await hStuck.startServer({ TOCSIN_STREAM_HEARTBEAT_MS: '500', TOCSIN_STREAM_MAX_AGE_S: String(AGE_S),
        TOCSIN_STREAM_BUFFER_MAX: String(16 << 20) }); // more than it gets: no slow-reader cut
    t.after(() => one.stop());
    const k = await one.createKey('stream-stuck');
    const tok = (await mintToken(one, k, { sub: 's1' })).token;
    const client = spawn('python3', ['-c', STUCK_CLIENT, String(new URL(one.base).port), tok], { stdio: ['ignore', 'pipe', 'inherit'] });
    t.after(() => client.kill('SIGKILL'));
    await new Promise((r) => client.stdout.once('data', r));
    const opened = Date.now();
    await streamsOpenIs(one, 1);
    // Far more than the client's window and the server's socket buffer (4 MiB at most) take: 200
    // events of about 36 KiB each (the largest description and metadata); the rest waits in the
    // stream's buffer.
    const big = { description: '\u{1D11E}'.repeat(5000), metadata: { pad: 'x'.repeat(16000) } };
    const starts = new Date(Date.now() + 2 * 60000).toISOString();
    for (let i = 0; i < 40; i++) {
        const r = await one.req('POST', '/v1/meetings', { key: k, json: { title: `big ${i}`, starts_at: starts, ...big,
            participants: [{ id: 's1' }], reminders: [3, 4, 5, 6, 7].map((m) => ({ minutes_before: m })) } });
        assert.equal(r.status, 201, r.text);
    }
    const tenant = await tenantIdOf(hStuck, 'stream-stuck');
    assert.ok(await waitFor(async () => (await dbHead(hStuck, tenant)) >= 200, EVENT_BOUND_MS), 'all fired');
    await sleep(2000); // the hub writes them out
    // Its end comes 20 % early at the soonest (the age's jitter): this is well before.
    assert.ok(Date.now() - opened < (AGE_S * 0.8 - 2) * 1000, 'the events were all written before the stream\'s end');
    await streamsOpenIs(one, 1);
    // Its end (the maximum age and its jitter) passes; a heartbeat later it is cut.
    await streamsOpenIs(one, 0, 2 * AGE_S * 1000);
});
