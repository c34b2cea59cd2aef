// preferences.test.mjs -- a participant's preferences (DESIGN section 13) against the suite's
// real SMTP server (smtp.mjs) and push stand-in (pushservice.mjs): read and replaced with a
// browser token (one's own) or an API key (any participant the tenant knows, never another
// tenant's); every malformed body refused with a 4xx problem and nothing changed; a channel
// turned off sends nothing and records the delivery `skipped` (`preference`), shown by the
// delivery search and /v1/stats, while the inbox still gets the reminder; quiet hours defer a
// delivery to their end, or skip it (`quiet_hours`) when that end is after the meeting's start.
// The end of a quiet window is computed by the database function the fire statement calls; it is
// checked here against Python's zoneinfo at instants on both sides of DST changes (spring gap,
// autumn overlap, a half-hour change), since a live fire can only happen now. A snooze of an
// inbox item brings its reminder again, once, to that participant alone, as a new occurrence.
// Own reminder offsets replace the meeting's for the participant who set them: fired at their own
// time to them alone (the others get the meeting's, they do not), re-planned when they change
// (the new time fires, the old one never), for a series' occurrences too, and gone with the
// participant when a meeting no longer lists them.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { harness, test, sleep, MIN, HOUR, deliveriesWhen as harnessDeliveriesWhen } from './harness.mjs';
import { smtpServer, header } from './smtp.mjs';
import { pushService } from './pushservice.mjs';
import { mintToken } from './sse.mjs';

const PYTHON = process.env.TOCSIN_TEST_PYTHON ?? '/usr/bin/python3';
const LEAD_MS = 2000;
const BOUND_MS = 20000; // generous: a delivery under ASan on a shared machine

const h = await harness('preferences');
let smtp;
let ps;
let srv;
let key;

before(async () => {
    smtp = await smtpServer();
    ps = await pushService();
    srv = await h.startServer({
        TOCSIN_SMTP_URL: smtp.url,
        TOCSIN_SMTP_FROM: 'reminders@tocsin.test',
        TOCSIN_WEBPUSH_ALLOW_PRIVATE: '1',
        TOCSIN_DELIVERY_RETRY_BASE_MS: '200',
    });
    key = await srv.createKey('prefs');
});
after(async () => {
    await smtp.cleanup();
    await ps.stop();
});

const DEFAULTS = { channels: { email: true, push: true }, quiet_hours: null, reminders: null };

async function tokenOf(sub, scope = 'notifications') {
    return (await mintToken(srv, key, { sub, scope })).token;
}

async function putMine(tok, json) {
    return srv.req('PUT', '/v1/me/preferences', { key: tok, json });
}

