// email.test.mjs -- the email channel against a real SMTP server (tests/api/smtp.mjs: Debian's
// python3-aiosmtpd on loopback), each message parsed by parsers that are not tocsin's (Python's
// email package for MIME, python3-icalendar for the .ics): one message per participant with an
// address, the subject's local time, the calendar event; control and format characters (bidi
// overrides, U+2028) in a name or title arriving as spaces; the server down while the reminder
// fires, then up (delivered once); a 451 answer retried; a 550 answer failed at once; channels
// honoured (an email-only reminder calls no webhook, a webhook-only one sends no email); no email
// rows while TOCSIN_SMTP_URL is unset; browser tokens make no email unless TOCSIN_BROWSER_EMAIL=1
// (adversary N7: one POST of a signed-in page mailed 250 messages to addresses of its choosing).
// Hostile text and DST edge cases are checked without a
// server by ctest's property_mail (tests/property/mail_check.py).
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { harness, test, waitFor, sleep, MIN, deliveriesWhen as harnessDeliveriesWhen } from './harness.mjs';
import { smtpServer, header } from './smtp.mjs';
import { mintToken } from './sse.mjs';

const LEAD_MS = 1500;
const BOUND_MS = 20000; // generous: a delivery (or its retries) under ASan on a shared machine
const FROM = 'reminders@tocsin.test';

const h = await harness('email');
// A server without SMTP on a database of its own: a replica with SMTP on the same database could
// fire its reminders (and write email rows).
const hPlain = await harness('email_plain');
let smtp;
let srv;
let key;

before(async () => {
    smtp = await smtpServer();
    srv = await h.startServer({
        TOCSIN_SMTP_URL: smtp.url,
        TOCSIN_SMTP_FROM: FROM,
        TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
        TOCSIN_DELIVERY_RETRY_BASE_MS: '200',
    });
    key = await srv.createKey('email');
});
after(() => smtp.cleanup());

