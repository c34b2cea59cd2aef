// recurrence.test.mjs -- recurring meetings (docs/design.md section 9) against real servers: strict
// validation with field errors, wall-clock time kept across DST (and the gap and overlap rules),
// the occurrences list and its pagination, overrides (move, retitle, cancel) kept or dropped by a
// series change, GET /v1/meetings?expand=true, browser tokens, and live firing: a daily series
// whose first occurrence is past fires today's reminder once and never yesterday's, a moved
// occurrence fires at its new time only, a cancelled one never, a deleted series stops; every
// channel (webhook, stream inbox) names the occurrence.
import { before } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { harness, serveLocal, test, waitFor, sleep, utc, MIN, HOUR, DAY } from './harness.mjs';

const h = await harness('recurrence');
let srv;
let key;

before(async () => {
    srv = await h.startServer({ TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1', TOCSIN_SERIES_WINDOW_S: '604800' });
    key = await srv.createKey('recur-a');
});

const post = (json, k = key) => srv.req('POST', '/v1/meetings', { key: k, json });
const occurrences = (id, query = '', k = key) => srv.req('GET', `/v1/meetings/${id}/occurrences${query}`, { key: k });
const patchOccurrence = (id, original, json, k = key) =>
    srv.req('PATCH', `/v1/meetings/${id}/occurrences/${original}`, { key: k, json });

function series(startsAt, rrule, extra = {}) {
    return { title: 'Weekly sync', starts_at: startsAt, time_zone: 'Europe/Berlin', recurrence: { rrule }, ...extra };
}

async function created(json, k = key) {
    const r = await post(json, k);
    assert.equal(r.status, 201, r.text);
    return r.json;
}

// Every occurrence of a series in [from, to), page by page.
async function allOccurrences(id, from, to, limit = 7, k = key) {
    const out = [];
    let cursor = null;
    do {
        const q = `?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&limit=${limit}` +
            (cursor ? `&cursor=${cursor}` : '');
        const r = await occurrences(id, q, k);
        assert.equal(r.status, 200, r.text);
        out.push(...r.json.items);
        cursor = r.json.next_cursor;
    } while (cursor);
    return out;
}

test('validation: each refusal names its field', async () => {
    const start = '2027-01-04T08:00:00Z'; // a Monday, 09:00 in Berlin
    const cases = [
        [{ recurrence: { rrule: 'FREQ=HOURLY' } }, 'recurrence.rrule'],
        [{ recurrence: { rrule: 'FREQ=DAILY;BYHOUR=9' } }, 'recurrence.rrule'],
        [{ recurrence: { rrule: 'FREQ=MONTHLY;BYDAY=255SU' } }, 'recurrence.rrule'],
        [{ recurrence: { rrule: 'FREQ=DAILY;INTERVAL=70000' } }, 'recurrence.rrule'],
        [{ recurrence: { rrule: 'RRULE:FREQ=DAILY' } }, 'recurrence.rrule'],
        [{ recurrence: { rrule: 'FREQ=DAILY;UNTIL=20270301T000000' } }, 'recurrence.rrule'],
        [{ recurrence: { rrule: 'FREQ=WEEKLY;BYDAY=MO,FR;BYSETPOS=1' } }, 'recurrence.rrule'],
        [{ recurrence: {} }, 'recurrence.rrule'],
        [{ recurrence: { rrule: 'FREQ=DAILY', exrule: 'FREQ=DAILY' } }, 'recurrence.exrule'],
        [{ recurrence: 'FREQ=DAILY' }, 'recurrence'],
        [{ recurrence: { rrule: 'FREQ=WEEKLY;BYDAY=TU' } }, 'starts_at'],
        [{ time_zone: null, recurrence: { rrule: 'FREQ=DAILY' } }, 'time_zone'],
        [{ recurrence: { rrule: 'FREQ=DAILY', exdates: ['2027-01-05'] } }, 'recurrence.exdates[0]'],
        [{ recurrence: { rrule: 'FREQ=DAILY', exdates: ['2027-01-05T08:00:00Z', '2027-01-05T09:00:00+01:00'] } },
            'recurrence.exdates[1]'],
        [{ recurrence: { rrule: 'FREQ=DAILY', rdates: ['2027-01-01T08:00:00Z'] } }, 'recurrence.rdates'],
        [{ recurrence: { rrule: 'FREQ=DAILY', rdates: new Array(101).fill('2027-02-01T08:00:00Z') } },
            'recurrence.rdates'],
        [{ starts_at: '2037-01-05T08:00:00Z', recurrence: { rrule: 'FREQ=WEEKLY;BYDAY=MO' } }, 'recurrence'],
        [{ starts_at: '2020-01-06T08:00:00Z', recurrence: { rrule: 'FREQ=WEEKLY;BYDAY=MO;COUNT=3' } }, 'recurrence'],
    ];
    for (const [patch, field] of cases) {
        const r = await post({ ...series(start, 'FREQ=WEEKLY;BYDAY=MO'), ...patch });
        assert.equal(r.status, 400, `${JSON.stringify(patch)}: ${r.text}`);
        assert.equal(r.json.code, 'validation');
        assert.ok(r.json.errors.some((e) => e.field === field), `${JSON.stringify(patch)}: ${JSON.stringify(r.json.errors)}`);
    }
    // The same series, valid, and read back as written.
    const m = await created(series(start, 'FREQ=WEEKLY;BYDAY=MO', {
        recurrence: { rrule: 'FREQ=WEEKLY;BYDAY=MO', exdates: ['2027-01-11T09:00:00+01:00'], rdates: ['2027-01-13T08:00:00Z'] },
    }));
    assert.deepEqual(m.recurrence, {
        rrule: 'FREQ=WEEKLY;BYDAY=MO', exdates: ['2027-01-11T08:00:00.000Z'], rdates: ['2027-01-13T08:00:00.000Z'],
    });
    const got = await srv.req('GET', `/v1/meetings/${m.id}`, { key });
    assert.deepEqual(got.json.recurrence, m.recurrence);
    const single = await created({ title: 'once', starts_at: start });
    assert.equal(single.recurrence, null);
    const r = await occurrences(single.id);
    assert.equal(r.status, 404);
    assert.equal(r.json.code, 'not_recurring');
});

test('wall-clock time is kept across DST in Berlin; exdates and rdates apply', async () => {
    const m = await created(series('2027-03-15T08:00:00Z', 'FREQ=WEEKLY;BYDAY=MO;COUNT=4', {
        recurrence: { rrule: 'FREQ=WEEKLY;BYDAY=MO;COUNT=4', exdates: ['2027-03-22T08:00:00Z'], rdates: ['2027-04-10T07:00:00Z'] },
    }));
    const occ = await allOccurrences(m.id, '2027-01-01T00:00:00Z', '2028-01-01T00:00:00Z', 2);
    // 09:00 in Berlin: CET (UTC+1) until 28 March 2027, CEST (UTC+2) after; the 22nd is an exdate.
    assert.deepEqual(occ.map((o) => o.original_start), [
        '2027-03-15T08:00:00.000Z', '2027-03-29T07:00:00.000Z', '2027-04-05T07:00:00.000Z', '2027-04-10T07:00:00.000Z',
    ]);
    for (const o of occ) {
        assert.equal(o.starts_at, o.original_start);
        assert.equal(o.cancelled, false);
        assert.equal(o.reminders.length, 1);
        assert.equal(o.reminders[0].fire_at, utc(Date.parse(o.starts_at) - 5 * MIN));
    }
});

// utcIso as zone's wall clock with its offset, by the runtime's ICU (an implementation of its own,
// not tocsin's tzfile reader): "2027-03-15T09:00:00.000+01:00".
function wallClock(utcIso, zone) {
    const d = new Date(utcIso);
    const p = Object.fromEntries(new Intl.DateTimeFormat('en-CA', {
        timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
        hour: '2-digit', minute: '2-digit', second: '2-digit',
    }).formatToParts(d).map((x) => [x.type, x.value]));
    const wall = Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute, +p.second, d.getUTCMilliseconds());
    const off = Math.round((wall - d.getTime()) / MIN);
    const hhmm = `${String(Math.floor(Math.abs(off) / 60)).padStart(2, '0')}:${String(Math.abs(off) % 60).padStart(2, '0')}`;
    return `${new Date(wall).toISOString().slice(0, 23)}${off < 0 ? '-' : '+'}${hhmm}`;
}

test('local times: meetings and occurrences with a time_zone show their wall-clock start and end with the offset', async () => {
    const zone = 'America/New_York';
    const m = await created(series('2027-03-08T14:00:00Z', 'FREQ=WEEKLY;BYDAY=MO;COUNT=3',
        { time_zone: zone, ends_at: '2027-03-08T14:30:00Z' }));
    assert.equal(m.starts_at_local, '2027-03-08T09:00:00.000-05:00');
    assert.equal(m.ends_at_local, '2027-03-08T09:30:00.000-05:00');
    const occ = await allOccurrences(m.id, '2027-01-01T00:00:00Z', '2028-01-01T00:00:00Z', 2);
    assert.equal(occ.length, 3);
    for (const o of occ) { // EST, then EDT from 14 March 2027: 09:00 on the wall every week
        assert.equal(o.starts_at_local, wallClock(o.starts_at, zone), JSON.stringify(o));
        assert.equal(o.ends_at_local, wallClock(o.ends_at, zone), JSON.stringify(o));
        assert.match(o.starts_at_local, /T09:00:00\.000-0[45]:00$/);
    }
    assert.deepEqual(occ.map((o) => o.starts_at_local.slice(-6)), ['-05:00', '-04:00', '-04:00']);
    const single = await created({ title: 'No zone', starts_at: '2027-03-08T14:00:00Z' });
    assert.equal(single.starts_at_local, null);
    assert.equal(single.ends_at_local, null);
    const kathmandu = await created({ title: 'Odd offset', starts_at: '2027-01-05T03:15:00Z', time_zone: 'Asia/Kathmandu' });
    assert.equal(kathmandu.starts_at_local, wallClock(kathmandu.starts_at, 'Asia/Kathmandu'));
    assert.equal(kathmandu.starts_at_local, '2027-01-05T09:00:00.000+05:45');
});

test('gap and overlap: 02:30 on a spring-forward day is 03:30; 01:30 on a fall-back day is the first', async () => {
    // New York: 14 March 2027 skips 02:00-03:00, 7 November 2027 repeats 01:00-02:00.
    const gap = await created({
        title: 'gap', starts_at: '2027-03-13T07:30:00Z', time_zone: 'America/New_York',
        recurrence: { rrule: 'FREQ=DAILY;COUNT=3' },
    });
    assert.deepEqual((await allOccurrences(gap.id, '2027-03-01T00:00:00Z', '2027-04-01T00:00:00Z')).map((o) => o.starts_at),
        ['2027-03-13T07:30:00.000Z', '2027-03-14T07:30:00.000Z', '2027-03-15T06:30:00.000Z']);
    const overlap = await created({
        title: 'overlap', starts_at: '2027-11-06T05:30:00Z', time_zone: 'America/New_York',
        recurrence: { rrule: 'FREQ=DAILY;COUNT=3' },
    });
    assert.deepEqual((await allOccurrences(overlap.id, '2027-11-01T00:00:00Z', '2027-12-01T00:00:00Z')).map((o) => o.starts_at),
        ['2027-11-06T05:30:00.000Z', '2027-11-07T05:30:00.000Z', '2027-11-08T06:30:00.000Z']);
    // A series may not start on the second 01:30 of that night.
    const second = await post({
        title: 'second', starts_at: '2027-11-07T06:30:00Z', time_zone: 'America/New_York',
        recurrence: { rrule: 'FREQ=DAILY' },
    });
    assert.equal(second.status, 400);
    assert.equal(second.json.errors[0].field, 'starts_at');
});

test('overrides: move, retitle, cancel; a series change keeps those still occurring and reports the others', async () => {
    const m = await created(series('2027-05-03T07:00:00Z', 'FREQ=DAILY;COUNT=10'));
    const moved = await patchOccurrence(m.id, '2027-05-04T07:00:00.000Z', { starts_at: '2027-05-04T15:00:00+02:00', title: 'Moved' });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.json.starts_at, '2027-05-04T13:00:00.000Z');
    assert.equal(moved.json.original_start, '2027-05-04T07:00:00.000Z');
    assert.equal(moved.json.title, 'Moved');
    const cancelled = await patchOccurrence(m.id, '2027-05-05T07:00:00.000Z', { cancelled: true });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.json.cancelled, true);
    // A patch that changes nothing (empty, or what the override already says) writes nothing.
    const version = async () => (await srv.req('GET', `/v1/meetings/${m.id}`, { key })).json.version;
    const was = await version();
    for (const body of [{}, { cancelled: true }]) {
        const same = await patchOccurrence(m.id, '2027-05-05T07:00:00.000Z', body);
        assert.equal(same.status, 200, same.text);
        assert.equal(same.json.cancelled, true);
    }
    assert.equal(await version(), was, 'a patch that changed nothing bumped the version');
    // Moved past two later ones: the list follows the actual start.
    await patchOccurrence(m.id, '2027-05-06T07:00:00.000Z', { starts_at: '2027-05-08T20:00:00Z' });
    const occ = await allOccurrences(m.id, '2027-05-01T00:00:00Z', '2027-06-01T00:00:00Z', 3);
    assert.deepEqual(occ.map((o) => [o.original_start.slice(5, 13), o.starts_at.slice(5, 16), o.title, o.cancelled]), [
        ['05-03T07', '05-03T07:00', 'Weekly sync', false],
        ['05-04T07', '05-04T13:00', 'Moved', false],
        ['05-05T07', '05-05T07:00', 'Weekly sync', true],
        ['05-07T07', '05-07T07:00', 'Weekly sync', false],
        ['05-08T07', '05-08T07:00', 'Weekly sync', false],
        ['05-06T07', '05-08T20:00', 'Weekly sync', false],
        ['05-09T07', '05-09T07:00', 'Weekly sync', false],
        ['05-10T07', '05-10T07:00', 'Weekly sync', false],
        ['05-11T07', '05-11T07:00', 'Weekly sync', false],
        ['05-12T07', '05-12T07:00', 'Weekly sync', false],
    ]);
    // Not an occurrence, not as listed, a bad patch.
    for (const [at, body, status, code] of [
        ['2027-05-04T07:00:01.000Z', { cancelled: true }, 404, 'occurrence_not_found'],
        ['2027-05-04T07:00:00Z', { cancelled: true }, 404, 'occurrence_not_found'],
        ['2027-05-20T07:00:00.000Z', { cancelled: true }, 404, 'occurrence_not_found'],
        ['2027-05-07T07:00:00.000Z', { cancelled: 'yes' }, 400, 'validation'],
        ['2027-05-07T07:00:00.000Z', { ends_at: '2027-05-07T06:00:00Z' }, 400, 'validation'],
        ['2027-05-07T07:00:00.000Z', { title: '' }, 400, 'validation'],
        ['2027-05-07T07:00:00.000Z', { location: 'x' }, 400, 'validation'],
    ]) {
        const r = await patchOccurrence(m.id, at, body);
        assert.equal(r.status, status, `${at} ${JSON.stringify(body)}: ${r.text}`);
        assert.equal(r.json.code, code);
    }
    // Every other day from the 3rd: the 5th and the 7th... stay, the 4th and the 6th go.
    const before = (await srv.req('GET', `/v1/meetings/${m.id}`, { key })).json;
    const r = await srv.req('PATCH', `/v1/meetings/${m.id}`, {
        key, json: { recurrence: { rrule: 'FREQ=DAILY;INTERVAL=2;COUNT=5' } }, headers: { 'If-Match': (await srv.req('GET', `/v1/meetings/${m.id}`, { key })).header('etag') },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.overrides_dropped, ['2027-05-04T07:00:00.000Z', '2027-05-06T07:00:00.000Z']);
    assert.equal(r.json.version, before.version + 1);
    // The ETag is the meeting's as GET shows it (without overrides_dropped).
    const again = await srv.req('GET', `/v1/meetings/${m.id}`, { key });
    assert.equal(again.header('etag'), r.header('etag'));
    assert.equal(again.json.overrides_dropped, undefined);
    const after = await allOccurrences(m.id, '2027-05-01T00:00:00Z', '2027-06-01T00:00:00Z');
    assert.deepEqual(after.map((o) => [o.original_start.slice(5, 10), o.cancelled]),
        [['05-03', false], ['05-05', true], ['05-07', false], ['05-09', false], ['05-11', false]]);
    // cancelled: false (or null) restores it.
    const back = await patchOccurrence(m.id, '2027-05-05T07:00:00.000Z', { cancelled: null });
    assert.equal(back.json.cancelled, false);
});

