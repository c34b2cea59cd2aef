// browser_contract.test.mjs -- every browser-facing endpoint answers as api/openapi.yaml says:
// signing keys, browser tokens, the scopes and errors of tokens on every kind of route, the inbox,
// the stream's frames (hello, reminder, cursor, reset, reauth) and its limits, CORS, the client
// module and the demo page. Each response is checked against the contract by the harness; stream
// frames by contract.mjs's checkEventStream. The Chromium tests drive the same endpoints through
// web/client.js and the demo page.
import { before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { harness, test, waitFor, MIN } from './harness.mjs';
import { checkEventStream, checkResponse, parseEventStream } from './contract.mjs';

const ORIGIN = 'http://app.test:8000';
const h = await harness('browser_contract');
let srv;
let key;

before(async () => {
    srv = await h.startServer({
        TOCSIN_CORS_ORIGINS: `${ORIGIN}, http://other.test`,
        TOCSIN_DEMO: '1',
        TOCSIN_STREAMS_PER_PARTICIPANT: '1',
        TOCSIN_STREAMS_MAX: '2',
        TOCSIN_STREAM_HEARTBEAT_MS: '500',
        TOCSIN_STREAM_RETRY_MS: '250',
    });
    key = await srv.createKey('browser');
});

async function mint(body, apiKey = key) {
    const r = await srv.req('POST', '/v1/browser-tokens', { key: apiKey, json: body });
    assert.equal(r.status, 201, r.text);
    return r.json.token;
}

// Opens GET /v1/stream with node:http (the body never ends by itself). Returns {status, headers,
// text(), until(pred, ms), close()}; text() is what arrived so far.
function openStream(path, headers = {}) {
    return new Promise((resolve, reject) => {
        const req = http.get(`${srv.base}${path}`, { headers }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d) => { text += d; });
            res.on('error', () => {});
            const s = {
                status: res.statusCode,
                headers: res.headers,
                text: () => text,
                ended: false,
                until: async (pred, ms = 10000) => {
                    const ok = await waitFor(() => pred(text) || s.ended, ms, 20);
                    assert.ok(ok && pred(text), `stream: condition not met within ${ms} ms; got ${JSON.stringify(text.slice(-400))}`);
                },
                close: () => req.destroy(),
            };
            res.on('end', () => { s.ended = true; });
            resolve(s);
        });
        req.on('error', (e) => (e.code === 'ECONNRESET' ? null : reject(e)));
    });
}

// Opens a stream, retrying while the participant's or the replica's slots are still held by
// streams closed just before (a closed stream is noticed at its next heartbeat).
async function openFreeStream(path, headers = {}) {
    const end = Date.now() + 5000;
    for (;;) {
        const s = await openStream(path, headers);
        if ((s.status !== 429 && s.status !== 503) || Date.now() > end) {
            return s;
        }
        s.close();
        await new Promise((r) => setTimeout(r, 100));
    }
}

// A wrapped response for checkResponse from what a stream returned so far.
const asResponse = (s) => ({
    status: s.status,
    header: (n) => s.headers[n.toLowerCase()] ?? null,
    contentType: s.headers['content-type'],
    text: s.text(),
    get json() { return JSON.parse(s.text()); },
});

const frameCount = (text) => parseEventStream(text).length;

test('signing keys: create shows the secret once, list, two live at most, revoke, unknown 404', async () => {
    const a = await srv.req('POST', '/v1/signing-keys', { key });
    assert.equal(a.status, 201, a.text);
    assert.equal(a.header('location'), `/v1/signing-keys/${a.json.id}`);
    const b = await srv.req('POST', '/v1/signing-keys', { key, json: {} });
    assert.equal(b.status, 201, b.text);
    const third = await srv.req('POST', '/v1/signing-keys', { key });
    assert.equal(third.status, 409);
    assert.equal(third.json.code, 'signing_key_limit');
    const list = await srv.req('GET', '/v1/signing-keys', { key });
    assert.deepEqual(list.json.items.map((k) => k.id), [a.json.id, b.json.id]);
    assert.ok(!('secret' in list.json.items[0]));
    const body = await srv.req('POST', '/v1/signing-keys', { key, json: { name: 'x' } });
    assert.equal(body.status, 400);
    assert.equal(body.json.code, 'validation');
    const gone = await srv.req('DELETE', '/v1/signing-keys/sk_AAAAAAAAAAAAAAAA', { key });
    assert.equal(gone.status, 404);
    assert.equal(gone.json.code, 'signing_key_not_found');
    for (const k of [a.json.id, b.json.id]) {
        assert.equal((await srv.req('DELETE', `/v1/signing-keys/${k}`, { key })).status, 204);
    }
    assert.deepEqual((await srv.req('GET', '/v1/signing-keys', { key })).json.items, []);
});

