// idempotency.test.mjs -- Idempotency-Key on POST /v1/meetings: replays, mismatches, races,
// malformed keys, and keys per participant for browser tokens. Each test uses its own tenant so
// "exactly one meeting exists" is checkable by list.
import { before } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { harness, test, isoIn, DAY } from './harness.mjs';
import { checkResponse } from './contract.mjs';
import { createSigningKey, mintToken } from './sse.mjs';

const h = await harness('idempotency');
let srv;

before(async () => {
    srv = await h.startServer();
});

const ikey = () => `it-${crypto.randomUUID()}`;

async function listAll(key) {
    const r = await srv.req('GET', '/v1/meetings?limit=200', { key });
    assert.equal(r.status, 200, r.text);
    return r.json.items;
}

test('same key + same body replays the first response; one meeting exists', async () => {
    const key = await srv.createKey('idem-replay');
    const k = ikey();
    const body = { title: 'Once', starts_at: isoIn(2 * DAY), reminders: [{ minutes_before: 10 }] };
    const first = await srv.req('POST', '/v1/meetings', { key, json: body, headers: { 'Idempotency-Key': k } });
    assert.equal(first.status, 201, first.text);
    for (let i = 0; i < 3; i++) {
        const again = await srv.req('POST', '/v1/meetings', { key, json: body, headers: { 'Idempotency-Key': k } });
        assert.equal(again.status, 201, again.text);
        assert.equal(again.text, first.text, 'identical body');
        assert.equal(again.header('location'), first.header('location'));
        assert.equal(again.header('etag'), first.header('etag'));
    }
    const items = await listAll(key);
    assert.equal(items.length, 1);
    assert.equal(items[0].id, first.json.id);

    // Without the key, the same body creates a second meeting.
    const plain = await srv.req('POST', '/v1/meetings', { key, json: body });
    assert.equal(plain.status, 201);
    assert.notEqual(plain.json.id, first.json.id);
    assert.equal((await listAll(key)).length, 2);
});

test('same key + different body -> 422 idempotency_mismatch, nothing created', async () => {
    const key = await srv.createKey('idem-mismatch');
    const k = ikey();
    const body = { title: 'First', starts_at: isoIn(2 * DAY) };
    const first = await srv.req('POST', '/v1/meetings', { key, json: body, headers: { 'Idempotency-Key': k } });
    assert.equal(first.status, 201, first.text);
    for (const other of [{ ...body, title: 'Second' }, { ...body, reminders: [] }]) {
        const r = await srv.req('POST', '/v1/meetings', { key, json: other, headers: { 'Idempotency-Key': k } });
        assert.equal(r.status, 422, r.text);
        assert.equal(r.json.code, 'idempotency_mismatch');
    }
    assert.equal((await listAll(key)).length, 1);
});

test('idempotency keys are per tenant', async () => {
    const key1 = await srv.createKey('idem-t1');
    const key2 = await srv.createKey('idem-t2');
    const k = ikey();
    const body = { title: 'Mine', starts_at: isoIn(2 * DAY) };
    const a = await srv.req('POST', '/v1/meetings', { key: key1, json: body, headers: { 'Idempotency-Key': k } });
    const b = await srv.req('POST', '/v1/meetings', { key: key2, json: body, headers: { 'Idempotency-Key': k } });
    assert.equal(a.status, 201, a.text);
    assert.equal(b.status, 201, b.text);
    assert.notEqual(a.json.id, b.json.id, 'another tenant never gets a replay of my meeting');
    assert.equal((await listAll(key2)).length, 1);
});

test('idempotency keys are per participant for browser tokens: one natural key, a meeting each', async () => {
    const key = await srv.createKey('idem-people');
    await createSigningKey(srv, key);
    const as = async (sub) => (await mintToken(srv, key, { sub, scope: 'meetings:read meetings:write' })).token;
    const [alice, bob] = [await as('alice'), await as('bob')];
    const k = 'standup-2030-02-01';
    const body = { title: 'Standup', starts_at: isoIn(2 * DAY) };
    const post = (tok) => srv.req('POST', '/v1/meetings', { key: tok, json: body, headers: { 'Idempotency-Key': k } });
    const a = await post(alice);
    const b = await post(bob);
    assert.equal(a.status, 201, a.text);
    assert.equal(b.status, 201, b.text);
    assert.notEqual(a.json.id, b.json.id, 'bob got a replay of alice\'s meeting');
    assert.equal(b.json.organizer_id, 'bob');
    const again = await post(alice);
    assert.equal(again.status, 201, again.text);
    assert.equal(again.json.id, a.json.id, 'alice\'s retry is a replay');
    assert.equal((await listAll(key)).length, 2);
    // The key is the participant's own: the tenant's servers using it create another meeting.
    const server = await srv.req('POST', '/v1/meetings', { key, json: body, headers: { 'Idempotency-Key': k } });
    assert.equal(server.status, 201, server.text);
    assert.ok(![a.json.id, b.json.id].includes(server.json.id));
});