test('at most 1,000 overridden occurrences a series; a series write with 1,000 of a COUNT=10000 rule stays quick', async () => {
    const m = await created(series('2027-01-04T08:00:00Z', 'FREQ=DAILY;COUNT=10000', { time_zone: 'UTC' }));
    await h.sql(`INSERT INTO occurrence_overrides (meeting_id, original_start, title)
        SELECT '${m.id}', timestamptz '2027-01-04T08:00:00Z' + n * interval '10 days', 'Kept'
        FROM generate_series(0, 999) AS n`);
    const over = await patchOccurrence(m.id, '2030-01-01T08:00:00.000Z', { title: 'One more' });
    assert.equal(over.status, 409, over.text);
    assert.equal(over.json.code, 'series_override_limit');
    assert.equal((await patchOccurrence(m.id, '2030-01-01T08:00:00.000Z', {})).status, 200, 'a patch that changes nothing is no new override');
    // An occurrence already overridden can still change; every override is checked against the
    // series at each write, in one walk (a test per override took seconds here).
    const t0 = Date.now();
    const again = await patchOccurrence(m.id, '2027-01-14T08:00:00.000Z', { title: 'Changed' });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json.title, 'Changed');
    assert.ok(Date.now() - t0 < 5000, `a write took ${Date.now() - t0} ms`);
    assert.equal(await h.sql(`SELECT count(*) FROM occurrence_overrides WHERE meeting_id = '${m.id}'`), '1000');
});

