// batch.test.mjs -- POST /v1/meetings/batch (docs/api.md): per-item results in input order, a bad
// item failing alone, idempotent replays, the 413s and 400s of the whole request, the reminders
// mirrored into Redis before the answer, and tenant isolation. Responses are checked against
// api/openapi.yaml by the harness.
import { before } from 'node:test';
import assert from 'node:assert/strict';
import { harness, test, isoIn, HOUR } from './harness.mjs';
import { createSigningKey, mintToken } from './sse.mjs';
import { schemaErrors } from './contract.mjs';

const h = await harness('batch');
let srv;
let key;
let other;
let quota;
let limited;
const QUOTA = 3;

before(async () => {
    [srv, quota, limited] = await Promise.all([
        h.startServer(),
        h.startServer({ TOCSIN_TENANT_MEETINGS_MAX: String(QUOTA) }),
        h.startServer({ TOCSIN_TENANT_RATE: '1', TOCSIN_TENANT_BURST: '2' }),
    ]);
    key = await srv.createKey('batch-a');
    other = await srv.createKey('batch-b');
});

const batch = (items, opts = {}) =>
    srv.req('POST', '/v1/meetings/batch', { key: opts.key ?? key, json: { items }, ...opts });
const meeting = (title, extra = {}) => ({
    title, starts_at: isoIn(2 * HOUR), reminders: [{ minutes_before: 10 }], ...extra,
});

async function reminderKeys(id, k = key) {
    const m = await srv.req('GET', `/v1/meetings/${id}`, { key: k });
    assert.equal(m.status, 200);
    const out = [];
    for (const r of m.json.reminders) out.push(...(await h.redis.keys(`${srv.prefix}:rem:${r.id}:*`)));
    return { meeting: m.json, keys: out };
}

test('results come in input order, a bad item fails alone, reminders are mirrored', async () => {
    const r = await batch([meeting('one'), { title: '' }, meeting('three'), 7]);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.items.map((i) => i.status), [201, 400, 201, 400]);
    assert.equal(r.json.items[1].problem.code, 'validation');
    assert.ok(r.json.items[1].problem.errors.length > 0);
    for (const [i, title] of [[0, 'one'], [2, 'three']]) {
        const { meeting: m, keys } = await reminderKeys(r.json.items[i].id);
        assert.equal(m.title, title);
        assert.equal(keys.length, 1, `the reminder of ${title} is armed in Redis`);
    }
});

test('a replayed idempotency_key answers 200 with the first id; another item is 422', async () => {
    const item = { ...meeting('keyed'), idempotency_key: 'batch-k1' };
    const first = await batch([item]);
    assert.equal(first.json.items[0].status, 201);
    const again = await batch([meeting('fresh'), item, { ...meeting('changed'), idempotency_key: 'batch-k1' }]);
    assert.deepEqual(again.json.items.map((i) => i.status), [201, 200, 422]);
    assert.equal(again.json.items[1].id, first.json.items[0].id);
    assert.equal(again.json.items[2].problem.code, 'idempotency_mismatch');
    // The same key twice in one batch: one meeting.
    const dup = { ...meeting('twice'), idempotency_key: 'batch-k2' };
    const both = await batch([dup, dup]);
    assert.deepEqual(both.json.items.map((i) => i.status), [201, 200]);
    assert.equal(both.json.items[0].id, both.json.items[1].id);
});

test('the contract of an item is what the server takes: MeetingInput and idempotency_key', async () => {
    const keyed = { ...meeting('contract'), idempotency_key: 'batch-contract' };
    assert.deepEqual(schemaErrors('MeetingBatchInput', { items: [keyed, meeting('plain')] }), []);
    assert.ok(schemaErrors('MeetingBatchInput', { items: [{ ...keyed, colour: 'red' }] }).length > 0);
    assert.ok(schemaErrors('MeetingBatchInput', { items: [{ ...keyed, idempotency_key: 'a b' }] }).length > 0);
    assert.ok(schemaErrors('MeetingInput', keyed).length > 0, 'a single create takes no idempotency_key');
    const r = await batch([keyed, { ...keyed, colour: 'red' }, { ...meeting('spaced'), idempotency_key: 'a b' }]);
    assert.deepEqual(r.json.items.map((i) => i.status), [201, 400, 400]);
    assert.deepEqual(r.json.items[1].problem.errors.map((e) => e.field), ['colour']);
    assert.deepEqual(r.json.items[2].problem.errors.map((e) => e.field), ['idempotency_key']);
    assert.deepEqual(schemaErrors('MeetingBatchResult', r.json), []);
    const wrong = { items: [{ status: 201, id: r.json.items[0].id, problem: r.json.items[1].problem }] };
    assert.ok(schemaErrors('MeetingBatchResult', wrong).length > 0, 'a created item has no problem');
});

test('recurring meetings are created and their occurrences armed', async () => {
    const r = await batch([meeting('weekly', { time_zone: 'Europe/Berlin', recurrence: { rrule: 'FREQ=WEEKLY;COUNT=3' } })]);
    assert.equal(r.json.items[0].status, 201);
    const occ = await srv.req('GET', `/v1/meetings/${r.json.items[0].id}/occurrences`, { key });
    assert.equal(occ.status, 200);
    assert.ok(occ.json.items.length >= 1);
});

