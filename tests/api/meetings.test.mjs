// meetings.test.mjs -- CRUD, conditional requests, reminders and list pagination of /v1/meetings
// (docs/design.md section 5). Every response is checked against api/openapi.yaml by the harness.
import { before } from 'node:test';
import assert from 'node:assert/strict';
import { harness, test, isoIn, utc, waitFor, MIN, HOUR, DAY } from './harness.mjs';
import { schemaErrors } from './contract.mjs';

const h = await harness('meetings');
let srv;
let key;

before(async () => {
    srv = await h.startServer();
    key = await srv.createKey('meetings-a');
});

const post = (json, opts = {}) => srv.req('POST', '/v1/meetings', { key, json, ...opts });
const get = (id, opts = {}) => srv.req('GET', `/v1/meetings/${id}`, { key, ...opts });

function full(startsAt) {
    return {
        title: 'Weekly sync',
        description: 'Agenda: everything',
        starts_at: startsAt,
        ends_at: new Date(Date.parse(startsAt) + 30 * MIN).toISOString().replace('Z', '+00:00'),
        time_zone: 'Europe/Berlin',
        location: 'Room 4',
        participants: [{ id: 'u1', name: 'Ada', email: 'ada@example.com' }, { id: 'u2' }],
        reminders: [{ minutes_before: 5 }, { minutes_before: 60 }, { minutes_before: 0 }],
        metadata: { team: 'core', n: 3, nested: { ok: true } },
    };
}

// Expected reminders of a meeting: sorted by minutes_before descending, fire_at derived.
function expectReminders(m, minutes) {
    const sorted = [...minutes].sort((a, b) => b - a);
    assert.deepEqual(m.reminders.map((r) => r.minutes_before), sorted, 'reminders sorted descending');
    for (const r of m.reminders) {
        assert.equal(r.fire_at, utc(Date.parse(m.starts_at) - r.minutes_before * MIN), `fire_at of ${r.minutes_before}`);
        assert.equal(r.status, 'pending');
        assert.equal(r.fired_at, null);
    }
}

test('the test fixture itself is a valid MeetingInput', () => {
    assert.deepEqual(schemaErrors('MeetingInput', full(isoIn(2 * DAY))), []);
});

test('POST creates: 201, Location, ETag, every field echoed in output form', async () => {
    // A +01:00 input offset must come back as UTC with milliseconds.
    const startMs = Date.parse(isoIn(3 * DAY));
    const startsAt = new Date(startMs + HOUR).toISOString().replace(/\.000Z$/, '+01:00');
    const input = full(startsAt);
    const before = Date.now();
    const r = await post(input);
    assert.equal(r.status, 201, r.text);
    const m = r.json;
    assert.equal(r.header('location'), `/v1/meetings/${m.id}`);
    assert.match(r.header('etag'), /^"[^"]+"$/);
    assert.equal(m.title, input.title);
    assert.equal(m.description, input.description);
    assert.equal(m.starts_at, utc(startMs));
    assert.equal(m.ends_at, utc(startMs + 30 * MIN));
    assert.equal(m.time_zone, 'Europe/Berlin');
    assert.equal(m.location, 'Room 4');
    assert.deepEqual(m.participants, input.participants);
    assert.deepEqual(m.metadata, input.metadata);
    assert.equal(m.version, 1);
    expectReminders(m, [5, 60, 0]);
    assert.equal(new Set(m.reminders.map((x) => x.id)).size, 3, 'reminder ids distinct');
    for (const t of [m.created_at, m.updated_at]) {
        assert.ok(Math.abs(Date.parse(t) - before) < 60000, `timestamp ${t} near now`);
    }
});

test('POST minimal: optional fields null, default reminder [{5}], [] means none', async () => {
    const startsAt = isoIn(2 * DAY);
    const r = await post({ title: 'Minimal', starts_at: startsAt });
    assert.equal(r.status, 201, r.text);
    const m = r.json;
    for (const f of ['description', 'ends_at', 'time_zone', 'location', 'metadata']) {
        assert.equal(m[f], null, f);
    }
    assert.deepEqual(m.participants, []);
    expectReminders(m, [5]);

    const none = await post({ title: 'No reminders', starts_at: startsAt, reminders: [] });
    assert.equal(none.status, 201, none.text);
    assert.deepEqual(none.json.reminders, []);
});