// A meeting whose reminder (channels as given) fires LEAD_MS from now.
async function dueSoon(k, fields, channels = ['email']) {
    const starts = new Date(Date.now() + LEAD_MS + 5 * MIN);
    starts.setUTCMilliseconds(0);
    const r = await srv.req('POST', '/v1/meetings', {
        key: k,
        json: { title: 'Mail', starts_at: starts.toISOString(), reminders: [{ minutes_before: 5, channels }], ...fields },
    });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

const deliveriesWhen = (id, pred) => harnessDeliveriesWhen(srv, key, id, pred, BOUND_MS);

const to = (addr) => (m) => m.rcpt_tos.length === 1 && m.rcpt_tos[0] === addr;

function localHHMM(iso, zone) {
    return new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
        .format(new Date(iso));
}

test('one message per participant with an address, well formed, with the local time and an .ics', async () => {
    const m = await dueSoon(key, {
        title: 'Quarterly review', time_zone: 'America/New_York', location: 'Room 4',
        participants: [
            { id: 'ada', name: 'Ada Lovelace', email: 'ada@example.com' },
            { id: 'bob', email: 'bob@example.com' },
            { id: 'cy', name: 'Cy (no address)' },
        ],
    });
    assert.ok(await waitFor(() => smtp.messages().filter((x) => x.rcpt_tos.some((a) => a.endsWith('@example.com'))).length >= 2, BOUND_MS),
        `messages: ${JSON.stringify(smtp.messages().map((x) => x.rcpt_tos))}`);
    await sleep(500); // a third would be a bug: give it the chance to show
    const mine = smtp.messages().filter((x) => ['ada@example.com', 'bob@example.com'].includes(x.rcpt_tos[0]));
    assert.equal(mine.length, 2, 'one each, none for the participant without an address');
    const hhmm = localHHMM(m.starts_at, 'America/New_York');
    for (const [addr, name] of [['ada@example.com', 'Ada Lovelace'], ['bob@example.com', null]]) {
        const msg = mine.find(to(addr));
        assert.ok(msg, addr);
        assert.deepEqual(msg.defects, [], `${addr}: MIME defects`);
        assert.equal(msg.mail_from, FROM);
        assert.equal(header(msg, 'From'), FROM);
        assert.equal(header(msg, 'To'), name ? `${name} <${addr}>` : addr);
        assert.equal(header(msg, 'Subject'), `Reminder: Quarterly review at ${hhmm} America/New_York`);
        assert.match(header(msg, 'Message-ID'), /^<[^<>@\s]+@tocsin\.test>$/);
        assert.equal(header(msg, 'Auto-Submitted'), 'auto-generated');
        assert.equal(msg.content_type, 'multipart/mixed');
        assert.deepEqual(msg.parts.map((p) => p.content_type), ['text/plain', 'text/calendar']);
        assert.match(msg.parts[0].text, /Quarterly review/);
        assert.match(msg.parts[0].text, /Room 4/);
        assert.equal(msg.parts[1].filename, 'meeting.ics');
        assert.equal(msg.calendar.method, 'PUBLISH');
        assert.equal(msg.calendar.events.length, 1);
        const ev = msg.calendar.events[0];
        assert.equal(ev.summary, 'Quarterly review');
        assert.equal(ev.location, 'Room 4');
        assert.equal(Date.parse(ev.dtstart), Date.parse(m.starts_at));
    }
    assert.notEqual(header(mine[0], 'Message-ID'), header(mine[1], 'Message-ID'));
    const rows = await deliveriesWhen(m.id, (items) => items.filter((d) => d.status === 'delivered').length === 2);
    assert.deepEqual(rows.map((d) => [d.channel, d.recipient, d.status]).sort(),
        [['email', 'ada', 'delivered'], ['email', 'bob', 'delivered']]);
});

// Control and format characters that reorder, hide or break what a mail program shows: C0, DEL,
// C1 (NEL), the line and paragraph separators, bidi embeddings, overrides and isolates, LRM/RLM,
// zero-width characters, the BOM.
const SPOOFING = /[\u0000-\u001f\u007f-\u009f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/u;

test('bidi overrides, line separators and other format characters in a name or title come back as spaces', async () => {
    const name = 'Eve\u2028Bcc: evil@evil.example\u2029\u202Egnp.exe\u202C \u2066x\u2069\u0085\u200B\u200F\uFEFFend';
    const title = 'Pay\u202Eyrots\u202C \u2028now\u0085';
    await dueSoon(key, { title, participants: [{ id: 'eve', name, email: 'eve@example.com' }] });
    assert.ok(await waitFor(() => smtp.messages().some(to('eve@example.com')), BOUND_MS), 'no message');
    const msg = smtp.messages().find(to('eve@example.com'));
    assert.deepEqual(msg.defects, []);
    const rcpt = header(msg, 'To');
    const subject = header(msg, 'Subject');
    assert.doesNotMatch(rcpt, SPOOFING, JSON.stringify(rcpt));
    assert.doesNotMatch(subject, SPOOFING, JSON.stringify(subject));
    // Blanked, not dropped: the words stay apart, and the address is the participant's. (A reader
    // may put a space between two encoded-words of a display name, so the rest is compared
    // without white space.)
    assert.match(rcpt, /Eve +Bcc/, JSON.stringify(rcpt));
    assert.ok(rcpt.replace(/\s+/g, '').includes('EveBcc:evil@evil.examplegnp.exexend'), JSON.stringify(rcpt));
    assert.match(rcpt, /<eve@example\.com>$/);
    assert.match(subject, /^Reminder: Pay yrots +now +at \d\d:\d\d UTC$/, JSON.stringify(subject));
    assert.deepEqual(msg.rcpt_tos, ['eve@example.com']);
});

test('the SMTP server down while the reminder fires, then up: delivered once, after retries', async () => {
    await smtp.stop();
    try {
        const m = await dueSoon(key, { participants: [{ id: 'dora', email: 'dora@example.net' }] });
        const tried = await deliveriesWhen(m.id, (items) => items.length === 1 && items[0].attempts >= 2);
        assert.equal(tried[0].status, 'pending', JSON.stringify(tried[0]));
        assert.match(tried[0].last_error ?? '', /SMTP|connect/i, JSON.stringify(tried[0]));
        await smtp.start();
        const done = await deliveriesWhen(m.id, (items) => items[0].status === 'delivered');
        assert.ok(done[0].attempts > 2, JSON.stringify(done[0]));
        await sleep(1000);
        assert.equal(smtp.messages().filter(to('dora@example.net')).length, 1);
    } finally {
        if (!smtp.child) await smtp.start();
    }
});

test('a 451 answer is retried; a 550 answer fails the row at once', async () => {
    try {
        await smtp.stop();
        await smtp.start({ refuse: '451' });
        const later = await dueSoon(key, { participants: [{ id: 'eli', email: 'eli@example.net' }] });
        const refused = await deliveriesWhen(later.id, (items) => items[0]?.attempts >= 2);
        assert.equal(refused[0].status, 'pending');
        assert.equal(refused[0].last_status, 451, JSON.stringify(refused[0]));
        await smtp.stop();
        await smtp.start();
        const sent = await deliveriesWhen(later.id, (items) => items[0].status === 'delivered');
        assert.equal(sent[0].status, 'delivered', JSON.stringify(sent[0]));
        assert.equal(smtp.messages().filter(to('eli@example.net')).length, 1);

        await smtp.stop();
        await smtp.start({ refuse: '550' });
        const never = await dueSoon(key, { participants: [{ id: 'fay', email: 'fay@example.net' }] });
        const failed = await deliveriesWhen(never.id, (items) => items[0]?.status === 'failed');
        assert.equal(failed[0].attempts, 1, JSON.stringify(failed[0]));
        assert.equal(failed[0].last_status, 550);
        await smtp.stop();
        await smtp.start();
        await sleep(1500);
        assert.equal(smtp.messages().filter(to('fay@example.net')).length, 0, 'a failed row is not sent later');
    } finally {
        if (!smtp.child) await smtp.start();
    }
});

test('channels honoured: email only calls no webhook; webhook only sends no email', async (t) => {
    const calls = [];
    const rx = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => { calls.push(req.headers['webhook-id']); res.writeHead(204).end(); });
    });
    await new Promise((r) => rx.listen(0, '127.0.0.1', r));
    t.after(() => new Promise((r) => { rx.closeAllConnections(); rx.close(() => r()); }));
    const k = await srv.createKey('email-channels');
    const w = await srv.req('POST', '/v1/webhooks', { key: k, json: { url: `http://127.0.0.1:${rx.address().port}/h` } });
    assert.equal(w.status, 201, w.text);
    const people = { participants: [{ id: 'gus', email: 'gus@example.org' }] };
    const emailOnly = await dueSoon(k, people, ['email']);
    const hookOnly = await dueSoon(k, { ...people, title: 'Hook' }, ['webhook']);
    const rowsOf = async (m, n) => {
        const r = await waitFor(async () => (await srv.req('GET', `/v1/meetings/${m.id}/deliveries`, { key: k })).json.items.length >= n, BOUND_MS);
        assert.ok(r, `no deliveries for ${m.title}`);
        return (await srv.req('GET', `/v1/meetings/${m.id}/deliveries`, { key: k })).json.items;
    };
    const a = await rowsOf(emailOnly, 1);
    const b = await rowsOf(hookOnly, 1);
    assert.ok(await waitFor(() => calls.length >= 1 && smtp.messages().filter(to('gus@example.org')).length >= 1, BOUND_MS));
    await sleep(1000);
    assert.deepEqual(a.map((d) => [d.channel, d.recipient]), [['email', 'gus']]);
    assert.deepEqual(b.map((d) => [d.channel, d.webhook_id]), [['webhook', w.json.id]]);
    assert.equal(calls.length, 1, 'one webhook call, for the webhook-only reminder');
    const mails = smtp.messages().filter(to('gus@example.org'));
    assert.equal(mails.length, 1, 'one email, for the email-only reminder');
    assert.match(header(mails[0], 'Subject'), /^Reminder: Mail at /);
});