test('concurrent requests with one key: one creation, others replay it or get 409', async () => {
    const key = await srv.createKey('idem-race');
    for (let round = 0; round < 3; round++) {
        const k = ikey();
        const body = { title: `Race ${round}`, starts_at: isoIn(2 * DAY) };
        const rs = await Promise.all(Array.from({ length: 10 }, () => srv.req('POST', '/v1/meetings', {
            key, json: body, headers: { 'Idempotency-Key': k },
        })));
        const created = rs.filter((r) => r.status === 201);
        const inFlight = rs.filter((r) => r.status === 409);
        assert.equal(created.length + inFlight.length, 10,
            `only 201 and 409: ${rs.map((r) => r.status).join(',')}`);
        assert.ok(created.length >= 1, 'at least the first one succeeds');
        assert.equal(new Set(created.map((r) => r.json.id)).size, 1, 'every 201 names the same meeting');
        assert.equal(new Set(created.map((r) => r.text)).size, 1, 'every 201 is the same response');
        for (const r of inFlight) {
            assert.equal(r.json.code, 'idempotency_in_flight');
        }
        const items = (await listAll(key)).filter((m) => m.title === body.title);
        assert.equal(items.length, 1, 'exactly one meeting exists');
        assert.equal(items[0].id, created[0].json.id);
    }
});

test('malformed Idempotency-Key -> 400 bad_header, nothing created', async () => {
    const key = await srv.createKey('idem-bad');
    const body = { title: 'Bad key', starts_at: isoIn(2 * DAY) };
    for (const [what, k] of [['256 chars', 'k'.repeat(256)], ['empty', ''], ['non-ASCII', 'caf\u00e9'], ['a space inside', 'weekly sync']]) {
        const headers = { 'Idempotency-Key': k };
        let r;
        if (what === 'non-ASCII') {
            // fetch refuses non-latin1 header values; send the UTF-8 bytes raw.
            const json = JSON.stringify(body);
            const req = Buffer.concat([
                Buffer.from('POST /v1/meetings HTTP/1.1\r\nHost: t\r\nConnection: close\r\n'),
                Buffer.from(`Authorization: Bearer ${key}\r\nContent-Type: application/json\r\n`),
                Buffer.from('Idempotency-Key: '), Buffer.from(k, 'utf8'), Buffer.from('\r\n'),
                Buffer.from(`Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`),
            ]);
            r = await srv.raw(req);
            checkResponse('POST', '/v1/meetings', r);
        } else {
            r = await srv.req('POST', '/v1/meetings', { key, json: body, headers });
        }
        assert.equal(r.status, 400, `${what}: ${r.text}`);
        assert.equal(r.json.code, 'bad_header', what);
    }
    const ok255 = await srv.req('POST', '/v1/meetings', { key, json: body, headers: { 'Idempotency-Key': 'k'.repeat(255) } });
    assert.equal(ok255.status, 201, `255 chars is allowed: ${ok255.text}`);
    assert.equal((await listAll(key)).length, 1);
});

// A finished request's replay is read before the in-flight lock is tried, so it never gets 409:
// made deterministic by holding that very lock (pg_try_advisory_xact_lock on tenant:key, see
// src/db/db_idem.c) from a second connection, as a parallel replay would.
test('replays of a finished key are answered while another request holds its lock', async () => {
    const key = await srv.createKey('idem-finished');
    const k = ikey();
    const body = { title: 'Finished', starts_at: isoIn(2 * DAY) };
    const first = await srv.req('POST', '/v1/meetings', { key, json: body, headers: { 'Idempotency-Key': k } });
    assert.equal(first.status, 201, first.text);
    const tenant = await h.sql(`SELECT tenant_id FROM idempotency_keys WHERE key = '${k}'`);
    const s = h.session();
    try {
        await s.query(`SELECT pg_advisory_lock(hashtextextended(${tenant}::bigint || ':' || '${k}', 0))`);
        const replay = await srv.req('POST', '/v1/meetings', { key, json: body, headers: { 'Idempotency-Key': k } });
        assert.equal(replay.status, 201, `replay while the lock is held: ${replay.text}`);
        assert.equal(replay.text, first.text, 'byte for byte');
        const other = await srv.req('POST', '/v1/meetings', { key, json: { ...body, title: 'Other' }, headers: { 'Idempotency-Key': k } });
        assert.equal(other.status, 422, `another body with the key: ${other.text}`);
        // A key that never finished is still in flight while its lock is held.
        const k2 = ikey();
        await s.query(`SELECT pg_advisory_lock(hashtextextended(${tenant}::bigint || ':' || '${k2}', 0))`);
        const busy = await srv.req('POST', '/v1/meetings', { key, json: body, headers: { 'Idempotency-Key': k2 } });
        assert.equal(busy.status, 409, busy.text);
        assert.equal(busy.json.code, 'idempotency_in_flight');
    } finally {
        await s.close();
    }
    // 20 parallel replays: all the stored answer.
    const rs = await Promise.all(Array.from({ length: 20 }, () => srv.req('POST', '/v1/meetings', {
        key, json: body, headers: { 'Idempotency-Key': k },
    })));
    assert.deepEqual(rs.map((r) => r.status), Array(20).fill(201));
    assert.ok(rs.every((r) => r.text === first.text));
    assert.equal((await listAll(key)).length, 1, 'one meeting');
});
