// stream_hub.test.mjs -- the stream hub while its database is slow or hangs, each server on a
// PostgreSQL reached through a forwarder of this file (h.postgresProxy) that delays or holds the
// replies: with every reply held (libpq's statement and connects blocking) the streams still get
// their heartbeats, their reauth warning and their end at the token's exp.
import { after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { test, harness, sleep } from './harness.mjs';
import { openLive, mintToken, closeAll } from './sse.mjs';

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