test('reminders per occurrence: rows within the window, ids stable across a title change, pending ones cancelled by DELETE', async () => {
    const start = new Date(Date.now() + HOUR);
    start.setUTCMilliseconds(0);
    const m = await created({
        title: 'daily', starts_at: start.toISOString(), time_zone: 'UTC',
        reminders: [{ minutes_before: 10 }, { minutes_before: 0, channels: ['webhook'] }],
        recurrence: { rrule: 'FREQ=DAILY' },
    });
    // The series' reminders show their next firing: the first occurrence's.
    assert.deepEqual(m.reminders.map((r) => [r.minutes_before, r.fire_at, r.status]), [
        [10, utc(start.getTime() - 10 * MIN), 'pending'], [0, utc(start.getTime()), 'pending'],
    ]);
    assert.deepEqual(m.reminders[1].channels, ['webhook']);
    const page = await occurrences(m.id, '?limit=10');
    const items = page.json.items;
    assert.equal(items.length, 10);
    // A window of 7 days (TOCSIN_SERIES_WINDOW_S): rows for 7 occurrences, the rest shown ahead.
    assert.ok(items.slice(0, 7).every((o) => o.reminders.every((r) => r.id !== null && r.status === 'pending')));
    assert.ok(items.slice(7).every((o) => o.reminders.every((r) => r.id === null && r.status === null)));
    const ids = items.slice(0, 7).flatMap((o) => o.reminders.map((r) => r.id));
    assert.equal(new Set(ids).size, 14);
    const p = await srv.req('PATCH', `/v1/meetings/${m.id}`, { key, json: { title: 'daily, renamed' } });
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.json.overrides_dropped, []);
    const again = (await occurrences(m.id, '?limit=7')).json.items.flatMap((o) => o.reminders.map((r) => r.id));
    assert.deepEqual(again, ids, 'a change that moves no occurrence keeps every reminder id');
    assert.equal((await srv.req('DELETE', `/v1/meetings/${m.id}`, { key })).status, 204);
    const left = await h.sql(`SELECT count(*) FROM reminders WHERE meeting_id = '${m.id}' AND status = 'pending'`);
    assert.equal(left, '0');
    assert.equal((await occurrences(m.id)).status, 404);
});

