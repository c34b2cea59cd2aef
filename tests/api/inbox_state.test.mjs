// inbox_state.test.mjs -- a participant's marks on their inbox (issue 41, item 1): read_at and
// archived_at on every item, the unread count, the unread and archived filters, PATCH of one
// item, every item up to a seq marked read, and each change told on the participant's streams as
// an `inbox` event: on this replica and on another one, and to a stream that resumes after it.
// Nobody else's marks move and nothing is told to anybody else; bad input changes nothing.
import { before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { test, harness, waitFor } from './harness.mjs';
import { openLive, mintToken, meetingFiringNow, dbHead, dbEvents, tenantIdOf, closeAll } from './sse.mjs';

const EVENT_BOUND_MS = 10000; // a fire or a change is on a stream within this
const T_TEST = { timeout: 120000 };

const h = await harness('inbox_state');
let redis;
let reps;
let key;
let tenantId;

before(async () => {
    redis = await h.startRedis();
    const common = { TOCSIN_REDIS_URL: redis.url, TOCSIN_REDIS_PREFIX: `inbst${process.pid}`, TOCSIN_STREAM_POLL_MS: '5000' };
    reps = [await h.startServer({ ...common, TOCSIN_INSTANCE_ID: 'r1' }), await h.startServer({ ...common, TOCSIN_INSTANCE_ID: 'r2' })];
    key = await reps[0].createKey('inboxst');
    tenantId = await tenantIdOf(h, 'inboxst');
});

afterEach(closeAll);

after(async () => {
    for (const r of reps) {
        await r.stop();
    }
});

const token = async (sub, mtg) => (await mintToken(reps[0], key, { sub, scope: 'notifications', mtg })).token;
const inbox = async (tok, q = '', srv = reps[0]) => {
    const r = await srv.req('GET', `/v1/me/notifications${q}`, { key: tok });
    assert.equal(r.status, 200, r.text);
    return r.json;
};
const patch = (tok, seq, json, srv = reps[0]) => srv.req('PATCH', `/v1/me/notifications/${seq}`, { key: tok, json });
const readUpTo = (tok, json, srv = reps[0]) => srv.req('POST', '/v1/me/notifications/read', { key: tok, json });
const marks = async (sub) => h.sql(`SELECT seq, read_at IS NOT NULL, archived_at IS NOT NULL FROM inbox_state
    WHERE tenant_id = ${tenantId} AND participant = '${sub}' ORDER BY seq`);

// n reminders fired for sub (and the others listed), in their inbox: their seqs, ascending.
async function fired(sub, n, others = []) {
    const cursor = await dbHead(h, tenantId);
    for (let i = 0; i < n; i++) {
        await meetingFiringNow(reps[0], key, { participants: [{ id: sub }, ...others.map((id) => ({ id }))], title: `m${i}` });
    }
    let evs = [];
    assert.ok(await waitFor(async () => (evs = await dbEvents(h, tenantId, sub, cursor)).length === n, EVENT_BOUND_MS), 'fired');
    return evs.map((e) => e.seq);
}

const inboxEvents = (s) => s.frames.filter((f) => f.event === 'inbox').map((f) => ({ id: f.id, ...JSON.parse(f.data) }));

test('marks: read, unread, archived, filters and the unread count', T_TEST, async () => {
    const sub = 'st-u1';
    const seqs = await fired(sub, 3, ['st-other']);
    const tok = await token(sub);
    let page = await inbox(tok);
    assert.equal(page.unread_count, 3);
    assert.deepEqual(page.items.map((i) => [i.seq, i.read_at, i.archived_at]), seqs.map((s) => [s, null, null]));

    const r = await patch(tok, seqs[0], { read: true });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.seq, seqs[0]);
    assert.equal(r.json.unread_count, 2);
    assert.ok(Date.parse(r.json.read_at) > Date.now() - 60000, r.text);
    assert.equal(r.json.archived_at, null);
    const readAt = r.json.read_at;
    // Read again: the mark keeps its time, nothing changes.
    const again = await patch(tok, seqs[0], { read: true });
    assert.equal(again.json.read_at, readAt);

    assert.equal((await patch(tok, seqs[1], { archived: true })).status, 200);
    page = await inbox(tok);
    assert.equal(page.unread_count, 1, 'an archived item is not counted as unread');
    assert.deepEqual(page.items.map((i) => i.read_at !== null), [true, false, false]);
    assert.deepEqual(page.items.map((i) => i.archived_at !== null), [false, true, false]);
    assert.deepEqual((await inbox(tok, '?unread=true')).items.map((i) => i.seq), [seqs[1], seqs[2]]);
    assert.deepEqual((await inbox(tok, '?unread=false')).items.map((i) => i.seq), [seqs[0]]);
    assert.deepEqual((await inbox(tok, '?archived=true')).items.map((i) => i.seq), [seqs[1]]);
    assert.deepEqual((await inbox(tok, '?archived=false&unread=true')).items.map((i) => i.seq), [seqs[2]]);
    assert.deepEqual((await inbox(tok, `?after=${seqs[0]}&unread=true`)).items.map((i) => i.seq), [seqs[1], seqs[2]]);

    // Unread again and unarchived: both marks clear.
    const back = await patch(tok, seqs[0], { read: false });
    assert.equal(back.json.read_at, null);
    assert.equal(back.json.unread_count, 2);
    assert.equal((await patch(tok, seqs[1], { archived: false })).json.unread_count, 3);

    // The other participant of the same meetings is untouched.
    const other = await inbox(await token('st-other'));
    assert.equal(other.unread_count, 3);
    assert.ok(other.items.every((i) => i.read_at === null && i.archived_at === null));
});

