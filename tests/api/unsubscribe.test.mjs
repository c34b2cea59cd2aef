// unsubscribe.test.mjs -- one-click unsubscribe (DESIGN section 13, RFC 8058, RFC 2369) against
// the suite's real SMTP server (smtp.mjs), every message read by Python's email package: each
// email carries List-Unsubscribe with a link under TOCSIN_PUBLIC_URL and List-Unsubscribe-Post;
// a GET of the link shows a page with one form and changes nothing; a POST with the one-click body
// (form-encoded, as mail programs send it, or multipart) turns that participant's email off and
// keeps the rest of their preferences, answering the same page every time; the next reminder's
// email to them is `skipped` (`preference`) while other channels and participants still get it;
// an altered, cut, foreign or missing token, a wrong body or content type is refused with a 4xx
// and changes nothing. The token is made here too, by this file's own code from the layout
// src/domain/unsub.h documents: one signed with the previous secret (a rotation) still works.
// Without TOCSIN_PUBLIC_URL emails carry no link and the endpoint is off.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { harness, test, waitFor, sleep, MIN, deliveriesWhen as harnessDeliveriesWhen } from './harness.mjs';
import { smtpServer, header } from './smtp.mjs';

const LEAD_MS = 1500;
const BOUND_MS = 20000; // generous: a delivery under ASan on a shared machine
const SECRET = 'unsubscribe-secret-of-this-test-0123456789';
const PREVIOUS = 'the-secret-it-replaced-9876543210-abcdefgh';
const ONE_CLICK = 'List-Unsubscribe=One-Click';
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

const h = await harness('unsubscribe');
const hOff = await harness('unsubscribe_off');
let smtp;
let srv;
let key;
let publicUrl;

before(async () => {
    smtp = await smtpServer();
    srv = await h.newServer({
        TOCSIN_UNSUBSCRIBE_SECRET: SECRET,
        TOCSIN_UNSUBSCRIBE_SECRET_PREVIOUS: PREVIOUS,
        TOCSIN_SMTP_URL: smtp.url,
        TOCSIN_SMTP_FROM: 'reminders@tocsin.test',
        TOCSIN_DELIVERY_RETRY_BASE_MS: '200',
    });
    // A public name other than the listening address: the links must be built from the setting.
    publicUrl = `http://localhost:${srv.port}`;
    srv.env.TOCSIN_PUBLIC_URL = `${publicUrl}/`;
    await srv.start();
    key = await srv.createKey('unsub');
});
after(() => smtp.cleanup());