test('GET returns the same representation and ETag; If-None-Match gives 304 without a body', async () => {
    const c = await post(full(isoIn(2 * DAY)));
    assert.equal(c.status, 201, c.text);
    const id = c.json.id;
    const etag = c.header('etag');

    const g = await get(id);
    assert.equal(g.status, 200, g.text);
    assert.equal(g.header('etag'), etag);
    assert.deepEqual(g.json, c.json);

    const nm = await get(id, { headers: { 'If-None-Match': etag } });
    assert.equal(nm.status, 304);
    assert.equal(nm.text, '');
    assert.equal(nm.header('etag'), etag);
    assert.equal(nm.header('cache-control'), 'no-store', 'API data stays out of caches');
    assert.equal(g.header('cache-control'), 'no-store');

    const star = await get(id, { headers: { 'If-None-Match': '*' } });
    assert.equal(star.status, 304);

    const other = await get(id, { headers: { 'If-None-Match': '"not-the-etag"' } });
    assert.equal(other.status, 200);
    assert.deepEqual(other.json, c.json);
});

test('PUT replaces fully; If-Match mismatch 412, match 200 with version 2', async () => {
    const c = await post(full(isoIn(2 * DAY)));
    const id = c.json.id;
    const etag = c.header('etag');
    const newStart = isoIn(4 * DAY);
    const replacement = { title: 'Replaced', starts_at: newStart, reminders: [{ minutes_before: 15 }] };

    const bad = await srv.req('PUT', `/v1/meetings/${id}`, { key, json: replacement, headers: { 'If-Match': '"stale"' } });
    assert.equal(bad.status, 412, bad.text);
    assert.equal(bad.json.code, 'precondition_failed');
    const unchanged = await get(id);
    assert.deepEqual(unchanged.json, c.json, 'a failed precondition changes nothing');

    const ok = await srv.req('PUT', `/v1/meetings/${id}`, { key, json: replacement, headers: { 'If-Match': etag } });
    assert.equal(ok.status, 200, ok.text);
    const m = ok.json;
    assert.equal(m.id, id);
    assert.equal(m.version, 2);
    assert.equal(m.title, 'Replaced');
    assert.equal(m.starts_at, utc(newStart));
    for (const f of ['description', 'ends_at', 'time_zone', 'location', 'metadata']) {
        assert.equal(m[f], null, `${f} removed by full replacement`);
    }
    assert.deepEqual(m.participants, []);
    expectReminders(m, [15]);
    assert.equal(m.created_at, c.json.created_at);
    assert.ok(Date.parse(m.updated_at) >= Date.parse(c.json.updated_at));
    assert.notEqual(ok.header('etag'), etag, 'ETag changes with the body');

    const g = await get(id);
    assert.deepEqual(g.json, m);
    assert.equal(g.header('etag'), ok.header('etag'));

    // The old ETag no longer matches; an unconditional PUT is allowed; the default reminder returns.
    const stale = await srv.req('PUT', `/v1/meetings/${id}`, { key, json: replacement, headers: { 'If-Match': etag } });
    assert.equal(stale.status, 412);
    const uncond = await srv.req('PUT', `/v1/meetings/${id}`, { key, json: { title: 'Again', starts_at: newStart } });
    assert.equal(uncond.status, 200, uncond.text);
    assert.equal(uncond.json.version, 3);
    expectReminders(uncond.json, [5]);
});

test('PUT recomputes reminders; a kept offset with the same fire time keeps its id', async () => {
    const startsAt = isoIn(2 * DAY);
    const c = await post({ title: 'R', starts_at: startsAt, reminders: [{ minutes_before: 10 }, { minutes_before: 30 }] });
    const id30 = c.json.reminders.find((r) => r.minutes_before === 30).id;
    const p = await srv.req('PUT', `/v1/meetings/${c.json.id}`, {
        key, json: { title: 'R', starts_at: startsAt, reminders: [{ minutes_before: 30 }, { minutes_before: 120 }] },
    });
    assert.equal(p.status, 200, p.text);
    expectReminders(p.json, [30, 120]);
    assert.equal(p.json.reminders.find((r) => r.minutes_before === 30).id, id30);

    const moved = isoIn(5 * DAY);
    const q = await srv.req('PUT', `/v1/meetings/${c.json.id}`, {
        key, json: { title: 'R', starts_at: moved, reminders: [{ minutes_before: 30 }] },
    });
    assert.equal(q.status, 200, q.text);
    expectReminders(q.json, [30]);
});