test('browser tokens: minted on a key made on first use; bad requests are validation errors', async () => {
    const r = await srv.req('POST', '/v1/browser-tokens', { key, json: { sub: 'u1', scope: 'notifications' } });
    assert.equal(r.status, 201, r.text);
    const keys = (await srv.req('GET', '/v1/signing-keys', { key })).json.items;
    assert.ok(keys.some((k) => k.id === r.json.kid), 'the token is signed with a listed key');
    const exp = JSON.parse(Buffer.from(r.json.token.split('.')[1], 'base64url')).exp;
    assert.equal(r.json.expires_at, new Date(exp * 1000).toISOString());
    for (const bad of [{ sub: 'u1', scope: 'admin' }, { sub: '', scope: '' }, { sub: 'u1', scope: 'push', ttl_s: 0 },
        { sub: 'u1', scope: 'push', ttl_s: 86401 }, { sub: 'u1', scope: 'push', mtg: ['x'] }, { scope: 'push' }]) {
        const e = await srv.req('POST', '/v1/browser-tokens', { key, json: bad });
        assert.equal(e.status, 400, JSON.stringify(bad));
        assert.equal(e.json.code, 'validation');
    }
});

test('a browser token never reaches API-key routes; an API key never reaches the participant routes', async () => {
    const tok = await mint({ sub: 'u1', scope: 'meetings:read meetings:write notifications push' });
    for (const [method, path] of [['GET', '/v1/webhooks'], ['POST', '/v1/signing-keys'], ['GET', '/v1/signing-keys'],
        ['POST', '/v1/browser-tokens'], ['GET', '/v1/meetings/00000000-0000-0000-0000-000000000000/deliveries']]) {
        const r = await srv.req(method, path, { key: tok, json: method === 'POST' ? { sub: 'u1', scope: '' } : undefined });
        assert.equal(r.status, 403, `${method} ${path}`);
        assert.equal(r.json.code, 'insufficient_scope');
        assert.equal(r.header('www-authenticate'), 'Bearer error="insufficient_scope"');
    }
    for (const path of ['/v1/me/notifications', '/v1/stream']) {
        const r = await srv.req('GET', path, { key });
        assert.equal(r.status, 403, path);
        assert.equal(r.json.code, 'insufficient_scope');
    }
    const bad = await srv.req('GET', '/v1/meetings', { key: `${tok.slice(0, -2)}AA` });
    assert.equal(bad.status, 401);
    assert.equal(bad.json.code, 'invalid_token');
    assert.equal(bad.header('www-authenticate'), 'Bearer error="invalid_token"');
});