test('over 1000 items or over 8 MiB is 413; malformed JSON or not an array is 400', async () => {
    const many = Array.from({ length: 1001 }, (_, i) => meeting(`m${i}`));
    const r = await batch(many);
    assert.equal(r.status, 413);
    assert.equal(r.json.code, 'batch_too_large');
    // 8 MiB (8388608 bytes) is the route's bound, not the 64 KiB of single creates.
    const head = (extra) => ['POST /v1/meetings/batch HTTP/1.1', 'Host: 127.0.0.1', `Authorization: Bearer ${key}`,
        'Content-Type: application/json', 'Connection: close', ...extra].join('\r\n') + '\r\n\r\n';
    const announced = await srv.raw(head(['Content-Length: 8388609']));
    assert.equal(announced.status, 413);
    assert.equal(announced.json.code, 'body_too_large');
    assert.equal(announced.json.detail, 'request bodies are limited to 8388608 bytes');
    const chunk = 'x'.repeat(65536);
    let flood = head(['Transfer-Encoding: chunked']) + '1\r\n{\r\n';
    for (let i = 0; i < 129; i++) flood += `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
    const fl = await srv.raw(flood + '0\r\n\r\n', { timeoutMs: 30000 });
    assert.equal(fl.status, 413);
    assert.equal(fl.json.code, 'body_too_large');
    const roomy = await batch(Array.from({ length: 100 }, (_, i) => meeting(`roomy ${i}`, { description: 'd'.repeat(1000) })));
    assert.equal(roomy.status, 200, 'a body past 64 KiB is taken here');
    assert.ok(roomy.json.items.every((i) => i.status === 201));
    const bad = await srv.req('POST', '/v1/meetings/batch', {
        key, body: '{"items": [', headers: { 'Content-Type': 'application/json' },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.code, 'bad_json');
    for (const json of [{ items: {} }, [], { items: [] }, { items: [meeting('a')], extra: 1 }]) {
        const n = await srv.req('POST', '/v1/meetings/batch', { key, json });
        assert.equal(n.status, 400, JSON.stringify(json).slice(0, 60));
        assert.equal(n.json.code, 'validation');
    }
});

test('a full batch of 1000 is written, and another tenant sees none of it', async () => {
    const items = Array.from({ length: 1000 }, (_, i) => meeting(`bulk ${i}`));
    const r = await batch(items, { timeoutMs: 60000 });
    assert.equal(r.status, 200);
    assert.equal(r.json.items.length, 1000);
    assert.ok(r.json.items.every((i) => i.status === 201));
    const { keys } = await reminderKeys(r.json.items[999].id);
    assert.equal(keys.length, 1);
    const seen = await srv.req('GET', `/v1/meetings/${r.json.items[0].id}`, { key: other });
    assert.equal(seen.status, 404);
    // The other tenant's key space is its own: the same idempotency_key creates its own meeting.
    const mine = await batch([{ ...meeting('b'), idempotency_key: 'batch-k1' }], { key: other });
    assert.equal(mine.json.items[0].status, 201);
});

test('TOCSIN_TENANT_MEETINGS_MAX: the items past the quota fail alone, in input order', async () => {
    const k = await quota.createKey('batch-quota');
    const items = Array.from({ length: 5 }, (_, i) => meeting(`q${i}`));
    const r = await quota.req('POST', '/v1/meetings/batch', { key: k, json: { items } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.items.map((i) => i.status), [201, 201, 201, 403, 403]);
    assert.equal(r.json.items[3].problem.code, 'quota_exceeded');
});

test('a browser token may not batch: 403 insufficient_scope', async () => {
    await createSigningKey(srv, key);
    const { token } = await mintToken(srv, key, { sub: 'alice', scope: 'meetings:read meetings:write' });
    const r = await batch([meeting('from a page')], { key: token });
    assert.equal(r.status, 403);
    assert.equal(r.json.code, 'insufficient_scope');
});

test('TOCSIN_TENANT_RATE: a batch is one request, whatever it holds', async () => {
    const k = await limited.createKey('batch-rate');
    const items = Array.from({ length: 50 }, (_, i) => meeting(`r${i}`));
    const post = () => limited.req('POST', '/v1/meetings/batch', { key: k, json: { items } });
    const [a, b] = [await post(), await post()];
    assert.equal(a.status, 200);
    assert.equal(b.status, 200, 'the second batch is the burst\'s second request');
    assert.ok(a.json.items.every((i) => i.status === 201));
    // Three one-item batches at once: with 1 a second refilled since the first batch, at least
    // one is refused unless the two batches above took over 3 s (no timing closer than that).
    const one = () => limited.req('POST', '/v1/meetings/batch', { key: k, json: { items: [meeting('r')] } });
    const rest = await Promise.all([one(), one(), one()]);
    const refused = rest.filter((r) => r.status === 429);
    assert.ok(refused.length >= 1, `statuses ${rest.map((r) => r.status)}`);
    assert.ok(refused.every((r) => r.json.code === 'rate_limited'));
});

// The batch route takes bodies of up to 8 MiB: its credentials are read from the head, so a client
// without a valid key is answered before it sends a byte of the body (it used to be read whole,
// then refused). The head announces 5 MB and no body follows: the answer must come anyway.
test('a batch without a valid key is refused 401 before its body is read', async () => {
    for (const auth of ['', 'Authorization: Bearer tk_not_a_key\r\n']) {
        const res = await srv.raw(`POST /v1/meetings/batch HTTP/1.1\r\nHost: x\r\n${auth}` +
            'Content-Type: application/json\r\nContent-Length: 5000000\r\n\r\n', { timeoutMs: 5000 });
        assert.equal(res.status, 401, auth || 'no Authorization');
        assert.equal(res.json.code, 'unauthorized');
    }
});