test('PATCH merge-patch: starts_at moves reminders, null removes, other fields kept', async () => {
    const c = await post(full(isoIn(2 * DAY)));
    const id = c.json.id;

    const t = await srv.req('PATCH', `/v1/meetings/${id}`, { key, json: { title: 'Renamed' } });
    assert.equal(t.status, 200, t.text);
    assert.equal(t.json.title, 'Renamed');
    assert.equal(t.json.version, 2);
    assert.deepEqual(t.json.reminders, c.json.reminders, 'untouched reminders keep ids and fire times');
    assert.notEqual(t.header('etag'), c.header('etag'));

    const newStart = isoIn(6 * DAY);
    const newEnd = new Date(Date.parse(newStart) + HOUR).toISOString();
    const s = await srv.req('PATCH', `/v1/meetings/${id}`, {
        key, json: { starts_at: newStart, ends_at: newEnd, description: null },
    });
    assert.equal(s.status, 200, s.text);
    const m = s.json;
    assert.equal(m.starts_at, utc(newStart));
    assert.equal(m.ends_at, utc(newEnd));
    assert.equal(m.description, null);
    assert.equal(m.title, 'Renamed');
    assert.equal(m.location, 'Room 4');
    assert.deepEqual(m.participants, c.json.participants);
    assert.deepEqual(m.metadata, c.json.metadata);
    assert.equal(m.version, 3);
    expectReminders(m, [5, 60, 0]);

    const g = await get(id);
    assert.deepEqual(g.json, m);

    // RFC 7396: arrays are replaced, objects merged member by member, null members removed.
    const r = await srv.req('PATCH', `/v1/meetings/${id}`, {
        key, json: { reminders: [{ minutes_before: 45 }], metadata: { a: 1, team: null, nested: { ok: false } } },
    });
    assert.equal(r.status, 200, r.text);
    expectReminders(r.json, [45]);
    assert.deepEqual(r.json.metadata, { n: 3, nested: { ok: false }, a: 1 });
    const z = await srv.req('PATCH', `/v1/meetings/${id}`, { key, json: { metadata: null, participants: [] } });
    assert.equal(z.status, 200, z.text);
    assert.equal(z.json.metadata, null);
    assert.deepEqual(z.json.participants, []);
});

test('PATCH refuses application/json (415), read-only fields (400) and invalid results (400)', async () => {
    const c = await post(full(isoIn(2 * DAY)));
    const id = c.json.id;
    const wrong = await srv.req('PATCH', `/v1/meetings/${id}`, {
        key, json: { title: 'x' }, headers: { 'Content-Type': 'application/json' },
    });
    assert.equal(wrong.status, 415, wrong.text);
    assert.equal(wrong.json.code, 'unsupported_media_type');

    for (const patch of [{ version: 7 }, { id: c.json.id }, { created_at: c.json.created_at }]) {
        const r = await srv.req('PATCH', `/v1/meetings/${id}`, { key, json: patch });
        assert.equal(r.status, 400, `${JSON.stringify(patch)}: ${r.text}`);
        assert.equal(r.json.code, 'validation');
    }
    const noTitle = await srv.req('PATCH', `/v1/meetings/${id}`, { key, json: { title: null } });
    assert.equal(noTitle.status, 400, noTitle.text);
    assert.ok(noTitle.json.errors.some((e) => e.field === 'title'), noTitle.text);
    const endsBefore = await srv.req('PATCH', `/v1/meetings/${id}`, {
        key, json: { ends_at: new Date(Date.parse(c.json.starts_at) - MIN).toISOString() },
    });
    assert.equal(endsBefore.status, 400, endsBefore.text);
    const g = await get(id);
    assert.deepEqual(g.json, c.json, 'refused patches change nothing');
});

