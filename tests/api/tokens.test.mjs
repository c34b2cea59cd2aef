// tokens.test.mjs -- browser tokens over HTTP against a real tocsin: every refusal the contract
// names is 401 invalid_token with WWW-Authenticate (on the meeting routes, the inbox and the
// stream, header or URL), a revoked signing key stops its tokens, tokens `jose` signs are accepted
// and tokens tocsin mints verify in `jose`, two live signing keys at most also under concurrent
// creates, scopes (403 insufficient_scope), and what a participant may see and change: u2 never
// sees u1's meetings or reminders, another tenant sees nothing, `mtg` narrows, only the organizer
// writes.
import { before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { jwtVerify, decodeProtectedHeader } from 'jose';
import { test, harness, sleep, waitFor } from './harness.mjs';
import {
    AUD, openLive, refused, mintToken, signToken, createSigningKey, meetingFiringNow, dbEvents, tenantIdOf,
    assertInvalidToken, documented, closeAll,
} from './sse.mjs';

const AUTH_CACHE_MS = 500;   // how long a replica may go on trusting a revoked key
const EVENT_BOUND_MS = 10000; // generous: a fired reminder is on the stream within this
const DAY_S = 86400;
const URL_LIFETIME_S = 900;
const ALL_SCOPES = 'meetings:read meetings:write notifications push';

const h = await harness('tokens');
let srv;
let keyA;
let keyB;
let tenantA;

before(async () => {
    srv = await h.startServer({ TOCSIN_AUTH_CACHE_MS: String(AUTH_CACHE_MS), TOCSIN_STREAM_HEARTBEAT_MS: '500' });
    keyA = await srv.createKey('tok-a');
    keyB = await srv.createKey('tok-b');
    tenantA = await tenantIdOf(h, 'tok-a');
});

afterEach(closeAll);

after(async () => {
    await srv.stop();
});

const nowS = () => Math.floor(Date.now() / 1000);
const b64 = (s) => Buffer.from(s).toString('base64url');

// A JWT from literal header and payload JSON texts (for what no JWT library writes).
function rawJwt(headerText, payloadText, secret, sigAlg = 'sha256') {
    const input = `${b64(headerText)}.${b64(payloadText)}`;
    const sig = secret === null ? '' : crypto.createHmac(sigAlg, secret).update(input).digest('base64url');
    return `${input}.${sig}`;
}

// A refused request with a browser token (refusals are checked here, not by the contract).
function call(method, path, tok, json) {
    return srv.req(method, path, { key: tok, json, validate: false });
}

function assertScope(r, what) {
    assert.equal(r.status, 403, `${what}: ${r.text}`);
    assert.equal(r.json.code, 'insufficient_scope', what);
    assert.equal(r.header('www-authenticate'), 'Bearer error="insufficient_scope"', what);
    assert.equal(r.contentType, 'application/problem+json', what);
}

test('bad tokens are 401 invalid_token with WWW-Authenticate, on meetings, the inbox and the stream', async () => {
    const sk = await createSigningKey(srv, keyA);
    const iat = nowS();
    const claims = { sub: 'u1', aud: AUD, iat, exp: iat + 600, scope: ALL_SCOPES };
    const header = { alg: 'HS256', typ: 'JWT', kid: sk.id };
    const J = JSON.stringify;
    const good = await signToken(sk, claims);
    const cases = [
        ['alg none', rawJwt(J({ ...header, alg: 'none' }), J(claims), null)],
        ['alg none with a signature', rawJwt(J({ ...header, alg: 'none' }), J(claims), sk.secret)],
        ['HS512 under the right key', await signToken(sk, claims, { alg: 'HS512' })],
        ['HS384 under the right key', await signToken(sk, claims, { alg: 'HS384' })],
        ['another audience', await signToken(sk, { ...claims, aud: 'tocsin-staging' })],
        ['no exp', rawJwt(J(header), J({ sub: 'u1', aud: AUD, iat, scope: ALL_SCOPES }), sk.secret)],
        ['exp 24 h + 1 s after iat', await signToken(sk, { ...claims, exp: iat + DAY_S + 1 })],
        ['expired past the leeway', await signToken(sk, { ...claims, iat: iat - 300, exp: iat - 60 })],
        ['unknown kid', await signToken(sk, claims, { kid: 'sk_unknown0000000' })],
        ['no kid', rawJwt(J({ alg: 'HS256', typ: 'JWT' }), J(claims), sk.secret)],
        ['another secret', await signToken({ id: sk.id, secret: `${sk.secret}x` }, claims)],
        ['duplicate sub', rawJwt(J(header), `{"sub":"u1","sub":"u2",${J(claims).slice(1).replace('"sub":"u1",', '')}`, sk.secret)],
        ['duplicate exp', rawJwt(J(header), `${J(claims).slice(0, -1)},"exp":${iat + 60}}`, sk.secret)],
        ['duplicate kid', rawJwt(`{"alg":"HS256","typ":"JWT","kid":"${sk.id}","kid":"${sk.id}"}`, J(claims), sk.secret)],
        ['duplicate alg', rawJwt(`{"alg":"HS256","alg":"HS256","typ":"JWT","kid":"${sk.id}"}`, J(claims), sk.secret)],
        ['not a JWT', 'a.b.c'],
        ['two parts', good.split('.').slice(0, 2).join('.')],
        ['a signature bit flipped', good.slice(0, -2) + (good.at(-2) === 'A' ? 'B' : 'A') + good.at(-1)],
    ];
    // The control: the same claims under the right key pass everywhere.
    assert.equal((await srv.req('GET', '/v1/meetings', { key: good })).status, 200);
    assert.equal((await srv.req('GET', '/v1/me/notifications', { key: good, validate: false })).status, 200);
    const ok = await openLive(srv.base, { token: good });
    ok.close();
    for (const [what, tok] of cases) {
        assertInvalidToken(await srv.req('GET', '/v1/meetings', { key: tok, validate: false }), `${what}: GET /v1/meetings`);
        assertInvalidToken(await srv.req('POST', '/v1/meetings', {
            key: tok, json: { title: 'x', starts_at: new Date(Date.now() + 3600e3).toISOString() }, validate: false,
        }), `${what}: POST /v1/meetings`);
        assertInvalidToken(await srv.req('GET', '/v1/me/notifications', { key: tok, validate: false }), `${what}: inbox`);
        assertInvalidToken(await refused(srv.base, { token: tok }), `${what}: stream, header`);
        assertInvalidToken(await refused(srv.base, { urlToken: tok }), `${what}: stream, URL`);
    }
    // Nothing was created by the refused POSTs.
    assert.equal(await h.sql(`SELECT count(*) FROM meetings WHERE tenant_id = ${tenantA}`), '0');
});

test('a token in the URL lives at most 15 minutes; in the header up to 24 h', async () => {
    const sk = await createSigningKey(srv, keyA);
    const iat = nowS();
    const long = await signToken(sk, { sub: 'u1', iat, exp: iat + URL_LIFETIME_S + 1 });
    const exact = await signToken(sk, { sub: 'u1', iat, exp: iat + URL_LIFETIME_S });
    const day = await signToken(sk, { sub: 'u1', iat, exp: iat + DAY_S });
    assertInvalidToken(await refused(srv.base, { urlToken: long }), 'URL token of 15 min + 1 s');
    (await openLive(srv.base, { urlToken: exact })).close();
    (await openLive(srv.base, { token: long })).close();
    (await openLive(srv.base, { token: day })).close();
    assertInvalidToken(await refused(srv.base, { urlToken: day }), 'URL token of 24 h');
    // Only the stream takes a token from the URL.
    const r = await srv.req('GET', `/v1/me/notifications?access_token=${exact}`, { validate: false });
    assert.ok(r.status === 400 || r.status === 401, `inbox with ?access_token=: ${r.status}`);
    await revokeAll(keyA);
});

// DELETE every live signing key of the tenant behind apiKey.
async function revokeAll(apiKey) {
    const list = await srv.req('GET', '/v1/signing-keys', { key: apiKey, validate: documented('GET', '/v1/signing-keys') });
    for (const k of list.json.items) {
        const d = await srv.req('DELETE', `/v1/signing-keys/${k.id}`, { key: apiKey, validate: documented('DELETE', '/v1/signing-keys/x') });
        assert.equal(d.status, 204, d.text);
    }
}

test('a revoked signing key stops its tokens within the auth cache time; the other live key goes on', async () => {
    await revokeAll(keyA);
    const k1 = await createSigningKey(srv, keyA);
    const k2 = await createSigningKey(srv, keyA);
    const t1 = await signToken(k1, { sub: 'u1', scope: ALL_SCOPES });
    const t2 = await signToken(k2, { sub: 'u1', scope: ALL_SCOPES });
    assert.equal((await srv.req('GET', '/v1/meetings', { key: t1 })).status, 200);
    const d = await srv.req('DELETE', `/v1/signing-keys/${k1.id}`, { key: keyA, validate: false });
    assert.equal(d.status, 204, d.text);
    const gone = Date.now();
    // Every HTTP thread may hold the key for the cache time; after it, all refuse.
    const refusedAll = await waitFor(async () => {
        const rs = await Promise.all(Array.from({ length: 8 }, () => srv.req('GET', '/v1/meetings', { key: t1, validate: false })));
        return rs.every((r) => r.status === 401);
    }, AUTH_CACHE_MS + 5000, 50);
    assert.ok(refusedAll, `tokens of a revoked key still accepted ${Date.now() - gone} ms after DELETE`);
    await sleep(AUTH_CACHE_MS + 100);
    for (let i = 0; i < 8; i++) {
        assertInvalidToken(await srv.req('GET', '/v1/meetings', { key: t1, validate: false }), 'revoked');
        assert.equal((await srv.req('GET', '/v1/meetings', { key: t2 })).status, 200, 'the other key');
    }
    assertInvalidToken(await refused(srv.base, { token: t1 }), 'revoked, stream');
    const again = await srv.req('DELETE', `/v1/signing-keys/${k1.id}`, { key: keyA, validate: false });
    assert.equal(again.status, 404);
    assert.equal(again.json.code, 'signing_key_not_found');
    // Another tenant cannot see or revoke it.
    const other = await srv.req('DELETE', `/v1/signing-keys/${k2.id}`, { key: keyB, validate: false });
    assert.equal(other.status, 404);
    assert.equal((await srv.req('GET', '/v1/meetings', { key: t2 })).status, 200);
    await revokeAll(keyA);
});

test('tokens jose signs are accepted; tokens POST /v1/browser-tokens mints verify in jose', async () => {
    await revokeAll(keyA);
    const sk = await createSigningKey(srv, keyA);
    assert.match(sk.secret, /^tsk_/);
    assert.match(sk.id, /^[A-Za-z0-9_-]{1,64}$/);
    // jose -> tocsin: the token's sub becomes the organizer.
    const josed = await signToken(sk, { sub: 'jose-user', scope: 'meetings:write meetings:read' });
    const c = await srv.req('POST', '/v1/meetings', {
        key: josed, json: { title: 'from jose', starts_at: new Date(Date.now() + 3600e3).toISOString() },
    });
    assert.equal(c.status, 201, c.text);
    assert.equal(c.json.organizer_id, 'jose-user');
    // tocsin -> jose: signed with the newest live key, claims as asked.
    const mid = crypto.randomUUID();
    const ask = { sub: 'mint-user', scope: 'notifications meetings:read', ttl_s: 120, mtg: [mid] };
    const m = await mintToken(srv, keyA, ask);
    assert.equal(m.kid, sk.id);
    assert.equal(decodeProtectedHeader(m.token).kid, sk.id);
    const { payload, protectedHeader } = await jwtVerify(m.token, new TextEncoder().encode(sk.secret), {
        algorithms: ['HS256'], audience: AUD, requiredClaims: ['sub', 'iat', 'exp'],
    });
    assert.equal(protectedHeader.alg, 'HS256');
    assert.equal(payload.sub, 'mint-user');
    assert.deepEqual(payload.scope.split(' ').sort(), ['meetings:read', 'notifications']);
    assert.deepEqual(payload.mtg, [mid]);
    assert.equal(payload.exp - payload.iat, 120);
    assert.ok(Math.abs(payload.iat - nowS()) <= 5);
    assert.equal(m.expires_at, new Date(payload.exp * 1000).toISOString());
    const dflt = await mintToken(srv, keyA, { sub: 'u1' });
    const p2 = (await jwtVerify(dflt.token, new TextEncoder().encode(sk.secret), { audience: AUD })).payload;
    assert.equal(p2.exp - p2.iat, 900, 'ttl_s defaults to 900');
    // What the endpoint refuses.
    for (const [what, json] of [
        ['ttl_s 0', { sub: 'u1', scope: 'notifications', ttl_s: 0 }],
        ['ttl_s over a day', { sub: 'u1', scope: 'notifications', ttl_s: DAY_S + 1 }],
        ['unknown scope', { sub: 'u1', scope: 'notifications admin' }],
        ['empty sub', { sub: '', scope: 'notifications' }],
        ['no scope', { sub: 'u1' }],
        ['101 meetings', { sub: 'u1', scope: 'notifications', mtg: Array.from({ length: 101 }, () => crypto.randomUUID()) }],
    ]) {
        const r = await srv.req('POST', '/v1/browser-tokens', { key: keyA, json, validate: false });
        assert.equal(r.status, 400, `${what}: ${r.text}`);
        assert.equal(r.json.code, 'validation', what);
    }
    await revokeAll(keyA);
});

test('two live signing keys at most; concurrent creates never pass it', async () => {
    const fresh = await srv.createKey('tok-keys');
    const tid = await tenantIdOf(h, 'tok-keys');
    const live = async () => Number(await h.sql(`SELECT count(*) FROM signing_keys WHERE tenant_id = ${tid} AND revoked_at IS NULL`));
    const a = await createSigningKey(srv, fresh);
    const b = await createSigningKey(srv, fresh);
    const third = await srv.req('POST', '/v1/signing-keys', { key: fresh, validate: false });
    assert.equal(third.status, 409, third.text);
    assert.equal(third.json.code, 'signing_key_limit');
    const list = await srv.req('GET', '/v1/signing-keys', { key: fresh, validate: documented('GET', '/v1/signing-keys') });
    assert.deepEqual(list.json.items.map((k) => k.id).sort(), [a.id, b.id].sort());
    assert.ok(list.json.items.every((k) => !('secret' in k)), 'no secret in the list');
    for (let round = 0; round < 4; round++) {
        await revokeAll(fresh);
        assert.equal(await live(), 0);
        const rs = await Promise.all(Array.from({ length: 8 }, () => srv.req('POST', '/v1/signing-keys', { key: fresh, validate: false })));
        const codes = rs.map((r) => r.status).sort();
        assert.deepEqual(codes, [201, 201, 409, 409, 409, 409, 409, 409], `round ${round}`);
        assert.equal(await live(), 2, `round ${round}: live keys`);
    }
    // A tenant's first browser tokens, asked for at once, make at most two keys, and all verify.
    await revokeAll(fresh);
    const minted = await Promise.all(Array.from({ length: 8 }, (_, i) => mintToken(srv, fresh, { sub: `c${i}`, scope: 'meetings:read' })));
    assert.ok((await live()) >= 1 && (await live()) <= 2, `live keys after concurrent first mints: ${await live()}`);
    for (const m of minted) {
        assert.equal((await srv.req('GET', '/v1/meetings', { key: m.token })).status, 200);
    }
});

test('scopes: a token never reaches the API-key routes, and each route needs its scope', async () => {
    const full = (await mintToken(srv, keyA, { sub: 'u1', scope: ALL_SCOPES })).token;
    const m = await meetingFiringNow(srv, keyA, { participants: [{ id: 'u1' }], title: 'scoped' });
    const keyRoutes = [
        ['GET', '/v1/webhooks'], ['POST', '/v1/webhooks', { url: 'https://example.com/h' }],
        ['DELETE', `/v1/webhooks/${crypto.randomUUID()}`],
        ['GET', '/v1/signing-keys'], ['POST', '/v1/signing-keys'], ['DELETE', '/v1/signing-keys/sk_x'],
        ['POST', '/v1/browser-tokens', { sub: 'u1', scope: 'notifications' }],
        ['GET', `/v1/meetings/${m.id}/deliveries`],
    ];
    for (const [method, path, json] of keyRoutes) {
        assertScope(await call(method, path, full, json), `${method} ${path} with every scope`);
    }
    const starts = new Date(Date.now() + 3600e3).toISOString();
    const tokenOf = async (scope) => (await mintToken(srv, keyA, { sub: 'u1', scope })).token;
    const cases = [
        ['notifications', 'GET', '/v1/meetings'], ['notifications', 'GET', `/v1/meetings/${m.id}`],
        ['notifications', 'POST', '/v1/meetings', { title: 'x', starts_at: starts }],
        ['meetings:read', 'POST', '/v1/meetings', { title: 'x', starts_at: starts }],
        ['meetings:read', 'PATCH', `/v1/meetings/${m.id}`, { title: 'y' }],
        ['meetings:read', 'DELETE', `/v1/meetings/${m.id}`],
        ['meetings:read', 'GET', '/v1/me/notifications'],
        ['meetings:write', 'GET', '/v1/meetings'], ['meetings:write', 'GET', `/v1/meetings/${m.id}`],
        ['push', 'GET', '/v1/meetings'], ['push', 'GET', '/v1/me/notifications'],
    ];
    for (const [scope, method, path, json] of cases) {
        assertScope(await call(method, path, await tokenOf(scope), json), `${method} ${path} with ${scope}`);
    }
    for (const scope of ['meetings:read', 'meetings:write push']) {
        const r = await refused(srv.base, { token: await tokenOf(scope) });
        assert.equal(r.status, 403, `stream with ${scope}`);
        assert.equal(r.json.code, 'insufficient_scope');
    }
    // Nothing the refused calls asked for happened.
    const g = await srv.req('GET', `/v1/meetings/${m.id}`, { key: keyA });
    assert.equal(g.json.title, 'scoped');
    assert.equal(await h.sql(`SELECT count(*) FROM meetings WHERE tenant_id = ${tenantA} AND title = 'x'`), '0');
});

test('u2 never sees u1\'s meetings or reminders; another tenant sees nothing of them', async () => {
    const scope = 'meetings:read notifications';
    const u1 = (await mintToken(srv, keyA, { sub: 'iso-u1', scope })).token;
    const u2 = (await mintToken(srv, keyA, { sub: 'iso-u2', scope })).token;
    const b1 = (await mintToken(srv, keyB, { sub: 'iso-u1', scope })).token; // the same sub in tenant B
    const s1 = await openLive(srv.base, { token: u1 });
    const s2 = await openLive(srv.base, { token: u2 });
    const sb = await openLive(srv.base, { token: b1 });
    const mine = await meetingFiringNow(srv, keyA, { participants: [{ id: 'iso-u1' }], n: 3, title: 'u1 only' });
    const orgd = await meetingFiringNow(srv, keyA, { participants: [{ id: 'iso-x' }], organizer_id: 'iso-u1', title: 'u1 organizes' });
    await s1.remindersAtLeast(4, EVENT_BOUND_MS);
    // Markers fired after them: once these arrive, anything earlier would have too.
    await meetingFiringNow(srv, keyA, { participants: [{ id: 'iso-u2' }], title: 'u2 marker' });
    await meetingFiringNow(srv, keyB, { participants: [{ id: 'iso-u1' }], title: 'b marker' });
    await s2.remindersAtLeast(1, EVENT_BOUND_MS);
    await sb.remindersAtLeast(1, EVENT_BOUND_MS);
    await sleep(300);
    assert.deepEqual(s2.reminders.map((r) => r.body.data.meeting.title), ['u2 marker']);
    assert.deepEqual(sb.reminders.map((r) => r.body.data.meeting.title), ['b marker']);
    assert.deepEqual(s1.reminders.map((r) => r.body.data.meeting.title).sort(),
        ['u1 only', 'u1 only', 'u1 only', 'u1 organizes'].sort(), 'u1 gets what it takes part in or organizes');
    for (const [who, tok] of [['u2', u2], ['tenant B', b1]]) {
        for (const m of [mine, orgd]) {
            const g = await srv.req('GET', `/v1/meetings/${m.id}`, { key: tok, validate: false });
            assert.equal(g.status, 404, `${who} GET ${m.title}`);
            assert.equal(g.json.code, 'meeting_not_found');
        }
        const list = await srv.req('GET', '/v1/meetings?limit=200', { key: tok });
        assert.equal(list.status, 200);
        assert.ok(!list.json.items.some((x) => x.id === mine.id || x.id === orgd.id), `${who}'s list`);
        const inbox = await srv.req('GET', '/v1/me/notifications?limit=200', { key: tok, validate: false });
        assert.ok(!inbox.json.items.some((x) => [mine.id, orgd.id].includes(x.data.meeting.id)), `${who}'s inbox`);
        assert.equal(inbox.json.items.length, 1, `${who}'s inbox holds its marker only`);
        // A resume from 0 replays only their own.
        const r = await openLive(srv.base, { token: tok, lastEventId: 0 });
        await r.until((x) => x.frames.some((f) => f.event === null), EVENT_BOUND_MS, 'the end of the replay');
        assert.equal(r.reminders.length, 1, `${who}'s replay`);
        r.close();
    }
    const list1 = await srv.req('GET', '/v1/meetings?limit=200', { key: u1 });
    assert.deepEqual(list1.json.items.map((x) => x.id).sort(), [mine.id, orgd.id].sort(), 'u1 lists exactly its two');
    assert.equal((await srv.req('GET', `/v1/meetings/${orgd.id}`, { key: u1 })).status, 200);
    const inbox1 = await srv.req('GET', '/v1/me/notifications', { key: u1, validate: false });
    assert.deepEqual(inbox1.json.items.map((x) => x.seq), (await dbEvents(h, tenantA, 'iso-u1')).map((e) => e.seq));
});

test('mtg narrows a token to the meetings it names', async () => {
    const m1 = await meetingFiringNow(srv, keyA, { participants: [{ id: 'mtg-u' }], title: 'm1' });
    const s = await openLive(srv.base, { token: (await mintToken(srv, keyA, { sub: 'mtg-u', scope: 'notifications' })).token, lastEventId: 0 });
    await s.remindersAtLeast(1, EVENT_BOUND_MS);
    const m2 = await meetingFiringNow(srv, keyA, { participants: [{ id: 'mtg-u' }], title: 'm2', n: 2 });
    const narrow = (await mintToken(srv, keyA, { sub: 'mtg-u', scope: 'meetings:read notifications', mtg: [m2.id] })).token;
    const sn = await openLive(srv.base, { token: narrow, lastEventId: 0 });
    await s.remindersAtLeast(3, EVENT_BOUND_MS);
    await sn.remindersAtLeast(2, EVENT_BOUND_MS);
    const m3 = await meetingFiringNow(srv, keyA, { participants: [{ id: 'mtg-u' }], title: 'm3' });
    await s.remindersAtLeast(4, EVENT_BOUND_MS);
    await meetingFiringNow(srv, keyA, { participants: [{ id: 'mtg-u' }], title: 'm1 again' });
    await s.remindersAtLeast(5, EVENT_BOUND_MS);
    await sleep(300);
    assert.deepEqual(sn.reminders.map((r) => r.body.data.meeting.id), [m2.id, m2.id], 'only m2, replayed and live');
    assert.equal((await srv.req('GET', `/v1/meetings/${m1.id}`, { key: narrow, validate: false })).status, 404);
    assert.equal((await srv.req('GET', `/v1/meetings/${m3.id}`, { key: narrow, validate: false })).status, 404);
    assert.equal((await srv.req('GET', `/v1/meetings/${m2.id}`, { key: narrow })).status, 200);
    const list = await srv.req('GET', '/v1/meetings?limit=200', { key: narrow });
    assert.deepEqual(list.json.items.map((x) => x.id), [m2.id]);
});

test('only the organizer changes or deletes a meeting; participants get 403, others 404', async () => {
    const rw = 'meetings:read meetings:write';
    const org = (await mintToken(srv, keyA, { sub: 'org-1', scope: rw })).token;
    const part = (await mintToken(srv, keyA, { sub: 'org-2', scope: rw })).token;
    const stranger = (await mintToken(srv, keyA, { sub: 'org-3', scope: rw })).token;
    const starts = new Date(Date.now() + 3600e3).toISOString();
    const c = await srv.req('POST', '/v1/meetings', {
        key: org, json: { title: 'planning', starts_at: starts, participants: [{ id: 'org-2' }], reminders: [{ minutes_before: 10 }] },
    });
    assert.equal(c.status, 201, c.text);
    assert.equal(c.json.organizer_id, 'org-1');
    assert.equal(c.header('location'), `/v1/meetings/${c.json.id}`);
    const path = `/v1/meetings/${c.json.id}`;
    // Naming someone else as organizer is refused.
    const other = await srv.req('POST', '/v1/meetings', { key: org, json: { title: 'x', starts_at: starts, organizer_id: 'org-9' }, validate: false });
    assert.equal(other.status, 400, other.text);
    const full = { title: 'renamed', starts_at: starts, participants: [{ id: 'org-2' }] };
    for (const [who, tok, status, code] of [['participant', part, 403, 'not_organizer'], ['stranger', stranger, 404, 'meeting_not_found']]) {
        const p = await srv.req('PATCH', path, { key: tok, json: { title: 'hijacked' }, validate: false });
        assert.equal(p.status, status, `${who} PATCH: ${p.text}`);
        assert.equal(p.json.code, code);
        const u = await srv.req('PUT', path, { key: tok, json: full, validate: false });
        assert.equal(u.status, status, `${who} PUT: ${u.text}`);
        const d = await srv.req('DELETE', path, { key: tok, validate: false });
        assert.equal(d.status, status, `${who} DELETE: ${d.text}`);
        assert.equal(d.json.code, code);
    }
    assert.equal((await srv.req('GET', path, { key: part })).status, 200, 'a participant reads it');
    assert.equal((await srv.req('GET', path, { key: stranger, validate: false })).status, 404);
    assert.equal((await srv.req('GET', path, { key: keyA })).json.title, 'planning', 'unchanged');
    const p = await srv.req('PATCH', path, { key: org, json: { title: 'renamed' }, headers: { 'If-Match': c.header('etag') } });
    assert.equal(p.status, 200, p.text);
    assert.equal(p.json.organizer_id, 'org-1');
    assert.equal((await srv.req('DELETE', path, { key: org })).status, 204);
    assert.equal((await srv.req('GET', path, { key: keyA, validate: false })).status, 404);
});

test('a browser token writes at most TOCSIN_BROWSER_PARTICIPANTS_MAX (50) participants; API keys 500', async () => {
    const MAX = 50;
    const tok = (await mintToken(srv, keyA, { sub: 'host-1', scope: 'meetings:read meetings:write' })).token;
    const people = (n, from = 0) => Array.from({ length: n }, (_, i) => ({ id: `p${from + i}` }));
    const starts = new Date(Date.now() + 3600e3).toISOString();
    const ok = await srv.req('POST', '/v1/meetings', { key: tok, json: { title: 'at the cap', starts_at: starts, participants: people(MAX) } });
    assert.equal(ok.status, 201, ok.text);
    const over = await srv.req('POST', '/v1/meetings', { key: tok, json: { title: 'past it', starts_at: starts, participants: people(MAX + 1) } });
    assert.equal(over.status, 400, over.text);
    assert.equal(over.json.code, 'validation');
    assert.equal(over.json.errors[0].field, 'participants');
    assert.match(over.json.errors[0].message, /50/);
    const grow = await srv.req('PATCH', `/v1/meetings/${ok.json.id}`, { key: tok, json: { participants: people(MAX + 1) } });
    assert.equal(grow.status, 400, grow.text);
    assert.equal(grow.json.errors[0].field, 'participants');
    // A meeting the tenant's server made larger: its organizer may change it, but not grow it.
    const big = await srv.req('POST', '/v1/meetings', { key: keyA, json: { title: 'all hands', starts_at: starts, organizer_id: 'host-1', participants: people(200) } });
    assert.equal(big.status, 201, big.text);
    const path = `/v1/meetings/${big.json.id}`;
    assert.equal((await srv.req('PATCH', path, { key: tok, json: { title: 'all hands, moved' } })).status, 200);
    assert.equal((await srv.req('PATCH', path, { key: tok, json: { participants: people(199) } })).status, 200, 'smaller');
    const more = await srv.req('PATCH', path, { key: tok, json: { participants: people(200) } });
    assert.equal(more.status, 400, `not larger again: ${more.text}`);
    assert.equal((await srv.req('GET', path, { key: keyA })).json.participants.length, 199);
});