// A meeting whose one reminder (channels as given) fires LEAD_MS from now.
async function dueSoon(s, k, participants, channels = ['email']) {
    const starts = new Date(Date.now() + LEAD_MS + 5 * MIN);
    starts.setUTCMilliseconds(0);
    const r = await s.req('POST', '/v1/meetings', {
        key: k,
        json: { title: 'Unsub', starts_at: starts.toISOString(), participants, reminders: [{ minutes_before: 5, channels }] },
    });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

const deliveriesWhen = (id, pred) => harnessDeliveriesWhen(srv, key, id, pred, BOUND_MS);

const mailTo = (addr) => smtp.messages().filter((m) => m.rcpt_tos.includes(addr));

async function messageTo(addr, count = 1) {
    assert.ok(await waitFor(() => mailTo(addr).length >= count, BOUND_MS), `no message to ${addr}`);
    return mailTo(addr)[count - 1];
}

// The link of a message's List-Unsubscribe, whitespace inside the brackets ignored (RFC 2369).
function linkOf(msg) {
    const v = header(msg, 'List-Unsubscribe');
    assert.ok(v, `no List-Unsubscribe in ${JSON.stringify(msg.headers)}`);
    const m = /^<([^<>]+)>$/.exec(v.trim());
    assert.ok(m, `List-Unsubscribe is not one bracketed URL: ${v}`);
    return m[1].replace(/\s+/g, '');
}

// The path and query of a link under publicUrl, to send to the server itself.
function pathOf(link) {
    assert.ok(link.startsWith(`${publicUrl}/v1/unsubscribe?t=`), link);
    return link.slice(publicUrl.length);
}

// A token by the layout of src/domain/unsub.h, made without tocsin: format 1, tenant and issue
// time as 8 big-endian bytes, the participant's UTF-8, 16 bytes of HMAC-SHA256 of a label and
// all that.
function makeToken(secret, tenantId, participant, issuedS = Math.floor(Date.now() / 1000)) {
    const head = Buffer.alloc(17);
    head[0] = 1;
    head.writeBigUInt64BE(BigInt(tenantId), 1);
    head.writeBigUInt64BE(BigInt(issuedS), 9);
    const raw = Buffer.concat([head, Buffer.from(participant, 'utf8')]);
    const mac = crypto.createHmac('sha256', secret).update('tocsin-unsubscribe').update(raw).digest().subarray(0, 16);
    return Buffer.concat([raw, mac]).toString('base64url');
}

function readToken(token) {
    const raw = Buffer.from(token, 'base64url');
    return {
        format: raw[0],
        tenant: raw.readBigUInt64BE(1),
        issued: Number(raw.readBigUInt64BE(9)),
        participant: raw.subarray(17, raw.length - 16).toString('utf8'),
    };
}

async function prefsOf(id) {
    const r = await srv.req('GET', `/v1/participants/${encodeURIComponent(id)}/preferences`, { key });
    assert.equal(r.status, 200, r.text);
    return r.json;
}

// Each participant's email and link, from one reminder to all of them (cached per test file).
let links;
async function linksOnce() {
    if (links) return links;
    const m = await dueSoon(srv, key, [
        { id: 'ada', name: 'Ada', email: 'ada@example.com' },
        { id: 'bob', email: 'bob@example.com' },
        { id: 'cy', email: 'cy@example.com' },
        { id: 'dee', email: 'dee@example.com' },
    ]);
    links = { meeting: m };
    for (const id of ['ada', 'bob', 'cy', 'dee']) {
        const msg = await messageTo(`${id}@example.com`);
        links[id] = { msg, link: linkOf(msg) };
    }
    return links;
}

test('every email carries List-Unsubscribe with its own link under TOCSIN_PUBLIC_URL and List-Unsubscribe-Post', async () => {
    const l = await linksOnce();
    const started = Math.floor(Date.now() / 1000);
    for (const id of ['ada', 'bob', 'cy', 'dee']) {
        const { msg, link } = l[id];
        assert.deepEqual(msg.defects, [], `${id}: MIME defects`);
        assert.equal(header(msg, 'List-Unsubscribe-Post'), ONE_CLICK);
        const t = new URL(link).searchParams.get('t');
        assert.match(t, /^[A-Za-z0-9_-]+$/, 'URL-safe without escapes');
        assert.ok(pathOf(link) === `/v1/unsubscribe?t=${t}`, link);
        const fields = readToken(t);
        assert.equal(fields.format, 1);
        assert.equal(fields.participant, id, 'the token names the participant');
        assert.ok(fields.tenant > 0n);
        assert.ok(Math.abs(fields.issued - started) < 120, `issued ${fields.issued}`);
        assert.ok(msg.parts[0].text.includes(link), 'the plain text says where the link leads');
    }
    assert.equal(readToken(new URL(l.ada.link).searchParams.get('t')).tenant,
        readToken(new URL(l.bob.link).searchParams.get('t')).tenant, 'one tenant');
    assert.equal(new Set(['ada', 'bob', 'cy', 'dee'].map((id) => l[id].link)).size, 4, 'a link each');
    const rows = await deliveriesWhen(l.meeting.id, (xs) => xs.filter((d) => d.status === 'delivered').length === 4);
    assert.equal(rows.length, 4);
});

test('GET shows a page with one form that posts the one-click body, and changes nothing', async () => {
    const { link } = (await linksOnce()).ada;
    const r = await srv.req('GET', pathOf(link));
    assert.equal(r.status, 200, r.text);
    assert.match(r.header('content-type'), /^text\/html; charset=utf-8$/);
    assert.match(r.header('content-security-policy'), /default-src 'none'/);
    assert.match(r.header('content-security-policy'), /form-action 'self'/);
    assert.equal(r.header('referrer-policy'), 'no-referrer');
    assert.equal(r.header('cache-control'), 'no-store');
    const forms = r.text.match(/<form\b[^>]*>/g) ?? [];
    assert.equal(forms.length, 1, r.text);
    assert.match(forms[0], /method="post"/);
    const action = /action="([^"]*)"/.exec(forms[0])[1];
    assert.equal(new URL(action, link).href, link, 'the form posts to the link itself');
    assert.match(r.text, /<input type="hidden" name="List-Unsubscribe" value="One-Click">/);
    assert.equal((r.text.match(/<button\b/g) ?? []).length, 1);
    assert.doesNotMatch(r.text, /<script|<style|<link|<img|<iframe/i);
    const head = await fetch(srv.base + pathOf(link), { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal((await prefsOf('ada')).channels.email, true, 'a GET changes nothing');
});

test('POST with the one-click body turns email off, keeps the rest, and the next email is skipped while other channels go', async () => {
    const { link } = (await linksOnce()).ada;
    const quiet = { time_zone: 'Europe/Berlin', start: '23:00', end: '06:00' };
    const put = await srv.req('PUT', '/v1/participants/ada/preferences', {
        key, json: { channels: { email: true, push: false }, quiet_hours: quiet, reminders: null },
    });
    assert.equal(put.status, 200, put.text);
    const r = await srv.req('POST', pathOf(link), { body: ONE_CLICK, headers: FORM });
    assert.equal(r.status, 200, r.text);
    assert.match(r.header('content-type'), /^text\/html/);
    assert.match(r.text, /unsubscribed/i);
    assert.deepEqual(await prefsOf('ada'), { channels: { email: false, push: false }, quiet_hours: quiet, reminders: null });
    // Again, as a mail program may retry, and as a multipart form (RFC 7578) some send.
    const fd = new FormData();
    fd.append('List-Unsubscribe', 'One-Click');
    const again = await fetch(srv.base + pathOf(link), { method: 'POST', body: fd });
    assert.equal(again.status, 200, await again.text());
    const twice = await srv.req('POST', pathOf(link), { body: ONE_CLICK, headers: FORM });
    assert.equal(twice.status, 200, twice.text);
    assert.equal((await prefsOf('ada')).channels.email, false);
    assert.equal((await prefsOf('bob')).channels.email, true, 'nobody else is touched');

    const before = mailTo('ada@example.com').length;
    const m = await dueSoon(srv, key, [{ id: 'ada', email: 'ada@example.com' }, { id: 'bob', email: 'bob@example.com' }],
        ['email', 'stream']);
    const items = await deliveriesWhen(m.id, (xs) => xs.length === 3 && xs.every((d) => d.status !== 'pending'));
    const of = (ch, who) => items.find((d) => d.channel === ch && (who === undefined || d.recipient === who));
    assert.equal(of('email', 'ada').status, 'skipped', JSON.stringify(items));
    assert.equal(of('email', 'ada').last_error, 'preference');
    assert.equal(of('email', 'bob').status, 'delivered', JSON.stringify(items));
    assert.equal(of('stream').status, 'delivered', JSON.stringify(items));
    await messageTo('bob@example.com', 2);
    await sleep(500); // a late email to ada would be a bug: give it the chance to show
    assert.equal(mailTo('ada@example.com').length, before, 'no email to ada');
});

test('an altered, cut, foreign or missing token, a wrong body or content type: 4xx, nothing changed', async () => {
    const { link } = (await linksOnce()).cy;
    const t = new URL(link).searchParams.get('t');
    const tenant = readToken(t).tenant;
    const mid = Math.floor(t.length / 2);
    const bad = {
        altered: t.slice(0, mid) + (t[mid] === 'A' ? 'B' : 'A') + t.slice(mid + 1),
        cut: t.slice(0, -4),
        foreign: makeToken('another-server-s-secret-0123456789abcdef', tenant, 'cy'),
        other_tenant: makeToken('another-server-s-secret-0123456789abcdef', tenant + 1n, 'cy'),
        empty: '',
        not_base64url: `${t.slice(0, 10)}+/${t.slice(12)}`,
        too_long: 'A'.repeat(1200),
    };
    for (const [what, tok] of Object.entries(bad)) {
        const q = `/v1/unsubscribe?t=${encodeURIComponent(tok)}`;
        const p = await srv.req('POST', q, { body: ONE_CLICK, headers: FORM });
        assert.equal(p.status, 400, `${what}: ${p.text}`);
        assert.equal(p.json.code, 'unsubscribe_link_invalid', what);
        const g = await srv.req('GET', q);
        assert.equal(g.status, 400, `${what}: ${g.text}`);
        assert.match(g.header('content-type'), /^text\/html/, what);
        assert.doesNotMatch(g.text, /<form/, `${what}: no button for a bad link`);
    }
    const none = await srv.req('POST', '/v1/unsubscribe', { body: ONE_CLICK, headers: FORM });
    assert.equal(none.status, 400, none.text);
    assert.equal(none.json.code, 'unsubscribe_link_invalid');
    for (const more of ['&x=1', `&t=${t}`]) {
        const extra = await srv.req('POST', `${pathOf(link)}${more}`, { body: ONE_CLICK, headers: FORM });
        assert.equal(extra.status, 400, `${more}: ${extra.text}`);
        assert.equal(extra.json.code, 'bad_query', more);
        const page = await srv.req('GET', `${pathOf(link)}${more}`);
        assert.equal(page.status, 400, `${more}: ${page.text}`);
        assert.doesNotMatch(page.text, /<form/);
    }
    for (const body of ['', 'List-Unsubscribe=Yes', 'list-unsubscribe=one-click', 'x=List-Unsubscribe%3DOne-Click']) {
        const r = await srv.req('POST', pathOf(link), { body, headers: FORM });
        assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
        assert.equal(r.json.code, 'unsubscribe_body_invalid');
    }
    const json = await srv.req('POST', pathOf(link), { json: { 'List-Unsubscribe': 'One-Click' } });
    assert.equal(json.status, 415, json.text);
    const put = await srv.req('PUT', pathOf(link), { body: ONE_CLICK, headers: FORM });
    assert.equal(put.status, 405, put.text);
    assert.equal((await prefsOf('cy')).channels.email, true, 'nothing changed');
});

test('a token made outside tocsin with the secret, or with the previous one, is honoured', async () => {
    const l = await linksOnce();
    const tenant = readToken(new URL(l.dee.link).searchParams.get('t')).tenant;
    const r = await srv.req('POST', `/v1/unsubscribe?t=${makeToken(PREVIOUS, tenant, 'dee', 1700000000)}`, { body: ONE_CLICK, headers: FORM });
    assert.equal(r.status, 200, r.text);
    assert.equal((await prefsOf('dee')).channels.email, false);
    // Byte for byte: this file's token for bob is the one his email carried, once its issue time
    // is the same.
    const bobT = new URL(l.bob.link).searchParams.get('t');
    assert.equal(makeToken(SECRET, tenant, 'bob', readToken(bobT).issued), bobT);
});

test('without TOCSIN_PUBLIC_URL emails carry no link and the endpoint is off', async () => {
    const off = await hOff.startServer({ TOCSIN_SMTP_URL: smtp.url, TOCSIN_SMTP_FROM: 'reminders@tocsin.test' });
    const k = await off.createKey('unsub_off');
    await dueSoon(off, k, [{ id: 'eve', email: 'eve@example.com' }]);
    const msg = await messageTo('eve@example.com');
    assert.deepEqual(msg.defects, []);
    assert.equal(header(msg, 'List-Unsubscribe'), undefined);
    assert.equal(header(msg, 'List-Unsubscribe-Post'), undefined);
    const p = await off.req('POST', `/v1/unsubscribe?t=${makeToken(SECRET, 1, 'eve')}`, { body: ONE_CLICK, headers: FORM });
    assert.equal(p.status, 404, p.text);
    const g = await off.req('GET', `/v1/unsubscribe?t=${makeToken(SECRET, 1, 'eve')}`);
    assert.equal(g.status, 404, g.text);
    assert.match(g.header('content-type'), /^text\/html/);
});