test('mark every item up to a seq as read', T_TEST, async () => {
    const sub = 'st-u2';
    const seqs = await fired(sub, 4);
    const tok = await token(sub);
    assert.equal((await patch(tok, seqs[0], { read: true })).status, 200);
    const r = await readUpTo(tok, { up_to: seqs[2] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { up_to: seqs[2], marked: 2, unread_count: 1 });
    const page = await inbox(tok);
    assert.deepEqual(page.items.map((i) => i.read_at !== null), [true, true, true, false]);
    assert.equal(page.unread_count, 1);
    // Nothing left to mark: 0, and no event.
    const head = await dbHead(h, tenantId);
    assert.deepEqual((await readUpTo(tok, { up_to: seqs[2] })).json, { up_to: seqs[2], marked: 0, unread_count: 1 });
    assert.equal(await dbHead(h, tenantId), head, 'no change, no event');
});

test('a change reaches the participant\'s streams on every replica, and a resume', T_TEST, async () => {
    const sub = 'st-u3';
    const seqs = await fired(sub, 2, ['st-watcher']);
    const tok = await token(sub);
    const here = await openLive(reps[0].base, { token: tok });
    const there = await openLive(reps[1].base, { token: tok });
    const watcher = await openLive(reps[1].base, { token: await token('st-watcher') });
    const start = Date.now();
    const r = await patch(tok, seqs[1], { read: true });
    assert.equal(r.status, 200, r.text);
    for (const [s, where] of [[here, 'same replica'], [there, 'other replica']]) {
        await s.until((x) => inboxEvents(x).length === 1, EVENT_BOUND_MS, `inbox event, ${where}`);
        const [ev] = inboxEvents(s);
        assert.deepEqual({ seq: ev.seq, read_at: ev.read_at, archived_at: ev.archived_at, unread_count: ev.unread_count },
            { seq: seqs[1], read_at: r.json.read_at, archived_at: null, unread_count: 1 }, where);
    }
    // The other replica heard of it through the wake-up channel, not its 5 s poll.
    assert.ok(Date.now() - start < 3000, `told within ${Date.now() - start} ms`);
    const all = await readUpTo(tok, { up_to: seqs[1] });
    assert.equal(all.json.marked, 1);
    await there.until((x) => inboxEvents(x).length === 2, EVENT_BOUND_MS, 'the up_to event');
    const upTo = inboxEvents(there)[1];
    assert.equal(upTo.up_to, seqs[1]);
    assert.equal(upTo.unread_count, 0);
    // A stream that resumes from before both changes gets them, in order, as inbox events.
    const cursor = String(seqs[1]);
    const resumed = await openLive(reps[1].base, { token: tok, lastEventId: cursor });
    await resumed.until((x) => inboxEvents(x).length === 2, EVENT_BOUND_MS, 'resumed inbox events');
    assert.deepEqual(inboxEvents(resumed).map((e) => e.id), inboxEvents(there).map((e) => e.id));
    // The watcher, in the same meetings, heard nothing of it; no change is an inbox item.
    await new Promise((res) => setTimeout(res, 500));
    assert.deepEqual(inboxEvents(watcher), []);
    assert.deepEqual((await inbox(tok)).items.map((i) => i.seq), seqs);
});

test('another participant\'s item, a token\'s other meetings, bad input: 4xx, nothing changed', T_TEST, async () => {
    const sub = 'st-u4';
    const [mine] = await fired(sub, 1);
    const [theirs] = await fired('st-u5', 1);
    const tok = await token(sub);
    const before = await marks(sub);
    for (const seq of [theirs, 999999999, 0, 'abc', '1e3', '99999999999999999999']) {
        const r = await patch(tok, seq, { read: true });
        assert.equal(r.status, 404, `${seq}: ${r.text}`);
        assert.equal(r.json.code, 'notification_not_found');
    }
    const limited = await token(sub, ['00000000-0000-4000-8000-000000000000']);
    assert.equal((await patch(limited, mine, { read: true })).status, 404, 'outside the token\'s meetings');
    for (const body of [{}, { read: 'yes' }, { read: true, pinned: true }, [], { archived: null }]) {
        const r = await patch(tok, mine, body);
        assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
        assert.equal(r.json.code, 'validation');
    }
    for (const body of [{}, { up_to: 0 }, { up_to: -1 }, { up_to: 1.5 }, { up_to: '5' }, { up_to: 5, x: 1 }]) {
        const r = await readUpTo(tok, body);
        assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    }
    const wrongType = await reps[0].req('PATCH', `/v1/me/notifications/${mine}`, {
        key: tok, body: '{"read":true}', headers: { 'Content-Type': 'text/plain' },
    });
    assert.equal(wrongType.status, 415);
    // An API key is not a participant; a token without the notifications scope may not.
    assert.equal((await patch(key, mine, { read: true })).status, 403);
    const pushOnly = (await mintToken(reps[0], key, { sub, scope: 'push' })).token;
    assert.equal((await patch(pushOnly, mine, { read: true })).status, 403);
    assert.equal((await reps[0].req('GET', '/v1/me/notifications?unread=maybe', { key: tok })).status, 400);
    assert.equal((await reps[0].req('GET', '/v1/me/notifications?archived=true&archived=false', { key: tok })).status, 400);
    assert.equal(await marks(sub), before, 'nothing changed');
    assert.equal(await marks('st-u5'), '', 'nothing changed');
});