test('without TOCSIN_SMTP_URL an email reminder writes no email row', async () => {
    const plain = await hPlain.startServer({});
    const k = await plain.createKey('no-smtp');
    const starts = new Date(Date.now() + LEAD_MS + 5 * MIN).toISOString();
    const r = await plain.req('POST', '/v1/meetings', {
        key: k,
        json: { title: 'None', starts_at: starts, participants: [{ id: 'hal', email: 'hal@example.org' }], reminders: [{ minutes_before: 5, channels: ['email'] }] },
    });
    assert.equal(r.status, 201, r.text);
    assert.ok(await waitFor(async () => (await plain.req('GET', `/v1/meetings/${r.json.id}`, { key: k })).json.reminders[0].status === 'fired', BOUND_MS));
    await sleep(500);
    assert.deepEqual((await plain.req('GET', `/v1/meetings/${r.json.id}/deliveries`, { key: k })).json.items, []);
    await plain.stop();
});

// What the email channel a browser token would use looks like: refused as 403
// browser_email_disabled, naming the field, with nothing created or sent.
function assertNoBrowserEmail(r, field) {
    assert.equal(r.status, 403, r.text);
    assert.equal(r.json.code, 'browser_email_disabled');
    assert.match(r.contentType, /^application\/problem\+json/);
    assert.equal(r.json.errors[0].field, field, JSON.stringify(r.json.errors));
    assert.match(r.json.detail, /TOCSIN_BROWSER_EMAIL/);
}