test('expand=true: singles and occurrences in one calendar range, paginated without loss or repeat', async () => {
    const k = await srv.createKey('recur-expand');
    const base = Date.parse('2027-09-06T00:00:00Z'); // a Monday
    await created({ title: 'single 1', starts_at: utc(base + 2 * DAY + 9 * HOUR) }, k);
    await created({ title: 'single 2', starts_at: utc(base + 5 * DAY + 9 * HOUR) }, k);
    await created({ title: 'outside', starts_at: utc(base + 20 * DAY) }, k);
    const daily = await created({ title: 'daily', starts_at: utc(base - 3 * DAY + 9 * HOUR), time_zone: 'UTC', recurrence: { rrule: 'FREQ=DAILY' } }, k);
    const weekly = await created({ title: 'weekly', starts_at: utc(base + 9 * HOUR), time_zone: 'UTC', recurrence: { rrule: 'FREQ=WEEKLY;BYDAY=MO,WE' } }, k);
    await patchOccurrence(daily.id, utc(base + DAY + 9 * HOUR), { starts_at: utc(base + 11 * DAY) }, k); // moved out
    await patchOccurrence(daily.id, utc(base - 2 * DAY + 9 * HOUR), { starts_at: utc(base + 3 * DAY) }, k); // moved in
    const from = utc(base), to = utc(base + 7 * DAY);
    const one = await srv.req('GET', `/v1/meetings?expand=true&from=${from}&to=${to}&limit=200`, { key: k });
    assert.equal(one.status, 200, one.text);
    const all = one.json.items;
    assert.equal(one.json.next_cursor, null);
    // 7 daily (one moved out, one moved in), 2 weekly (Monday and Wednesday), 2 singles.
    assert.equal(all.length, 11);
    for (let i = 1; i < all.length; i++) {
        assert.ok(all[i - 1].starts_at <= all[i].starts_at, 'ordered by starts_at');
    }
    assert.deepEqual(all.filter((i) => i.occurrence === null).map((i) => i.title), ['single 1', 'single 2']);
    const movedIn = all.find((i) => i.occurrence?.original_start === utc(base - 2 * DAY + 9 * HOUR));
    assert.equal(movedIn.starts_at, utc(base + 3 * DAY));
    assert.ok(!all.some((i) => i.occurrence?.original_start === utc(base + DAY + 9 * HOUR)), 'moved out');
    assert.equal(all.filter((i) => i.id === weekly.id).length, 2);
    // Page by page, limit 2: the same items in the same order.
    const paged = [];
    let cursor = null;
    do {
        const r = await srv.req('GET', `/v1/meetings?expand=true&from=${from}&to=${to}&limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key: k });
        assert.equal(r.status, 200, r.text);
        paged.push(...r.json.items);
        cursor = r.json.next_cursor;
    } while (cursor);
    assert.deepEqual(paged.map((i) => [i.id, i.starts_at]), all.map((i) => [i.id, i.starts_at]));
    // Without expand a series is one item, at its first occurrence.
    const plain = await srv.req('GET', `/v1/meetings?from=${utc(base - 7 * DAY)}&to=${to}`, { key: k });
    assert.equal(plain.json.items.filter((i) => i.id === daily.id).length, 1);
    for (const q of ['expand=true', `expand=true&from=${from}`, `expand=true&from=${from}&to=${utc(base + 401 * DAY)}`,
        'expand=yes', `expand=true&from=${from}&to=${to}&cursor=zz`]) {
        const r = await srv.req('GET', `/v1/meetings?${q}`, { key: k });
        assert.equal(r.status, 400, q);
        assert.equal(r.json.code, 'bad_query');
    }
});

test('ranges past the last year the rule engine generates, and forged cursors: an empty page or a 400, never a 500', async () => {
    const k = await srv.createKey('recur-far');
    const weekly = await created(series('2027-01-04T08:00:00Z', 'FREQ=WEEKLY'), k);
    const far = await occurrences(weekly.id, '?from=2583-01-10T00:00:00Z&to=2583-12-31T00:00:00Z', k);
    assert.equal(far.status, 200, far.text);
    assert.deepEqual(far.json.items, []);
    const farther = await occurrences(weekly.id, '?from=9999-01-01T00:00:00Z', k);
    assert.equal(farther.status, 200, farther.text);
    const cal = await srv.req('GET', '/v1/meetings?expand=true&from=3000-01-01T00:00:00Z&to=3000-02-01T00:00:00Z', { key: k });
    assert.equal(cal.status, 200, cal.text);
    assert.deepEqual(cal.json.items, []);
    const hex = (text) => Buffer.from(text).toString('hex');
    for (const [path, raw] of [[`/v1/meetings/${weekly.id}/occurrences`, 'o1:9223372036854775807:0'],
        [`/v1/meetings/${weekly.id}/occurrences`, 'o1:-1:0'],
        ['/v1/meetings?expand=true&from=2027-01-01T00:00:00Z&to=2027-02-01T00:00:00Z', `x1:253402300800000:${weekly.id}:0`],
        ['/v1/meetings', `v1:9223372036854775807:${weekly.id}`]]) {
        const r = await srv.req('GET', `${path}${path.includes('?') ? '&' : '?'}cursor=${hex(raw)}`, { key: k });
        assert.equal(r.status, 400, `${raw}: ${r.text}`);
        assert.equal(r.json.code, 'bad_query');
    }
});

test('browser tokens: participants read occurrences, only the organizer changes one', async () => {
    const m = await created(series('2027-06-07T07:00:00Z', 'FREQ=WEEKLY;BYDAY=MO', {
        participants: [{ id: 'ada' }], organizer_id: 'grace',
    }));
    const token = async (sub, scope) => {
        const r = await srv.req('POST', '/v1/browser-tokens', { key, json: { sub, scope } });
        assert.equal(r.status, 201, r.text);
        return r.json.token;
    };
    const ada = await token('ada', 'meetings:read meetings:write');
    const eve = await token('eve', 'meetings:read');
    const grace = await token('grace', 'meetings:write meetings:read');
    assert.equal((await occurrences(m.id, '?limit=1', ada)).status, 200);
    assert.equal((await occurrences(m.id, '', eve)).status, 404);
    const no = await patchOccurrence(m.id, '2027-06-14T07:00:00.000Z', { cancelled: true }, ada);
    assert.equal(no.status, 403);
    assert.equal(no.json.code, 'not_organizer');
    assert.equal((await patchOccurrence(m.id, '2027-06-14T07:00:00.000Z', { cancelled: true }, grace)).status, 200);
    const list = await srv.req('GET', `/v1/meetings?expand=true&from=2027-06-01T00:00:00Z&to=2027-06-30T00:00:00Z`, { key: ada });
    assert.equal(list.status, 200, list.text);
    assert.equal(list.json.items.length, 4);
    assert.equal((await srv.req('GET', `/v1/meetings?expand=true&from=2027-06-01T00:00:00Z&to=2027-06-30T00:00:00Z`, { key: eve })).json.items.length, 0);
});

test('the reconciler extends a window when it comes due, once, with two replicas sharing the work', async () => {
    const second = await h.startServer({ TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1', TOCSIN_SERIES_WINDOW_S: '604800' });
    const start = new Date(Date.now() + HOUR);
    start.setUTCMilliseconds(0);
    const m = await created({
        title: 'extended', starts_at: start.toISOString(), time_zone: 'UTC',
        reminders: [{ minutes_before: 15 }, { minutes_before: 1 }], recurrence: { rrule: 'FREQ=DAILY' },
    });
    const rows = async () => Number(await h.sql(`SELECT count(*) FROM reminders WHERE meeting_id = '${m.id}'`));
    const full = await rows();
    assert.equal(full, 14, 'seven days of two reminders');
    // Time passing, as the reconciler sees it: the last three days are not written yet and the
    // window is due. (Counted in the statement: the reconciler may extend the window again
    // before a later count could see the gap.)
    const gone = await h.sql(`WITH d AS (DELETE FROM reminders WHERE meeting_id = '${m.id}' AND original_start >= now() + interval '4 days' RETURNING 1)
        SELECT count(*) FROM d`);
    assert.equal(Number(gone), 6);
    await h.sql(`UPDATE series SET covered_to = now() + interval '4 days', extend_after = now() WHERE meeting_id = '${m.id}'`);
    assert.ok(await waitFor(async () => (await rows()) === 14, 10000), `extended to ${await rows()} rows`);
    await sleep(1500);
    assert.equal(await rows(), 14, 'each row once');
    const due = await h.sql(`SELECT extend_after > now() FROM series WHERE meeting_id = '${m.id}'`);
    assert.equal(due, 't', 'not due again');
    await second.stop();
});

// A webhook receiver recording each notification with its arrival time.
async function receiver(t) {
    const rx = { got: [] };
    rx.server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
            rx.got.push({ at: Date.now(), id: req.headers['webhook-id'], body: JSON.parse(Buffer.concat(chunks).toString()) });
            res.writeHead(204).end();
        });
    });
    rx.url = await serveLocal(t, rx.server);
    return rx;
}

test('live: today fires once and yesterday never; moved fires at its new time only; cancelled never; deleted stops', async (t) => {
    const k = await srv.createKey('recur-live');
    const rx = await receiver(t);
    assert.equal((await srv.req('POST', '/v1/webhooks', { key: k, json: { url: rx.url } })).status, 201);
    const now = Date.now();
    const today = now + 4000 - (now % 1000);
    // A daily series whose first occurrence was yesterday at today's time; two rdates soon after.
    const m = await created({
        title: 'standup', starts_at: utc(today - DAY), time_zone: 'Europe/Berlin',
        participants: [{ id: 'ada' }], reminders: [{ minutes_before: 0 }],
        recurrence: { rrule: 'FREQ=DAILY', rdates: [utc(today + 3000), utc(today + 5000)] },
    }, k);
    const moved = await patchOccurrence(m.id, utc(today + 3000), { starts_at: utc(today + 7000) }, k);
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.json.reminders[0].fire_at, utc(today + 7000));
    assert.equal((await patchOccurrence(m.id, utc(today + 5000), { cancelled: true }, k)).status, 200);
    // A second series deleted after its first firing: its later occurrences never fire.
    const doomed = await created({
        title: 'doomed', starts_at: utc(today), time_zone: 'UTC', reminders: [{ minutes_before: 0 }],
        recurrence: { rrule: 'FREQ=DAILY', rdates: [utc(today + 6000)] },
    }, k);
    await waitFor(() => rx.got.filter((g) => g.body.data.meeting.id === doomed.id).length === 1, 15000);
    assert.equal((await srv.req('DELETE', `/v1/meetings/${doomed.id}`, { key: k })).status, 204);
    await waitFor(() => rx.got.some((g) => g.body.data.occurrence?.original_start === utc(today + 3000)), 20000);
    await sleep(2500); // anything late or doubled would arrive now
    const mine = rx.got.filter((g) => g.body.data.meeting.id === m.id);
    assert.deepEqual(mine.map((g) => g.body.data.occurrence.original_start), [utc(today), utc(today + 3000)],
        'today and the moved one, each once; never yesterday, never the cancelled one');
    const [first, second] = mine;
    assert.ok(first.at >= today, 'not early');
    assert.ok(second.at >= today + 7000, `the moved one fired at its new time (${second.at - today} ms)`);
    assert.equal(second.body.data.meeting.starts_at, utc(today + 7000));
    assert.equal(first.body.data.meeting.starts_at, utc(today));
    assert.notEqual(first.id, second.id, 'each occurrence has its own webhook-id');
    assert.equal(first.id, first.body.id);
    assert.deepEqual(rx.got.filter((g) => g.body.data.meeting.id === doomed.id).map((g) => g.body.data.occurrence.original_start),
        [utc(today)]);
    // The stream's inbox has the same occurrences, with the same ids.
    const tok = await srv.req('POST', '/v1/browser-tokens', { key: k, json: { sub: 'ada', scope: 'notifications' } });
    const inbox = await srv.req('GET', '/v1/me/notifications', { key: tok.json.token });
    assert.equal(inbox.status, 200, inbox.text);
    assert.deepEqual(inbox.json.items.map((i) => i.id), [first.id, second.id]);
    assert.deepEqual(inbox.json.items.map((i) => i.data.occurrence.original_start), [utc(today), utc(today + 3000)]);
    // Occurrence states as listed.
    const occ = await allOccurrences(m.id, utc(today - DAY), utc(today + DAY - 1), 7, k);
    assert.deepEqual(occ.map((o) => [o.original_start, o.reminders[0].status]), [
        [utc(today - DAY), null], [utc(today), 'fired'], [utc(today + 5000), 'cancelled'], [utc(today + 3000), 'fired'],
    ]);
});