test('DELETE 204 without body; then GET/PUT/PATCH/DELETE 404', async () => {
    const c = await post(full(isoIn(2 * DAY)));
    const id = c.json.id;
    const d = await srv.req('DELETE', `/v1/meetings/${id}`, { key });
    assert.equal(d.status, 204);
    assert.equal(d.text, '');
    const g = await get(id);
    assert.equal(g.status, 404);
    assert.equal(g.json.code, 'meeting_not_found');
    const p = await srv.req('PUT', `/v1/meetings/${id}`, { key, json: { title: 'x', starts_at: isoIn(DAY) } });
    assert.equal(p.status, 404);
    const q = await srv.req('PATCH', `/v1/meetings/${id}`, { key, json: { title: 'x' } });
    assert.equal(q.status, 404);
    const d2 = await srv.req('DELETE', `/v1/meetings/${id}`, { key });
    assert.equal(d2.status, 404);
    assert.equal(d2.json.code, 'meeting_not_found');
});

test('unknown and malformed meeting ids are 404', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid',
        '0B4F3A3C-1111-4222-8333-444455556666', '0b4f3a3c111142228333444455556666']) {
        const r = await get(id);
        assert.equal(r.status, 404, `${id}: ${r.text}`);
    }
});

test('validation errors name the fields', async () => {
    const r = await post({ title: '', starts_at: 'soon', reminders: [{ minutes_before: -1 }] });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.code, 'validation');
    const fields = r.json.errors.map((e) => e.field);
    for (const f of ['title', 'starts_at', 'reminders[0].minutes_before']) {
        assert.ok(fields.includes(f), `errors name ${f}: ${JSON.stringify(fields)}`);
    }
});