test('a browser token makes no email by default: the email channel and new mailed addresses are 403', async () => {
    const k = await srv.createKey('email-browser');
    const tok = (await mintToken(srv, k, { sub: 'page-user', scope: 'meetings:read meetings:write' })).token;
    const outside = Array.from({ length: 50 }, (_, i) => ({ id: `x${i}`, email: `victim${i}@phish.test` }));
    const before = await srv.req('GET', '/v1/meetings', { key: k });
    // The adversary's POST: 50 outside addresses, five email reminders firing now.
    const starts = new Date(Date.now() + LEAD_MS + 5 * MIN);
    starts.setUTCMilliseconds(0);
    const phish = await srv.req('POST', '/v1/meetings', { key: tok, json: {
        title: 'Your account is locked', starts_at: starts.toISOString(), participants: outside,
        reminders: [5, 4, 3, 2, 1].map((m) => ({ minutes_before: m, channels: ['email'] })),
    } });
    assertNoBrowserEmail(phish, 'reminders');
    assert.deepEqual((await srv.req('GET', '/v1/meetings', { key: k })).json.items, before.json.items, 'nothing created');
    // Addresses are data: without the email channel the meeting is made, and mails nobody.
    const quiet = await dueSoon(tok, { participants: [{ id: 'q1', email: 'quiet@phish.test' }] }, ['stream']);
    // A meeting the tenant's server made with email, organized by the page's user: the user may
    // change it, but neither add a mailed address nor the email channel to another reminder.
    const made = await srv.req('POST', '/v1/meetings', { key: k, json: {
        title: 'Server-made', starts_at: new Date(Date.now() + 3600e3).toISOString(), organizer_id: 'page-user',
        participants: [{ id: 'ann', email: 'ann@example.com' }],
        reminders: [{ minutes_before: 10, channels: ['email'] }, { minutes_before: 5 }],
    } });
    assert.equal(made.status, 201, made.text);
    const path = `/v1/meetings/${made.json.id}`;
    const renamed = await srv.req('PATCH', path, { key: tok, json: { title: 'Renamed by its organizer' } });
    assert.equal(renamed.status, 200, renamed.text);
    assertNoBrowserEmail(await srv.req('PATCH', path, { key: tok, json: {
        participants: [{ id: 'ann', email: 'ann@example.com' }, { id: 'eve', email: 'eve@phish.test' }],
    } }), 'participants[1].email');
    assertNoBrowserEmail(await srv.req('PATCH', path, { key: tok, json: {
        reminders: [{ minutes_before: 10, channels: ['email'] }, { minutes_before: 5, channels: ['email'] }],
    } }), 'reminders');
    assertNoBrowserEmail(await srv.req('PUT', path, { key: tok, json: {
        title: 'Swapped', starts_at: made.json.starts_at, participants: [{ id: 'ann', email: 'eve@phish.test' }],
        reminders: [{ minutes_before: 10, channels: ['email'] }],
    } }), 'participants[0].email');
    const dropped = await srv.req('PATCH', path, { key: tok, json: { participants: [], reminders: [{ minutes_before: 5 }] } });
    assert.equal(dropped.status, 200, 'removing addresses and the email channel is fine');
    // The same POST with an API key is the tenant's server: it may mail anyone.
    const server = await dueSoon(k, { participants: [{ id: 'srv1', email: 'server-sent@example.com' }] });
    assert.ok(await waitFor(() => smtp.messages().some(to('server-sent@example.com')), BOUND_MS), 'the API key\'s email went');
    await waitFor(async () => (await srv.req('GET', `/v1/meetings/${quiet.id}`, { key: k })).json.reminders[0].status === 'fired', BOUND_MS);
    await sleep(500);
    assert.equal(smtp.messages().filter((m) => m.rcpt_tos.some((a) => a.endsWith('@phish.test'))).length, 0, 'no mail to any address a token named');
    assert.ok(server.id);
});

test('TOCSIN_BROWSER_EMAIL=1: a browser token may use the email channel', async () => {
    const open = await h.startServer({
        TOCSIN_SMTP_URL: smtp.url,
        TOCSIN_SMTP_FROM: FROM,
        TOCSIN_BROWSER_EMAIL: '1',
    });
    try {
        const k = await open.createKey('email-browser-on');
        const tok = (await mintToken(open, k, { sub: 'page-user', scope: 'meetings:write' })).token;
        const starts = new Date(Date.now() + LEAD_MS + 5 * MIN);
        starts.setUTCMilliseconds(0);
        const r = await open.req('POST', '/v1/meetings', { key: tok, json: {
            title: 'Invited by a page', starts_at: starts.toISOString(),
            participants: [{ id: 'inv', email: 'invited@example.com' }],
            reminders: [{ minutes_before: 5, channels: ['email'] }],
        } });
        assert.equal(r.status, 201, r.text);
        assert.deepEqual(r.json.reminders[0].channels, ['email']);
        assert.ok(await waitFor(() => smtp.messages().some(to('invited@example.com')), BOUND_MS), 'mailed');
    } finally {
        await open.stop();
    }
});