test('meetings with tokens: organizer_id is sub, participants may read but not write, others see 404, If-Match on PATCH', async () => {
    const writer = await mint({ sub: 'org', scope: 'meetings:read meetings:write' });
    const reader = await mint({ sub: 'u2', scope: 'meetings:read' });
    const u2write = await mint({ sub: 'u2', scope: 'meetings:write' });
    const stranger = await mint({ sub: 'u9', scope: 'meetings:read meetings:write' });
    const created = await srv.req('POST', '/v1/meetings', {
        key: writer,
        json: { title: 'Planning', starts_at: new Date(Date.now() + 60 * MIN).toISOString(), participants: [{ id: 'u2' }] },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json.organizer_id, 'org');
    const id = created.json.id;
    assert.equal((await srv.req('GET', `/v1/meetings/${id}`, { key: reader })).status, 200);
    const denied = await srv.req('POST', '/v1/meetings', { key: reader, json: { title: 'x', starts_at: created.json.starts_at } });
    assert.equal(denied.status, 403);
    assert.equal(denied.json.code, 'insufficient_scope');
    const notOrg = await srv.req('PATCH', `/v1/meetings/${id}`, { key: u2write, json: { title: 'Mine' } });
    assert.equal(notOrg.status, 403);
    assert.equal(notOrg.json.code, 'not_organizer');
    assert.equal((await srv.req('DELETE', `/v1/meetings/${id}`, { key: u2write })).json.code, 'not_organizer');
    assert.equal((await srv.req('GET', `/v1/meetings/${id}`, { key: stranger })).status, 404);
    assert.equal((await srv.req('PATCH', `/v1/meetings/${id}`, { key: stranger, json: { title: 'x' } })).status, 404);
    const list = await srv.req('GET', '/v1/meetings', { key: stranger });
    assert.deepEqual(list.json.items, []);
    const stale = await srv.req('PATCH', `/v1/meetings/${id}`, { key: writer, json: { title: 'Late' }, headers: { 'If-Match': '"stale"' } });
    assert.equal(stale.status, 412);
    const fresh = await srv.req('PATCH', `/v1/meetings/${id}`, { key: writer, json: { title: 'Now' }, headers: { 'If-Match': created.header('etag') } });
    assert.equal(fresh.status, 200, fresh.text);
    assert.equal(fresh.json.title, 'Now');
});

test('the inbox and the stream: hello, a reminder with the inbox ids, resume, reset, the limits', async () => {
    const tok = await mint({ sub: 'p1', scope: 'notifications', ttl_s: 900 });
    const empty = await srv.req('GET', '/v1/me/notifications', { key: tok });
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(empty.json.items, []);
    assert.equal((await srv.req('GET', '/v1/me/notifications?limit=0', { key: tok })).json.code, 'bad_query');
    assert.equal((await srv.req('GET', '/v1/stream?x=1', { key: tok })).json.code, 'bad_query');

    const s = await openStream('/v1/stream', { Authorization: `Bearer ${tok}`, Origin: ORIGIN });
    assert.equal(s.status, 200);
    assert.equal(s.headers['access-control-allow-origin'], ORIGIN);
    await s.until((t) => /event: hello/.test(t));
    // The participant's only stream: a second one is refused until it closes.
    const second = await srv.req('GET', '/v1/stream', { key: tok });
    assert.equal(second.status, 429);
    assert.equal(second.json.code, 'too_many_streams');
    // The replica's two streams: p2's is the last one that fits.
    const tok2 = await mint({ sub: 'p2', scope: 'notifications' });
    const s2 = await openStream('/v1/stream', { Authorization: `Bearer ${tok2}` });
    await s2.until((t) => /event: hello/.test(t));
    const full = await srv.req('GET', '/v1/stream', { key: await mint({ sub: 'p3', scope: 'notifications' }) });
    assert.equal(full.status, 503);
    assert.equal(full.json.code, 'streams_unavailable');
    s2.close();

    // A reminder due already fires at once.
    const m = await srv.req('POST', '/v1/meetings', {
        key,
        json: { title: 'Stand-up', starts_at: new Date(Date.now() + 2 * MIN).toISOString(), participants: [{ id: 'p1' }],
            reminders: [{ minutes_before: 5 }] },
    });
    assert.equal(m.status, 201, m.text);
    await s.until((t) => /event: reminder/.test(t));
    await s.until((t) => /\n\n: hb\n\n/.test(t.slice(t.indexOf('event: reminder')))); // a heartbeat after it
    s.close();
    const frames = checkEventStream('GET /v1/stream', s.text());
    checkResponse('GET', '/v1/stream', asResponse(s));
    assert.equal(frames[0].event, 'hello');
    assert.equal(frames[0].data.resumed, false);
    const reminder = frames.find((f) => f.event === 'reminder');
    assert.equal(reminder.data.data.meeting.id, m.json.id);
    assert.equal(reminder.data.id, `rem_${m.json.reminders[0].id}_${Date.parse(m.json.reminders[0].fire_at)}`);

    const inbox = await srv.req('GET', '/v1/me/notifications', { key: tok });
    assert.equal(inbox.json.items.length, 1);
    assert.equal(String(inbox.json.items[0].seq), reminder.id);
    assert.equal(inbox.json.items[0].id, reminder.data.id);
    assert.equal(inbox.json.head, Number(reminder.id));

    // Resume from before the reminder: hello (resumed), the reminder again, the cursor frame.
    const before = Number(reminder.id) - 1;
    const r = await openFreeStream(`/v1/stream?last_event_id=${before}`, { Authorization: `Bearer ${tok}` });
    await r.until((t) => frameCount(t) >= 4);
    r.close();
    const rf = checkEventStream('GET /v1/stream (resumed)', r.text());
    assert.deepEqual(rf.slice(0, 3).map((f) => f.event), ['hello', 'reminder', undefined]);
    assert.deepEqual(rf[0].data, { seq: inbox.json.head, resumed: true, replayed: 1 });
    assert.equal(rf[0].id, undefined);
    assert.equal(rf[2].id, String(inbox.json.head));

    // A cursor that is not a number: reset to the head.
    const g = await openFreeStream('/v1/stream', { Authorization: `Bearer ${tok}`, 'Last-Event-ID': 'garbage' });
    await g.until((t) => /event: reset/.test(t));
    g.close();
    const reset = checkEventStream('GET /v1/stream (reset)', g.text())[0];
    assert.deepEqual(reset, { id: String(inbox.json.head), event: 'reset', data: { reason: 'cursor_invalid', head: inbox.json.head } });
});

test('the stream by URL token (EventSource): at most 15 minutes; reauth before exp', async () => {
    const long = await mint({ sub: 'q1', scope: 'notifications', ttl_s: 901 });
    const refused = await srv.req('GET', `/v1/stream?access_token=${long}`);
    assert.equal(refused.status, 401);
    assert.equal(refused.json.code, 'invalid_token');
    // A token with 32 s left: reauth arrives about 2 s after the stream opens.
    const short = await mint({ sub: 'q1', scope: 'notifications', ttl_s: 32 });
    const s = await openFreeStream(`/v1/stream?access_token=${short}`);
    assert.equal(s.status, 200);
    await s.until((t) => /event: reauth/.test(t), 8000);
    s.close();
    const frames = checkEventStream('GET /v1/stream (reauth)', s.text());
    const reauth = frames.find((f) => f.event === 'reauth');
    const exp = JSON.parse(Buffer.from(short.split('.')[1], 'base64url')).exp;
    assert.equal(reauth.data.expires_at, new Date(exp * 1000).toISOString());
});

test('CORS: preflight and responses for allowed origins only', async () => {
    const pre = await srv.req('OPTIONS', '/v1/meetings', {
        headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization, content-type' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.header('access-control-allow-origin'), ORIGIN);
    assert.equal(pre.header('access-control-max-age'), '7200');
    assert.match(pre.header('vary'), /Origin/);
    const other = await srv.req('OPTIONS', '/v1/stream', { headers: { Origin: 'http://evil.test' } });
    assert.equal(other.status, 204);
    assert.equal(other.header('access-control-allow-origin'), null);
    const get = await srv.req('GET', '/v1/meetings', { key, headers: { Origin: 'http://other.test' } });
    assert.equal(get.header('access-control-allow-origin'), 'http://other.test');
    assert.equal(get.header('access-control-expose-headers'), 'ETag, Location, Retry-After, WWW-Authenticate');
    const none = await srv.req('GET', '/v1/meetings', { key, headers: { Origin: 'http://evil.test' } });
    assert.equal(none.header('access-control-allow-origin'), null);
});

test('CORS: refused preflights are logged once a minute, not once each', async () => {
    const logged = await h.startServer({ TOCSIN_CORS_ORIGINS: ORIGIN, TOCSIN_LOG_LEVEL: 'info' });
    const refused = 20;
    for (let i = 0; i < refused; i++) {
        const r = await logged.req('OPTIONS', '/v1/meetings', { headers: { Origin: 'http://evil.test' } });
        assert.equal(r.status, 204);
    }
    const allowed = await logged.req('OPTIONS', '/v1/meetings', { headers: { Origin: ORIGIN } });
    assert.equal(allowed.header('access-control-allow-origin'), ORIGIN);
    await logged.stop();
    const lines = logged.log.split('\n').filter((l) => / cors: preflight /.test(l));
    assert.equal(lines.length, 1, `one line for ${refused} refusals:\n${lines.join('\n')}`);
    assert.match(lines[0], /^\S+ INFO cors: preflight for \/v1\/meetings from origin http:\/\/evil\.test refused/);
    const access = logged.log.split('\n').filter((l) => / INFO http OPTIONS \/v1\/meetings 204 /.test(l));
    assert.equal(access.length, refused + 1, 'each preflight still has its access line');
});

test('the client module and the demo page are the files of web/, with ETag, no-cache and 304', async () => {
    for (const [path, file, type] of [['/v1/client.js', 'client.js', 'text/javascript'], ['/demo', 'demo.html', 'text/html']]) {
        const want = fs.readFileSync(fileURLToPath(new URL(`../../web/${file}`, import.meta.url)), 'utf8');
        const r = await srv.req('GET', path, { headers: { Origin: ORIGIN } });
        assert.equal(r.status, 200, path);
        assert.equal(r.contentType, `${type}; charset=utf-8`);
        assert.equal(r.text, want, `${path} serves web/${file} byte for byte`);
        // no-cache (revalidate): no-store would keep a browser from ever sending If-None-Match.
        assert.equal(r.header('cache-control'), 'no-cache', path);
        const again = await srv.req('GET', path, { headers: { 'If-None-Match': r.header('etag') } });
        assert.equal(again.status, 304);
        assert.equal(again.header('cache-control'), 'no-cache', path);
        assert.equal(again.header('etag'), r.header('etag'), path);
    }
    const off = await h.startServer({ TOCSIN_DEMO: '0' });
    const r = await off.req('GET', '/demo');
    assert.equal(r.status, 404);
    assert.equal((await off.req('GET', '/v1/client.js')).status, 200);
    await off.stop();
});
