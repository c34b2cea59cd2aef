// stream_hub.test.mjs -- the stream hub while its database is slow or hangs, each server on a
// PostgreSQL reached through a forwarder of this file (h.postgresProxy) that delays or holds the
// replies: with every reply held (libpq's statement and connects blocking) the streams still get
// their heartbeats, their reauth warning and their end at the token's exp; a cursor ahead of the
// replica's head is judged on a read of the heads that started after it came, not on one that was
// under way (and read the head before the client's event existed).
import { after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { test, harness, sleep } from './harness.mjs';
import { openLive, openStream, mintToken, closeAll, dbHead, tenantIdOf } from './sse.mjs';

const HEARTBEAT_MS = 300;
const POLL_MS = 200;       // the hub reads heads this often: it is soon inside a call that hangs
const END_SLACK_MS = 1500; // as stream.test.mjs: a stream ends this close to exp

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

test('PostgreSQL hangs under the hub: heartbeats go on, reauth comes and the stream ends at exp', async (t) => {
    const { proxy, srv, key } = await serverThroughProxy();
    t.after(() => proxy.release());
    // 33 s to live: the reauth warning is due 3 s from now, while PostgreSQL hangs.
    const minted = await mintToken(srv, key, { sub: 'hang1', ttl_s: 33 });
    const expMs = Date.parse(minted.expires_at);
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
    const end = await Promise.race([s.ended, sleep(expMs - Date.now() + 5000).then(() => null)]);
    assert.ok(end, `the stream did not end within 5 s of exp: ${s.describe()}`);
    assert.equal(end.how, 'end', 'a clean end of the response');
    assert.ok(end.at >= expMs - 50 && end.at <= expMs + END_SLACK_MS, `ended ${end.at - expMs} ms after exp`);
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