test('list: pagination by starts_at then id, filters, bad parameters', async () => {
    const lkey = await srv.createKey('meetings-list');
    const base = Date.parse(isoIn(10 * DAY));
    // Seven meetings; two pairs share a start time so the id breaks the tie.
    const offsets = [5, 0, 3, 3, 1, 6, 1];
    const made = [];
    for (const [i, o] of offsets.entries()) {
        const r = await srv.req('POST', '/v1/meetings', {
            key: lkey, json: { title: `L${i}`, starts_at: new Date(base + o * HOUR).toISOString() },
        });
        assert.equal(r.status, 201, r.text);
        made.push(r.json);
    }
    const want = [...made].sort((a, b) => (a.starts_at === b.starts_at
        ? (a.id < b.id ? -1 : 1) : Date.parse(a.starts_at) - Date.parse(b.starts_at)));

    const pages = [];
    let cursor = null;
    do {
        const q = `/v1/meetings?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const r = await srv.req('GET', q, { key: lkey });
        assert.equal(r.status, 200, r.text);
        pages.push(r.json.items);
        cursor = r.json.next_cursor;
        assert.ok(pages.length <= 4, 'pagination terminates');
    } while (cursor !== null);
    assert.deepEqual(pages.map((p) => p.length), [3, 3, 1]);
    assert.deepEqual(pages.flat().map((m) => m.id), want.map((m) => m.id));
    assert.deepEqual(pages.flat(), want, 'list items are full meetings');

    const all = await srv.req('GET', '/v1/meetings', { key: lkey });
    assert.equal(all.status, 200);
    assert.equal(all.json.next_cursor, null, 'default limit 50 holds all seven');
    assert.deepEqual(all.json.items.map((m) => m.id), want.map((m) => m.id));

    // from inclusive, to exclusive.
    const from = new Date(base + 1 * HOUR).toISOString();
    const to = new Date(base + 5 * HOUR).toISOString().replace('Z', '+00:00');
    const f = await srv.req('GET', `/v1/meetings?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`, { key: lkey });
    assert.equal(f.status, 200, f.text);
    const inRange = want.filter((m) => Date.parse(m.starts_at) >= base + HOUR && Date.parse(m.starts_at) < base + 5 * HOUR);
    assert.equal(inRange.length, 4);
    assert.deepEqual(f.json.items.map((m) => m.id), inRange.map((m) => m.id));

    const empty = await srv.req('GET', `/v1/meetings?from=${encodeURIComponent(new Date(base + 7 * HOUR).toISOString())}`, { key: lkey });
    assert.deepEqual(empty.json, { items: [], next_cursor: null });

    const max = await srv.req('GET', '/v1/meetings?limit=200', { key: lkey });
    assert.equal(max.status, 200);

    for (const q of ['limit=0', 'limit=201', 'limit=abc', 'limit=-1', 'limit=3.5', 'limit=',
        'cursor=garbage', 'cursor=%01%02', `cursor=${'A'.repeat(600)}`,
        // well-formed but for a start time past int64, and a valid cursor's hex in upper case
        `cursor=${Buffer.from('v1:99999999999999999999:123e4567-e89b-42d3-a456-426614174000').toString('hex')}`,
        `cursor=${Buffer.from('v1:0:123e4567-e89b-42d3-a456-426614174000').toString('hex').toUpperCase()}`,
        'from=yesterday', 'from=2026-11-23T09:00:00', 'to=2026-13-01T00:00:00Z', 'unknown=1']) {
        const r = await srv.req('GET', `/v1/meetings?${q}`, { key: lkey });
        assert.equal(r.status, 400, `${q}: ${r.text}`);
        assert.equal(r.json.code, 'bad_query', q);
    }
    // A NUL in a query value would cut it short once decoded: refused before the query is read.
    const nul = await srv.req('GET', '/v1/meetings?cursor=%00%01', { key: lkey });
    assert.equal(nul.status, 400, nul.text);
    assert.equal(nul.json.code, 'bad_request');
});

test('list: q finds titles by a case-insensitive substring, % and _ only themselves, within the tenant, paged', async () => {
    const k = await srv.createKey('meetings-q');
    const other = await srv.createKey('meetings-q-other');
    const base = Date.parse(isoIn(20 * DAY));
    const titles = ['Quarterly Planning', 'planning poker', 'Daily 100%_standup', 'Daily 100% standup', 'Retro'];
    const made = [];
    for (const [i, title] of titles.entries()) {
        const r = await srv.req('POST', '/v1/meetings', { key: k, json: { title, starts_at: new Date(base + i * HOUR).toISOString() } });
        assert.equal(r.status, 201, r.text);
        made.push(r.json);
    }
    assert.equal((await srv.req('POST', '/v1/meetings', { key: other, json: { title: 'Planning', starts_at: new Date(base).toISOString() } })).status, 201);
    const found = async (q, extra = '', key = k) => {
        const r = await srv.req('GET', `/v1/meetings?q=${encodeURIComponent(q)}${extra}`, { key });
        assert.equal(r.status, 200, r.text);
        return r.json.items.map((m) => m.title);
    };
    assert.deepEqual(await found('PLANNING'), ['Quarterly Planning', 'planning poker']);
    assert.deepEqual(await found('nning po'), ['planning poker']);
    assert.deepEqual(await found('100%_'), ['Daily 100%_standup'], '% and _ match only themselves');
    assert.deepEqual(await found('100%'), ['Daily 100%_standup', 'Daily 100% standup']);
    assert.deepEqual(await found('Quarterly_Planning'), [], '_ is no wildcard');
    assert.deepEqual(await found('no such title'), []);
    assert.deepEqual(await found('planning', '', other), ['Planning'], 'only the tenant\'s own');
    assert.deepEqual(await found('daily', `&from=${encodeURIComponent(new Date(base + 3 * HOUR).toISOString())}`), ['Daily 100% standup'], 'with from');
    // Paged: the cursor carries on within the search.
    const first = await srv.req('GET', '/v1/meetings?q=a&limit=2', { key: k });
    assert.equal(first.status, 200);
    assert.deepEqual(first.json.items.map((m) => m.id), made.slice(0, 2).map((m) => m.id));
    const second = await srv.req('GET', `/v1/meetings?q=a&limit=2&cursor=${encodeURIComponent(first.json.next_cursor)}`, { key: k });
    assert.deepEqual(second.json.items.map((m) => m.title), ['Daily 100%_standup', 'Daily 100% standup']);
    assert.equal((await found('x'.repeat(200))).length, 0, 'q at its bound');
    for (const q of ['q=', `q=${'x'.repeat(201)}`, 'q=%FF', 'q=a&q=b', 'q=a&expand=true&from=2030-01-01T00:00:00Z&to=2030-01-02T00:00:00Z']) {
        const r = await srv.req('GET', `/v1/meetings?${q}`, { key: k });
        assert.equal(r.status, 400, `${q}: ${r.text}`);
        assert.equal(r.json.code, 'bad_query', q);
        assert.match(r.json.detail, /\bq\b/, q);
    }
});

test('decision: a PATCH or PUT that changes nothing writes nothing (version and ETag stay)', async () => {
    const c = await post(full(isoIn(2 * DAY)));
    const id = c.json.id;
    const empty = await srv.req('PATCH', `/v1/meetings/${id}`, { key, json: {} });
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(empty.json, c.json, 'PATCH {}: the same representation, version 1');
    assert.equal(empty.header('etag'), c.header('etag'));
    // The same values again, in another spelling of the same instant: still no change.
    const same = await srv.req('PATCH', `/v1/meetings/${id}`, {
        key, json: { title: c.json.title, starts_at: c.json.starts_at.replace('Z', '+00:00') },
    });
    assert.equal(same.json.version, 1, same.text);
    const { title, description, starts_at, ends_at, time_zone, location, participants, metadata } = c.json;
    const put = await srv.req('PUT', `/v1/meetings/${id}`, {
        key, json: { title, description, starts_at, ends_at, time_zone, location, participants, metadata, reminders: [{ minutes_before: 60 }, { minutes_before: 0 }, { minutes_before: 5 }] },
    });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.json.version, 1, 'a PUT of the same fields');
    assert.equal(put.json.updated_at, c.json.updated_at);
    const changed = await srv.req('PATCH', `/v1/meetings/${id}`, { key, json: { title: 'Changed' } });
    assert.equal(changed.json.version, 2, 'a real change bumps the version');
    assert.notEqual(changed.header('etag'), c.header('etag'));
});

test('decision: "reminders": null in a merge patch removes the member, which means the default', async () => {
    const c = await post({ ...full(isoIn(2 * DAY)), reminders: [{ minutes_before: 30 }] });
    const r = await srv.req('PATCH', `/v1/meetings/${c.json.id}`, { key, json: { reminders: null } });
    assert.equal(r.status, 200, r.text);
    expectReminders(r.json, [5]);
    const none = await srv.req('PATCH', `/v1/meetings/${c.json.id}`, { key, json: { reminders: [] } });
    assert.deepEqual(none.json.reminders, [], '[] is none');
    const back = await srv.req('PATCH', `/v1/meetings/${c.json.id}`, { key, json: { reminders: null } });
    expectReminders(back.json, [5]);
});

// One request on a connection of its own: a keep-alive connection that fetch would reuse may
// belong to the server thread that the blocked request holds, and would wait with it.
function fresh(method, path, json) {
    const body = json === undefined ? '' : JSON.stringify(json);
    const type = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
    const head = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: Bearer ${key}`,
        'Connection: close', ...(body ? [`Content-Type: ${type}`, `Content-Length: ${Buffer.byteLength(body)}`] : [])];
    return srv.raw(head.join('\r\n') + '\r\n\r\n' + body, { timeoutMs: 15000 });
}

// The DELETE race, made deterministic: a second connection holds the meeting's row lock while a
// PATCH (first in the lock queue) and then a DELETE wait for it. Released, the PATCH commits new
// reminders first; the DELETE must cancel them too.
test('DELETE waiting behind a PATCH cancels the reminders that PATCH added', async () => {
    for (const method of ['PATCH', 'PUT']) {
        const c = await post({ ...full(isoIn(3 * DAY)), reminders: [{ minutes_before: 5 }] });
        const id = c.json.id;
        const waiting = async () => Number(await h.sql(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"));
        const s = h.session();
        try {
            await s.query('BEGIN');
            await s.query(`SELECT 1 FROM meetings WHERE id = '${id}' FOR UPDATE`);
            const json = method === 'PATCH'
                ? { reminders: [{ minutes_before: 10 }, { minutes_before: 20 }] }
                : { ...full(c.json.starts_at), reminders: [{ minutes_before: 10 }, { minutes_before: 20 }] };
            const write = fresh(method, `/v1/meetings/${id}`, json);
            assert.ok(await waitFor(async () => (await waiting()) >= 1, 5000), `${method} waits for the lock`);
            const del = fresh('DELETE', `/v1/meetings/${id}`);
            assert.ok(await waitFor(async () => (await waiting()) >= 2, 5000), 'DELETE waits behind it');
            await s.query('COMMIT');
            const [w, d] = await Promise.all([write, del]);
            assert.equal(w.status, 200, `${method}: ${w.text}`);
            assert.equal(d.status, 204, d.text);
        } finally {
            await s.close();
        }
        const left = await h.sql(`SELECT minutes_before || ':' || status FROM reminders WHERE meeting_id = '${id}' ORDER BY 1`);
        assert.equal(left, '10:cancelled\n20:cancelled', `${method} then DELETE: no reminder left pending`);
        assert.equal((await get(id)).status, 404);
    }
});
