// stream_hub.test.mjs -- the stream hub while its database is slow or hangs, each server on a
// PostgreSQL reached through a forwarder of this file (h.postgresProxy) that delays or holds the
// replies: with every reply held (libpq's statement and connects blocking) the streams still get
// their heartbeats, their reauth warning and their end (at the maximum age: the timer of an end
// at the token's exp); a cursor ahead of the
// replica's head is judged on a read of the heads that started after it came, not on one that was
// under way (and read the head before the client's event existed); with every read 40 ms slower,
// one tenant's fifty clients reconnecting again and again with cursors older than the replica's
// ring (each a read of PostgreSQL) delay another tenant's live events by about one read, not by
// all of theirs.
import { after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { test, harness, sleep } from './harness.mjs';
import {
    openLive, openStream, mintToken, closeAll, dbHead, dbEvents, tenantIdOf, meetingFiringNow,
} from './sse.mjs';

const HEARTBEAT_MS = 300;
const POLL_MS = 200;       // the hub reads heads this often: it is soon inside a call that hangs
const END_SLACK_MS = 1500; // as stream.test.mjs: a stream ends this close to its end time

const h = await harness('stream_hub');
const servers = [];

afterEach(closeAll);

after(async () => {
    for (const s of servers) {
        await s.stop();
    }
});

// A server whose every PostgreSQL connection goes through a forwarder of its own; the tenant's
// API key.
async function serverThroughProxy(extra = {}) {
    const proxy = await h.postgresProxy();
    const srv = await h.startServer({
        TOCSIN_DATABASE_URL: proxy.url,
        TOCSIN_STREAM_HEARTBEAT_MS: String(HEARTBEAT_MS),
        TOCSIN_STREAM_POLL_MS: String(POLL_MS),
        ...extra,
    });
    servers.push(srv);
    return { proxy, srv, key: await srv.createKey(`hub${servers.length}`) };
}

test('PostgreSQL hangs under the hub: heartbeats go on, reauth comes and the stream ends at its maximum age', async (t) => {
    const AGE_S = 10; // the least TOCSIN_STREAM_MAX_AGE_S: the end comes from the same timer as at exp
    const { proxy, srv, key } = await serverThroughProxy({ TOCSIN_STREAM_MAX_AGE_S: String(AGE_S) });
    t.after(() => proxy.release());
    // 33 s to live: the reauth warning is due 3 s from now, while PostgreSQL hangs.
    const minted = await mintToken(srv, key, { sub: 'hang1', ttl_s: 33 });
    const expMs = Date.parse(minted.expires_at);
    const opened = Date.now();
    const s = await openLive(srv.base, { token: minted.token });
    proxy.hold();
    const heldAt = Date.now();
    await sleep(2 * POLL_MS + 500); // the hub's next read of the heads is waiting for its reply now
    const from = s.comments.length;
    await s.until((x) => x.comments.length >= from + 5, 10 * HEARTBEAT_MS,
        'five heartbeats while PostgreSQL hangs');
    const reauth = await s.next('reauth', expMs - 30000 - Date.now() + 5000);
    assert.deepEqual(JSON.parse(reauth.data), { expires_at: minted.expires_at });
    assert.ok(reauth.at > heldAt, 'the warning came while PostgreSQL hung');
    // The age spread by its jitter (20 %) from the opening.
    const first = opened + AGE_S * 800, last = opened + AGE_S * 1200 + END_SLACK_MS;
    const end = await Promise.race([s.ended, sleep(last - Date.now() + 5000).then(() => null)]);
    assert.ok(end, `the stream did not end within 5 s of its age: ${s.describe()}`);
    assert.equal(end.how, 'end', 'a clean end of the response');
    assert.ok(end.at >= first - 50 && end.at <= last, `ended ${end.at - opened} ms after it opened (age ${AGE_S} s)`);
    assert.ok(end.at < expMs - 10000, 'the end came from the age, well before exp');
});

test('a cursor ahead of the replica is judged on a read of the heads that started after it came', async () => {
    const { proxy, srv, key } = await serverThroughProxy({
        TOCSIN_AUTH_CACHE_MS: '60000', // the stream opened while PostgreSQL hangs needs no read
        TOCSIN_HTTP_THREADS: '4',      // two stream threads, both warmed below
    });
    const tenant = await tenantIdOf(h, `hub${servers.length}`);
    const tok = async (sub) => (await mintToken(srv, key, { sub })).token;
    const witness = await openLive(srv.base, { token: await tok('ah-witness') }); // the tenant is polled
    for (let i = 0; i < 4; i++) { // every stream thread has the signing key in its cache
        (await openLive(srv.base, { token: await tok(`ah-warm${i}`) })).close();
    }
    const meeting = await srv.req('POST', '/v1/meetings', { key, json: { title: 'ahead', starts_at: '2099-01-01T10:00:00Z',
        participants: [{ id: 'ah1' }] } });
    assert.equal(meeting.status, 201, meeting.text);
    const token = await tok('ah1');
    const head = await dbHead(h, tenant);
    proxy.hold();
    await sleep(2 * POLL_MS + 300); // a read of the heads is under way: PostgreSQL read head, its reply waits
    // A reminder fired on another replica: this one has no wake-up for it (nor a reply yet).
    await h.sql(`BEGIN;
        INSERT INTO stream_events (tenant_id, seq, reminder_id, fire_at, fired_at, meeting_id, audience)
        VALUES (${tenant}, ${head + 1}, 1, now(), now(), '${meeting.json.id}', ARRAY['ah1']);
        INSERT INTO stream_heads (tenant_id, seq) VALUES (${tenant}, ${head + 1})
        ON CONFLICT (tenant_id) DO UPDATE SET seq = EXCLUDED.seq;
        COMMIT`);
    // Its client got it there and comes here with its id.
    const opening = openStream(srv.base, { token, lastEventId: head + 1 });
    await sleep(500);
    proxy.release();
    const s = await opening;
    assert.equal(s.status, 200, s.body);
    await s.until((x) => x.frames.length > 0, 10000, 'the first frame');
    assert.equal(s.frames[0].event, 'hello', `not judged ahead on a read that was under way: ${s.describe()}`);
    assert.deepEqual(JSON.parse(s.frames[0].data), { seq: head + 1, resumed: true, replayed: 0 });
    await sleep(2 * POLL_MS + 300);
    assert.deepEqual(s.reminders, [], 'its own event is not sent again');
    witness.close();
});

test('fifty resumes from PostgreSQL over and over delay another tenant\'s live events by about one read', async (t) => {
    const READ_MS = 40;          // every reply of PostgreSQL comes this much later
    const CLIENTS = 50;          // tenant A's, each reconnecting with the same old cursor at once
    const FILLER = 1100;         // events of A nobody here gets: the cursor is older than the ring
    const LIVE = 4;              // reminders of tenant B fired while A's clients reconnect
    const LATE_BOUND_MS = 1000;  // generous: a read is 40-120 ms here, fifty of them seconds
    const { proxy, srv, key } = await serverThroughProxy({ TOCSIN_HTTP_CONNECTIONS_PER_ADDR: '1000' });
    const keyB = await srv.createKey('hub-fair-b');
    const tenantA = await tenantIdOf(h, `hub${servers.length}`);
    const tenantB = await tenantIdOf(h, 'hub-fair-b');
    const filler = await srv.req('POST', '/v1/meetings', { key, json: { title: 'filler', starts_at: '2099-01-01T10:00:00Z',
        participants: [{ id: 'filler' }] } });
    assert.equal(filler.status, 201, filler.text);
    const cursor = await dbHead(h, tenantA);
    await h.sql(`BEGIN;
        INSERT INTO stream_events (tenant_id, seq, reminder_id, fire_at, fired_at, meeting_id, audience)
        SELECT ${tenantA}, x, 1, now(), now(), '${filler.json.id}', ARRAY['filler']
        FROM generate_series(${cursor + 1}, ${cursor + FILLER}) AS x;
        INSERT INTO stream_heads (tenant_id, seq) VALUES (${tenantA}, ${cursor + FILLER})
        ON CONFLICT (tenant_id) DO UPDATE SET seq = EXCLUDED.seq;
        COMMIT`);
    const tokensA = await Promise.all(Array.from({ length: CLIENTS }, async (_, i) =>
        (await mintToken(srv, key, { sub: `a${i}`, ttl_s: 3600 })).token));
    const b = await openLive(srv.base, { token: (await mintToken(srv, keyB, { sub: 'b1', ttl_s: 3600 })).token });
    proxy.delay(READ_MS);
    let stop = false;
    let resumes = 0;
    let waiting = 0; // A's clients that wait for their hello
    const client = async (token) => {
        while (!stop) {
            waiting++;
            const s = await openLive(srv.base, { token, lastEventId: cursor }, 60000);
            waiting--;
            assert.equal(s.frames[0].event, 'hello', s.describe());
            resumes++;
            s.close();
        }
    };
    const flood = Promise.all(tokensA.map(client));
    t.after(() => { stop = true; });
    await sleep(1500); // A's resumes are queued up
    const queued = [];
    for (let i = 0; i < LIVE; i++) {
        queued.push(waiting);
        await meetingFiringNow(srv, keyB, { participants: [{ id: 'b1' }] });
        await b.remindersAtLeast(i + 1, 30000);
        await sleep(300);
    }
    const during = resumes;
    stop = true;
    await flood;
    proxy.delay(0);
    const fired = new Map((await dbEvents(h, tenantB, 'b1')).map((e) => [e.seq, e.firedMs]));
    const late = b.reminders.map((r) => r.at - fired.get(r.seq));
    t.diagnostic(`B's lateness ${late.join(', ')} ms; ${during} resumes of A meanwhile, ` +
        `${queued.join(', ')} waiting at each fire`);
    assert.ok(Math.min(...queued) >= CLIENTS / 2, `A's clients waiting at B's fires: ${queued.join(', ')}`);
    assert.ok(Math.max(...late) <= LATE_BOUND_MS, `B's events ${late.join(', ')} ms late`);
});