async function getMine(tok) {
    const r = await srv.req('GET', '/v1/me/preferences', { key: tok });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

// A meeting whose one reminder (channels as given) fires at fireAtMs (LEAD_MS from now, on a
// whole second), startsIn after it.
async function dueSoon(participants, channels, startsInMs = 5 * MIN, fireAtMs = Date.now() + LEAD_MS) {
    const starts = new Date(fireAtMs + startsInMs);
    starts.setUTCMilliseconds(0);
    const r = await srv.req('POST', '/v1/meetings', {
        key,
        json: { title: 'Prefs', starts_at: starts.toISOString(), participants,
            reminders: [{ minutes_before: startsInMs / MIN, channels }] },
    });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

const deliveriesWhen = (id, pred, bound = BOUND_MS) => harnessDeliveriesWhen(srv, key, id, pred, bound);

const mailTo = (addr) => smtp.messages().filter((m) => m.rcpt_tos.includes(addr));

// The local wall-clock minute of now in zone, as minutes after midnight.
function localMinute(zone, ms = Date.now()) {
    const [hh, mm] = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
        .format(new Date(ms)).split(':').map(Number);
    return hh * 60 + mm;
}
const hhmm = (m) => `${String(Math.floor(((m + 1440) % 1440) / 60)).padStart(2, '0')}:${String((m + 1440) % 60).padStart(2, '0')}`;

// Python's zoneinfo's answer: the end of the quiet window (zone, start, end) holding each
// instant, or null. A local end time is read with fold=0: in a gap with the offset before it
// (moved forward by the gap), in an overlap the first instant, as the API promises.
function pythonQuietEnds(cases) {
    const script = `
import json, sys
from datetime import datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo
out = []
for c in json.load(sys.stdin):
    z = ZoneInfo(c["zone"])
    at = datetime.fromisoformat(c["at"].replace("Z", "+00:00"))
    local = at.astimezone(z)
    m = local.hour * 60 + local.minute
    s, e = c["start"], c["end"]
    inside = (s <= m < e) if s < e else (m >= s or m < e)
    if not inside:
        out.append(None)
        continue
    d = local.date() + (timedelta(days=1) if m >= e else timedelta())
    end = datetime.combine(d, time(e // 60, e % 60), tzinfo=z)
    out.append(end.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
print(json.dumps(out))
`;
    return JSON.parse(execFileSync(PYTHON, ['-c', script], { input: JSON.stringify(cases) }).toString());
}

async function sqlQuietEnd(c) {
    const v = await h.sql(`SELECT coalesce(to_char(tocsin_quiet_end('${c.zone}', ${c.start}, ${c.end},
        '${c.at}'::timestamptz) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'null')`);
    return v === 'null' ? null : v;
}

test('defaults, a round trip with a browser token and with an API key, another tenant never reaches them', async () => {
    const tok = await tokenOf('pia');
    assert.deepEqual(await getMine(tok), DEFAULTS);
    const mine = { channels: { email: false, push: true }, quiet_hours: { time_zone: 'Europe/Berlin', start: '22:00', end: '07:00' }, reminders: null };
    const put = await putMine(tok, mine);
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.json, mine);
    assert.deepEqual(await getMine(tok), mine);
    // Members left out take their defaults: a PUT replaces the whole.
    const partial = await putMine(tok, { channels: { push: false } });
    assert.equal(partial.status, 200, partial.text);
    assert.deepEqual(await getMine(tok), { ...DEFAULTS, channels: { email: true, push: false } });

    // The API key reaches a participant with preferences, or one a live meeting lists.
    const viaKey = await srv.req('GET', '/v1/participants/pia/preferences', { key });
    assert.equal(viaKey.status, 200, viaKey.text);
    assert.deepEqual(viaKey.json.channels, { email: true, push: false });
    assert.equal((await srv.req('GET', '/v1/participants/nobody/preferences', { key })).status, 404);
    const unknownPut = await srv.req('PUT', '/v1/participants/nobody/preferences', { key, json: DEFAULTS });
    assert.equal(unknownPut.status, 404, unknownPut.text);
    assert.equal(unknownPut.json.code, 'participant_not_found');
    await dueSoon([{ id: 'quinn' }], ['stream'], 60 * MIN);
    const quinn = await srv.req('PUT', '/v1/participants/quinn/preferences', { key, json: { channels: { email: false } } });
    assert.equal(quinn.status, 200, quinn.text);
    assert.equal(quinn.json.channels.email, false);
    assert.equal((await getMine(await tokenOf('quinn'))).channels.email, false);

    // Another tenant: pia is not theirs; once their meeting lists a "pia", she is their own.
    const other = await srv.createKey('prefs-other');
    assert.equal((await srv.req('GET', '/v1/participants/pia/preferences', { key: other })).status, 404);
    assert.equal((await srv.req('PUT', '/v1/participants/pia/preferences', { key: other, json: DEFAULTS })).status, 404);
    const m = await srv.req('POST', '/v1/meetings', { key: other, json: { title: 'Theirs', starts_at: new Date(Date.now() + HOUR).toISOString(), participants: [{ id: 'pia' }] } });
    assert.equal(m.status, 201, m.text);
    const theirs = await srv.req('GET', '/v1/participants/pia/preferences', { key: other });
    assert.equal(theirs.status, 200, theirs.text);
    assert.deepEqual(theirs.json, DEFAULTS);
    assert.deepEqual((await getMine(tok)).channels, { email: true, push: false }, 'the first tenant\'s pia is untouched');

    // Who may call which: a browser token never reaches the API-key route, nor an API key /me.
    assert.equal((await srv.req('GET', '/v1/participants/pia/preferences', { key: tok })).status, 403);
    assert.equal((await srv.req('GET', '/v1/me/preferences', { key })).status, 403);
});

test('every malformed body is a 4xx problem and changes nothing', async () => {
    const tok = await tokenOf('mal');
    const kept = { channels: { email: false, push: true }, quiet_hours: { time_zone: 'America/New_York', start: '23:00', end: '06:30' }, reminders: null };
    assert.equal((await putMine(tok, kept)).status, 200);
    const quiet = (q) => ({ quiet_hours: { time_zone: 'Europe/Berlin', start: '22:00', end: '07:00', ...q } });
    const six = [1, 2, 3, 4, 5, 6].map((n) => ({ minutes_before: n }));
    const cases = [
        [{ colour: 'blue' }, 400, 'colour'],
        [{ channels: { email: false, sms: true } }, 400, 'channels.sms'],
        [{ channels: { email: 'no' } }, 400, 'channels.email'],
        [{ channels: [] }, 400, 'channels'],
        [quiet({ start: '7:00' }), 400, 'quiet_hours.start'],
        [quiet({ start: '24:00' }), 400, 'quiet_hours.start'],
        [quiet({ end: '07:60' }), 400, 'quiet_hours.end'],
        [quiet({ end: '0700' }), 400, 'quiet_hours.end'],
        [quiet({ end: '07:00:00' }), 400, 'quiet_hours.end'],
        [quiet({ end: 700 }), 400, 'quiet_hours.end'],
        [quiet({ end: '22:00' }), 400, 'quiet_hours.end'],
        [quiet({ time_zone: 'Mars/Olympus_Mons' }), 400, 'quiet_hours.time_zone'],
        [quiet({ time_zone: '../../etc/passwd' }), 400, 'quiet_hours.time_zone'],
        [quiet({ time_zone: 'EST5EDT,M3.2.0,M11.1.0' }), 400, 'quiet_hours.time_zone'],
        [{ quiet_hours: { start: '22:00', end: '07:00' } }, 400, 'quiet_hours.time_zone'],
        [quiet({ until: 'never' }), 400, 'quiet_hours.until'],
        [{ quiet_hours: '22:00-07:00' }, 400, 'quiet_hours'],
        [{ reminders: [{ minutes_before: -1 }] }, 400, 'reminders[0].minutes_before'],
        [{ reminders: [{ minutes_before: 40321 }] }, 400, 'reminders[0].minutes_before'],
        [{ reminders: [{ minutes_before: 5 }, { minutes_before: 5 }] }, 400, 'reminders[1].minutes_before'],
        [{ reminders: [{ minutes_before: 5, channels: ['sms'] }] }, 400, 'reminders[0].channels'],
        [{ reminders: [{ minutes_before: 5, when: 'soon' }] }, 400, 'reminders[0].when'],
        [{ reminders: six }, 400, 'reminders'],
        [{ reminders: [{ minutes_before: 1440, channels: ['webhook', 'email'] }] }, 400, 'reminders[0].channels'],
        [{ reminders: [{ minutes_before: 60 }, { minutes_before: 5, channels: ['webhook'] }] }, 400, 'reminders[1].channels'],
        [{ reminders: [{ minutes_before: 5, channels: [] }] }, 400, 'reminders[0].channels'],
        [{ reminders: { minutes_before: 5 } }, 400, 'reminders'],
        [[], 400, ''],
    ];
    for (const [body, status, field] of cases) {
        const r = await putMine(tok, body);
        assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.text}`);
        assert.match(r.header('content-type'), /^application\/problem\+json/);
        assert.equal(r.json.code, 'validation', r.text);
        assert.ok(r.json.errors.some((e) => e.field === field), `${JSON.stringify(body)} names ${field}: ${r.text}`);
        assert.deepEqual(await getMine(tok), kept, `${JSON.stringify(body)} changed nothing`);
    }
    const notJson = await srv.req('PUT', '/v1/me/preferences', { key: tok, body: '{"channels":', headers: { 'Content-Type': 'application/json' } });
    assert.equal(notJson.status, 400);
    assert.equal(notJson.json.code, 'bad_json');
    const wrongType = await srv.req('PUT', '/v1/me/preferences', { key: tok, body: '{}', headers: { 'Content-Type': 'text/plain' } });
    assert.equal(wrongType.status, 415);
    assert.deepEqual(await getMine(tok), kept);
});

test('a channel turned off sends nothing there and records the delivery skipped (preference); the inbox still has it', async () => {
    const ada = ps.subscribe();
    const bob = ps.subscribe();
    for (const [id, sub] of [['ada', ada], ['bob', bob]]) {
        const r = await srv.req('POST', '/v1/push/subscriptions', { key: await tokenOf(id, 'push'), json: sub.json });
        assert.equal(r.status, 201, r.text);
    }
    const adaTok = await tokenOf('ada');
    assert.equal((await putMine(adaTok, { channels: { email: false, push: false } })).status, 200);
    const m = await dueSoon([{ id: 'ada', email: 'ada@example.com' }, { id: 'bob', email: 'bob@example.com' }],
        ['email', 'push', 'stream']);
    const items = await deliveriesWhen(m.id, (xs) => xs.filter((d) => d.status !== 'pending').length === 5);
    const of = (channel, who) => items.find((d) => d.channel === channel && d.recipient === who);
    for (const ch of ['email', 'push']) {
        assert.equal(of(ch, 'ada').status, 'skipped', JSON.stringify(items));
        assert.equal(of(ch, 'ada').last_error, 'preference');
        assert.equal(of(ch, 'ada').attempts, 0);
        assert.equal(of(ch, 'bob').status, 'delivered', JSON.stringify(items));
    }
    assert.equal(mailTo('bob@example.com').length, 1);
    assert.equal(bob.got.length, 1);
    await sleep(500); // nothing late either
    assert.equal(mailTo('ada@example.com').length, 0);
    assert.equal(ada.got.length, 0);
    // The inbox and the stream always get it.
    const inbox = await srv.req('GET', '/v1/me/notifications', { key: adaTok });
    assert.equal(inbox.status, 200, inbox.text);
    assert.ok(inbox.json.items.some((x) => x.data.meeting.id === m.id), inbox.text);

    const search = await srv.req('GET', `/v1/deliveries?status=skipped&meeting_id=${m.id}`, { key });
    assert.equal(search.status, 200, search.text);
    assert.deepEqual(search.json.items.map((d) => `${d.channel}:${d.recipient}:${d.last_error}`).sort(),
        ['email:ada:preference', 'push:ada:preference']);
    const all = await srv.req('GET', `/v1/deliveries?meeting_id=${m.id}`, { key });
    assert.equal(all.json.items.filter((d) => d.status === 'skipped').length, 2, 'the unfiltered search shows them too');
    const stats = await srv.req('GET', '/v1/stats', { key });
    assert.equal(stats.status, 200, stats.text);
    assert.ok(stats.json.skipped >= 2, stats.text);
    assert.ok(stats.json.channels.email.skipped >= 1 && stats.json.channels.push.skipped >= 1, stats.text);
    const retry = await srv.req('POST', `/v1/deliveries/${of('email', 'ada').id}/retry`, { key });
    assert.equal(retry.status, 409, 'a skipped delivery is never sent');
    assert.equal(retry.json.code, 'delivery_not_retriable');
});

test('quiet hours whose end is after the meeting\'s start skip the delivery (quiet_hours)', async () => {
    const zone = 'Asia/Kathmandu'; // +05:45: minutes of its own
    const now = localMinute(zone);
    const tok = await tokenOf('cy');
    assert.equal((await putMine(tok, { quiet_hours: { time_zone: zone, start: hhmm(now - 30), end: hhmm(now + 120) } })).status, 200);
    const m = await dueSoon([{ id: 'cy', email: 'cy@example.com' }, { id: 'dee', email: 'dee@example.com' }], ['email', 'stream'], 2 * MIN);
    const items = await deliveriesWhen(m.id, (xs) => xs.filter((d) => d.channel === 'email' && d.status !== 'pending').length === 2);
    const cy = items.find((d) => d.recipient === 'cy');
    assert.equal(cy.status, 'skipped', JSON.stringify(items));
    assert.equal(cy.last_error, 'quiet_hours');
    assert.equal(items.find((d) => d.recipient === 'dee').status, 'delivered');
    assert.equal(mailTo('cy@example.com').length, 0);
    const inbox = await srv.req('GET', '/v1/me/notifications', { key: tok });
    assert.ok(inbox.json.items.some((x) => x.data.meeting.id === m.id), 'the inbox gets it');
});

test('quiet hours ending before the meeting\'s start defer the delivery to their end', async () => {
    const zone = 'America/St_Johns'; // -03:30 now
    // Quiet hours end on a minute: the reminder fires a few seconds before the next minute that
    // is far enough ahead (every zone's offset is whole minutes, so local minutes start with
    // UTC's), and the window ends at that minute.
    const boundary = Math.ceil((Date.now() + 3 * LEAD_MS) / MIN) * MIN;
    const fireAt = boundary - 2 * LEAD_MS;
    const end0 = localMinute(zone, boundary);
    const tok = await tokenOf('eve');
    const q = { time_zone: zone, start: hhmm(end0 - 10), end: hhmm(end0) };
    assert.equal((await putMine(tok, { quiet_hours: q })).status, 200);
    const m = await dueSoon([{ id: 'eve', email: 'eve@example.com' }], ['email'], 10 * MIN, fireAt);
    const firedAt = new Date(Date.parse(m.starts_at) - 10 * MIN).toISOString();
    const [end] = pythonQuietEnds([{ zone, start: (end0 + 1430) % 1440, end: end0, at: firedAt }]);
    assert.equal(Date.parse(end), boundary, 'the window ends at that minute');
    assert.ok(end, 'the fire is inside the window');
    // The fire is up to a minute away (the next whole minute): wait for it, then the bound.
    const [waiting] = await deliveriesWhen(m.id, (xs) => xs.length === 1, fireAt - Date.now() + BOUND_MS);
    assert.equal(waiting.status, 'pending', JSON.stringify(waiting));
    assert.equal(Date.parse(waiting.next_attempt_at), Date.parse(end), 'due at the window\'s end, by zoneinfo');
    assert.equal(mailTo('eve@example.com').length, 0, 'nothing inside quiet hours');
    const [done] = await deliveriesWhen(m.id, (xs) => xs[0].status === 'delivered', boundary - Date.now() + BOUND_MS);
    assert.ok(Date.parse(done.delivered_at) >= Date.parse(end), `${done.delivered_at} after ${end}`);
    assert.equal(mailTo('eve@example.com').length, 1);
});

test('a quiet window\'s end across DST changes is zoneinfo\'s (the function the fire uses)', async () => {
    const H = 60;
    const cases = [
        { zone: 'Europe/Berlin', start: 22 * H, end: 7 * H, at: '2026-03-28T21:30:00Z' }, // over the spring change
        { zone: 'Europe/Berlin', start: 22 * H, end: 7 * H, at: '2026-10-24T20:30:00Z' }, // over the autumn change
        { zone: 'Europe/Berlin', start: 22 * H, end: 7 * H, at: '2026-03-29T03:30:00Z' }, // just after the gap
        { zone: 'Europe/Berlin', start: 1 * H, end: 2 * H + 30, at: '2026-03-29T00:15:00Z' }, // end in the gap
        { zone: 'Europe/Berlin', start: 1 * H, end: 2 * H + 30, at: '2026-10-25T00:15:00Z' }, // end in the overlap
        { zone: 'Europe/Berlin', start: 22 * H, end: 7 * H, at: '2026-03-29T10:00:00Z' }, // outside
        { zone: 'America/New_York', start: 23 * H, end: 6 * H, at: '2026-03-08T04:30:00Z' },
        { zone: 'America/New_York', start: 23 * H, end: 6 * H, at: '2026-11-01T03:30:00Z' },
        { zone: 'Australia/Sydney', start: 21 * H, end: 8 * H, at: '2026-04-04T10:30:00Z' },
        { zone: 'Australia/Sydney', start: 21 * H, end: 8 * H, at: '2026-10-03T11:30:00Z' },
        { zone: 'Australia/Lord_Howe', start: 22 * H, end: 7 * H, at: '2026-04-04T11:00:00Z' }, // a half-hour change
        { zone: 'Asia/Kolkata', start: 9 * H, end: 17 * H, at: '2026-12-03T05:00:00Z' }, // a daytime window
        { zone: 'Asia/Kolkata', start: 9 * H, end: 17 * H, at: '2026-12-03T12:00:00Z' }, // its end is not in it
    ];
    const want = pythonQuietEnds(cases);
    assert.equal(want.filter((x) => x === null).length, 2, 'two instants outside their window');
    for (const [i, c] of cases.entries()) {
        assert.equal(await sqlQuietEnd(c), want[i], JSON.stringify(c));
    }
});

test('a snooze brings the reminder again once, to that participant alone, as a new occurrence', async () => {
    const subs = { sam: ps.subscribe(), tom: ps.subscribe() };
    for (const [id, sub] of Object.entries(subs)) {
        const r = await srv.req('POST', '/v1/push/subscriptions', { key: await tokenOf(id, 'push'), json: sub.json });
        assert.equal(r.status, 201, r.text);
    }
    const m = await dueSoon([{ id: 'sam', email: 'sam@example.com' }, { id: 'tom', email: 'tom@example.com' }],
        ['email', 'push', 'stream'], 10 * MIN);
    await deliveriesWhen(m.id, (xs) => xs.filter((d) => d.status === 'delivered').length === 5);
    const samTok = await tokenOf('sam');
    const inbox = await srv.req('GET', '/v1/me/notifications', { key: samTok });
    const item = inbox.json.items.find((x) => x.data.meeting.id === m.id);
    assert.ok(item, inbox.text);
    const snooze = (tok, json, seq = item.seq) => srv.req('POST', `/v1/me/notifications/${seq}/snooze`, { key: tok, json });

    // Bad bodies and other readers change nothing.
    for (const body of [{}, [], { minutes: '5' }, { minutes: 1.5 }, { minutes: 5, until: 1 }]) {
        const r = await snooze(samTok, body);
        assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
        assert.equal(r.json.code, 'validation');
    }
    for (const minutes of [0, -1, 121, 100000]) {
        const r = await snooze(samTok, { minutes });
        assert.equal(r.status, 422, `${minutes}: ${r.text}`);
        assert.equal(r.json.code, 'snooze_out_of_range');
    }
    const stranger = await snooze(await tokenOf('uma'), { minutes: 1 });
    assert.equal(stranger.status, 404, 'another participant\'s item');
    assert.equal(stranger.json.code, 'notification_not_found');
    assert.equal((await snooze(samTok, { minutes: 1 }, item.seq + 1000000)).status, 404);
    const late = await snooze(samTok, { minutes: 10 });
    assert.equal(late.status, 409, 'it would end at the meeting\'s start');
    assert.equal(late.json.code, 'meeting_started');
    assert.equal((await deliveriesWhen(m.id, () => true)).length, 5, 'nothing written');

    const before = Date.now();
    const r = await snooze(samTok, { minutes: 1 });
    assert.equal(r.status, 202, r.text);
    const due = Date.parse(r.json.due_at);
    assert.ok(due >= before + MIN && due <= Date.now() + MIN, r.text);
    assert.equal(r.json.deliveries, 2, 'sam\'s email and push');
    const first = subs.sam.got[0].message.id;
    assert.notEqual(r.json.occurrence_id, first, 'a new occurrence');
    const waiting = (await deliveriesWhen(m.id, (xs) => xs.length === 7)).filter((d) => d.status === 'pending');
    assert.deepEqual(waiting.map((d) => `${d.channel}:${d.recipient}`).sort(), ['email:sam', 'push:sam']);
    for (const d of waiting) {
        assert.equal(Date.parse(d.next_attempt_at), due, JSON.stringify(d));
    }
    assert.equal(mailTo('sam@example.com').length, 1, 'not before it is due');
    // The shortest snooze is a minute: rather than wait it out, the rows' next attempt is brought
    // forward to a second from now in the database (their fire time, hence their occurrence id,
    // stays). The workers' claim, which reads that column, sends them then and not before.
    const soon = Number(await h.sql(`UPDATE outbox SET next_attempt_at = date_trunc('milliseconds', now() + interval '1 second')
        WHERE meeting_id = '${m.id}' AND status = 'pending' RETURNING (extract(epoch FROM next_attempt_at) * 1000)::bigint`)
        .then((v) => v.split('\n')[0]));
    await sleep(300);
    assert.equal(mailTo('sam@example.com').length, 1, 'not before its next attempt');

    const done = await deliveriesWhen(m.id, (xs) => xs.filter((d) => d.status === 'delivered').length === 7,
        soon - Date.now() + BOUND_MS);
    for (const d of done.filter((x) => x.recipient === 'sam' && x.channel !== 'stream')) {
        assert.equal(d.status, 'delivered', JSON.stringify(done));
    }
    assert.ok(Date.now() >= soon, 'never early');
    await sleep(1000); // nothing twice
    const mails = mailTo('sam@example.com');
    assert.equal(mails.length, 2);
    assert.notEqual(header(mails[0], 'Message-ID'), header(mails[1], 'Message-ID'));
    assert.ok(header(mails[1], 'Message-ID').startsWith(`<${r.json.occurrence_id}.`), header(mails[1], 'Message-ID'));
    assert.deepEqual(subs.sam.got.map((x) => x.message.id), [first, r.json.occurrence_id]);
    assert.equal(mailTo('tom@example.com').length, 1, 'the others get it once');
    assert.equal(subs.tom.got.length, 1);
    // The inbox keeps the one item it had.
    const after = await srv.req('GET', '/v1/me/notifications', { key: samTok });
    assert.equal(after.json.items.filter((x) => x.data.meeting.id === m.id).length, 1, after.text);
});

// A start on a whole second, ms from now.
function startIn(ms) {
    const s = new Date(Date.now() + ms);
    s.setUTCMilliseconds(0);
    return s.toISOString();
}

async function createMeeting(json) {
    const r = await srv.req('POST', '/v1/meetings', { key, json: { title: 'Own', ...json } });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

async function putFor(id, json) {
    const r = await srv.req('PUT', `/v1/participants/${encodeURIComponent(id)}/preferences`, { key, json });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

async function untilTrue(what, pred, bound) {
    const end = Date.now() + bound;
    while (!(await pred())) {
        assert.ok(Date.now() < end, `within ${bound} ms: ${what}`);
        await sleep(200);
    }
}

const person = (id) => ({ id, email: `${id}@example.com` });
const emailsOf = async (m) => (await srv.req('GET', `/v1/meetings/${m.id}/deliveries`, { key })).json.items
    .filter((d) => d.channel === 'email');

test('own reminders fire at their own time to that participant alone, re-planned on every change; the others get the meeting\'s', async () => {
    // Every meeting starts a minute and a bit from now: each own offset of one minute fires in a
    // few seconds, each meeting's reminder (0 minutes before) at the start.
    const own1 = [{ minutes_before: 1, channels: ['stream', 'email'] }]; // in section 8's order
    // ann set hers before the meeting existed: planned at its create.
    const annTok = await tokenOf('own-ann');
    const put = await putMine(annTok, { reminders: own1 });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.json.reminders, own1);
    assert.deepEqual((await getMine(annTok)).reminders, own1);
    // gus too (with his browser token: the tenant does not know him yet), for a daily series.
    assert.equal((await putMine(await tokenOf('own-gus'), { reminders: [{ minutes_before: 1, channels: ['email'] }] })).status, 200);
    const starts = startIn(MIN + 2 * LEAD_MS);
    const meetingOnes = [{ minutes_before: 0, channels: ['email', 'stream'] }];
    const single = await createMeeting({ starts_at: starts, participants: [person('own-ann'), person('own-ben')], reminders: meetingOnes });
    const series = await createMeeting({ starts_at: starts, time_zone: 'UTC', participants: [person('own-gus'), person('own-hal')],
        reminders: meetingOnes, recurrence: { rrule: 'FREQ=DAILY;COUNT=3' } });
    // dan's change re-plans: his first offset (at the start) is replaced by an earlier one.
    const replan = await createMeeting({ starts_at: starts, participants: [person('own-dan'), person('own-eli')], reminders: meetingOnes });
    await putFor('own-dan', { reminders: [{ minutes_before: 0, channels: ['email'] }] });
    await putFor('own-dan', { reminders: [{ minutes_before: 1, channels: ['email'] }] });
    // fay is removed from the meeting before her own reminder's time: it goes with her.
    const removal = await createMeeting({ starts_at: starts, participants: [person('own-fay'), person('own-gil')], reminders: meetingOnes });
    await putFor('own-fay', { reminders: [{ minutes_before: 1, channels: ['email'] }] });
    const pendingOf = async (id) => Number(await h.sql(`SELECT count(*) FROM reminders WHERE participant = '${id}' AND status = 'pending'`));
    assert.equal(await pendingOf('own-fay'), 1, 'planned at the put');
    const patched = await srv.req('PATCH', `/v1/meetings/${removal.id}`, { key, json: { participants: [person('own-gil')] } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(await pendingOf('own-fay'), 0, 'gone with her');
    assert.equal(await pendingOf('own-dan'), 1, 'one own reminder of dan\'s is left, the new one');
    assert.equal(await pendingOf('own-gus'), 3, 'one per occurrence of the series');
    for (const m of [single, series, replan]) {
        const got = await srv.req('GET', `/v1/meetings/${m.id}`, { key });
        assert.deepEqual(got.json.reminders.map((r) => r.minutes_before), [0], 'a meeting shows its own reminders alone');
    }

    // The own offsets fire first, each to its participant alone.
    const early = ['own-ann', 'own-gus', 'own-dan'];
    await untilTrue('the own reminders\' email', () => early.every((id) => mailTo(`${id}@example.com`).length === 1),
        Date.parse(starts) - MIN - Date.now() + BOUND_MS);
    assert.ok(Date.now() < Date.parse(starts) - 10000, 'well before the meetings\' own reminders are due');
    for (const id of ['own-ben', 'own-hal', 'own-eli', 'own-gil', 'own-fay']) {
        assert.equal(mailTo(`${id}@example.com`).length, 0, `${id} gets nothing yet`);
    }
    // The meetings' reminders reach the others, never those with own reminders.
    const late = ['own-ben', 'own-hal', 'own-eli', 'own-gil'];
    await untilTrue('the meetings\' email', () => late.every((id) => mailTo(`${id}@example.com`).length === 1),
        Date.parse(starts) - Date.now() + BOUND_MS);
    await sleep(1500); // nothing late, nothing twice
    for (const id of [...early, ...late]) {
        assert.equal(mailTo(`${id}@example.com`).length, 1, `${id}: one email`);
    }
    assert.equal(mailTo('own-fay@example.com').length, 0, 'fay: removed, nothing');

    // Each own fire is an occurrence of its own: its own row, its own Message-ID.
    const single_ = await emailsOf(single);
    const ann = single_.find((d) => d.recipient === 'own-ann');
    const ben = single_.find((d) => d.recipient === 'own-ben');
    assert.equal(single_.length, 2, JSON.stringify(single_));
    assert.notEqual(ann.reminder_id, ben.reminder_id);
    assert.ok(Date.parse(ann.delivered_at) < Date.parse(starts) - 10000, JSON.stringify(ann));
    assert.notEqual(header(mailTo('own-ann@example.com')[0], 'Message-ID'), header(mailTo('own-ben@example.com')[0], 'Message-ID'));
    assert.deepEqual((await emailsOf(replan)).map((d) => d.recipient).sort(), ['own-dan', 'own-eli']);
    // The inbox: ann has her own item alone (its reminder hers), ben the meeting's.
    const inboxOf = async (tok, m) => (await srv.req('GET', '/v1/me/notifications', { key: tok })).json.items
        .filter((x) => x.data.meeting.id === m.id);
    const annItems = await inboxOf(annTok, single);
    assert.equal(annItems.length, 1, JSON.stringify(annItems));
    assert.equal(annItems[0].data.reminder.minutes_before, 1, JSON.stringify(annItems[0]));
    const benItems = await inboxOf(await tokenOf('own-ben'), single);
    assert.equal(benItems.length, 1, JSON.stringify(benItems));
    assert.equal(benItems[0].data.reminder.minutes_before, 0);
    // The series' later occurrences keep gus's own reminders pending.
    assert.equal(await pendingOf('own-gus'), 2);

    // Own reminders set back to none: the meeting's apply to him again (the series' next ones).
    await putFor('own-gus', { reminders: null });
    assert.equal(await pendingOf('own-gus'), 0);
});

test('bad own reminders change nothing: neither the preferences nor the planned rows', async () => {
    const m = await createMeeting({ starts_at: startIn(HOUR), participants: [person('own-ivy')] });
    const kept = await putFor('own-ivy', { reminders: [{ minutes_before: 30, channels: ['push'] }] });
    const rows = () => h.sql("SELECT string_agg(minutes_before || ':' || channels || ':' || status, ',' ORDER BY id) FROM reminders WHERE participant = 'own-ivy'");
    const before = await rows();
    assert.equal(before, '30:4:pending');
    for (const body of [{ reminders: [{ minutes_before: 10, channels: ['webhook'] }] },
        { reminders: [{ minutes_before: 10 }, { minutes_before: 10 }] }, { reminders: [{ minutes_before: 10 }], extra: 1 }]) {
        const r = await srv.req('PUT', '/v1/participants/own-ivy/preferences', { key, json: body });
        assert.equal(r.status, 400, r.text);
        assert.deepEqual((await srv.req('GET', '/v1/participants/own-ivy/preferences', { key })).json, kept);
        assert.equal(await rows(), before);
    }
    const del = await srv.req('DELETE', `/v1/meetings/${m.id}`, { key });
    assert.equal(del.status, 204, del.text);
    assert.equal(await rows(), '30:4:cancelled', 'a deleted meeting cancels them');
});
