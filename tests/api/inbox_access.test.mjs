// inbox_access.test.mjs -- who reads a stream event, and at what cost (issue 35, N1-N3): the
// inbox keeps to a token's meetings (mtg) as the stream does; a participant removed from a
// meeting after its reminder fired reads nothing of the meeting as it is since, in the inbox, in
// a resume the hub serves from PostgreSQL (a ring refilled after a restart, or a cursor older than
// the ring) or from its ring; and a reader's events are found by the audience index, not by
// testing every event of the tenant. Reminders fire at once; filler events are written in SQL.
import { before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { test, harness, waitFor } from './harness.mjs';
import { openLive, mintToken, meetingFiringNow, dbHead, dbEvents, tenantIdOf, closeAll } from './sse.mjs';

const EVENT_BOUND_MS = 10000;
const STATS_BOUND_MS = 20000; // a backend reports its index use within a second or so of idling
const RING_MAX = 1024;        // HUB_RING_MAX: a cursor further back is resumed from PostgreSQL
const FILLER_INDEX = 20000;   // events for the index check: a scan of the tenant reads them all
const T_TEST = { timeout: 180000 };

const h = await harness('inbox_access');
let srv;
let key;
let tenantId;

before(async () => {
    srv = await h.startServer({ TOCSIN_STREAM_RETRY_MS: '250' });
    key = await srv.createKey('inbox');
    tenantId = await tenantIdOf(h, 'inbox');
});

afterEach(closeAll);

after(async () => {
    await srv.stop();
});

const token = async (sub, mtg) =>
    (await mintToken(srv, key, { sub, scope: 'notifications meetings:read', mtg })).token;
const inbox = async (tok, q = '') => {
    const r = await srv.req('GET', `/v1/me/notifications${q}`, { key: tok });
    assert.equal(r.status, 200, r.text);
    return r;
};
const meetingsOf = (items) => items.map((i) => i.data.meeting.id);

// n events of nobody's meeting (random ids, so no body) for one filler participant each, written
// as the fire statement writes them: the head moves by n and they take the seqs below it.
async function filler(n, audience = "ARRAY['filler']") {
    await h.sql(`WITH hd AS (UPDATE stream_heads SET seq = seq + ${n} WHERE tenant_id = ${tenantId} RETURNING seq)
        INSERT INTO stream_events (tenant_id, seq, reminder_id, fire_at, fired_at, meeting_id, audience)
        SELECT ${tenantId}, hd.seq - ${n} + g, g, now(), now(), gen_random_uuid(), ${audience}
        FROM hd, generate_series(1, ${n}) g`);
}

// The frames of a resume from cursor until its hello (and, when it replays, the id-only block
// that moves the cursor to the head), as one text for leak checks, with its reminders.
async function resume(tok, cursor) {
    const s = await openLive(srv.base, { token: tok, lastEventId: cursor });
    const hello = s.frames.find((f) => f.event === 'hello');
    if (hello && JSON.parse(hello.data).resumed) {
        const seq = String(JSON.parse(hello.data).seq);
        await s.until((x) => x.frames.some((f) => f.event === null && f.id === seq), EVENT_BOUND_MS, 'the head');
    }
    s.close();
    return { text: s.frames.map((f) => f.data ?? '').join('\n'), reminders: s.reminders, frames: s.frames };
}

test('N1: the inbox shows only the meetings the token is limited to, like the stream', T_TEST, async () => {
    const sub = 'n1-u1';
    const cursor = await dbHead(h, tenantId);
    const ms = [];
    for (const title of ['M1', 'M3', 'M4']) {
        ms.push(await meetingFiringNow(srv, key, { participants: [{ id: sub, email: `${sub}@example.com` }], title }));
    }
    assert.ok(await waitFor(async () => (await dbEvents(h, tenantId, sub, cursor)).length === 3, EVENT_BOUND_MS));
    const limited = await token(sub, [ms[0].id]);
    assert.deepEqual(meetingsOf((await inbox(limited)).json.items), [ms[0].id], 'newest page');
    assert.deepEqual(meetingsOf((await inbox(limited, `?after=${cursor}`)).json.items), [ms[0].id], 'after a cursor');
    const s = await resume(limited, cursor);
    assert.deepEqual(s.reminders.map((r) => r.body.data.meeting.id), [ms[0].id], 'the stream agrees');
    // Unlimited, the same participant reads all three.
    assert.equal((await inbox(await token(sub))).json.items.length, 3);
});

test('N2: a participant removed after the fire reads nothing written since, on every path', T_TEST, async () => {
    const [stay, gone, org] = ['n2-u1', 'n2-u3', 'n2-org'];
    const cursor = await dbHead(h, tenantId);
    const witness = await openLive(srv.base, { token: await token(stay) });
    const m = await meetingFiringNow(srv, key, {
        participants: [{ id: stay, email: 'n2-u1@example.com' }, { id: gone }], organizer_id: org, title: 'weekly',
    });
    await witness.remindersAtLeast(1, EVENT_BOUND_MS); // in the ring, with its frame as of then
    witness.close();
    const patch = await srv.req('PATCH', `/v1/meetings/${m.id}`, {
        key,
        json: {
            participants: [{ id: stay, email: 'ceo@example.com' }],
            title: 'SECRET new title', description: 'confidential: layoffs list attached', location: 'room 42',
        },
    });
    assert.equal(patch.status, 200, patch.text);
    const secret = /SECRET|confidential|room 42|ceo@example\.com/;
    const goneTok = await token(gone);
    const stayTok = await token(stay);
    assert.equal((await srv.req('GET', `/v1/meetings/${m.id}`, { key: goneTok })).status, 404);

    // The inbox: nothing for the removed participant; the others read the meeting as it is now.
    for (const q of ['', `?after=${cursor}`]) {
        const r = await inbox(goneTok, q);
        assert.deepEqual(r.json.items, [], `removed, inbox${q}`);
        assert.doesNotMatch(r.text, secret);
        const kept = await inbox(stayTok, q);
        assert.deepEqual(meetingsOf(kept.json.items), [m.id], `still listed, inbox${q}`);
        assert.equal(kept.json.items[0].data.meeting.title, 'SECRET new title');
        assert.deepEqual(meetingsOf((await inbox(await token(org), q)).json.items), [m.id], `organizer, inbox${q}`);
    }

    // From the ring: its frame was built before the change, so it can hold nothing of it.
    assert.doesNotMatch((await resume(goneTok, cursor)).text, secret, 'resume from the ring');

    // After a restart the ring is empty: refilled from PostgreSQL, as the meeting is now.
    await srv.restart();
    const refilled = await resume(goneTok, cursor);
    assert.doesNotMatch(refilled.text, secret, 'resume from a refilled ring');
    assert.deepEqual(refilled.reminders, [], 'removed: no event of the meeting');
    const stayRefilled = await resume(stayTok, cursor);
    assert.deepEqual(stayRefilled.reminders.map((r) => r.body.data.meeting.title), ['SECRET new title']);

    // A cursor older than the ring: the participant's events read from PostgreSQL.
    await filler(RING_MAX + 100);
    await srv.restart();
    const far = await resume(goneTok, cursor);
    assert.doesNotMatch(far.text, secret, 'resume from PostgreSQL');
    assert.deepEqual(far.reminders, [], 'removed: no event of the meeting');
    assert.deepEqual((await resume(stayTok, cursor)).reminders.map((r) => r.body.data.meeting.id), [m.id]);
});

// idx_scan of the audience index and idx_tup_read of the primary key, as the statistics say.
async function indexStats() {
    const out = await h.sql(`SELECT coalesce(sum(idx_scan) FILTER (WHERE indexrelname = 'stream_events_audience'), -1),
        sum(idx_tup_read) FILTER (WHERE indexrelname = 'stream_events_pkey')
        FROM pg_stat_user_indexes WHERE relname = 'stream_events'`);
    const [scans, pkeyRead] = out.split('|').map(Number);
    return { scans, pkeyRead };
}

test('N3: a reader in no event is found by the audience index: inbox and resume read no tenant range', T_TEST, async () => {
    await filler(FILLER_INDEX, "ARRAY(SELECT 'p' || ((g * 7 + k) % 500) FROM generate_series(1, 30) k)");
    await h.sql('ANALYZE stream_events');
    const before = await indexStats();
    assert.ok(before.scans >= 0, 'stream_events has an index on its audience');
    const ghost = await token('ghost');
    assert.deepEqual((await inbox(ghost)).json.items, []);
    assert.deepEqual((await inbox(ghost, '?after=1')).json.items, []);
    const r = await resume(ghost, 1); // far older than the ring: read from PostgreSQL
    assert.equal(JSON.parse(r.frames.find((f) => f.event === 'hello').data).replayed, 0);
    let now = before;
    const used = await waitFor(async () => {
        now = await indexStats();
        return now.scans >= before.scans + 3;
    }, STATS_BOUND_MS, 200);
    assert.ok(used, `audience index scans ${before.scans} -> ${now.scans}, want 3 more`);
    assert.ok(now.pkeyRead - before.pkeyRead < FILLER_INDEX / 4,
        `the primary key read ${now.pkeyRead - before.pkeyRead} entries for three reads of a reader in no event`);
});
