// push.test.mjs -- Web Push delivery against a push-service stand-in (tests/api/pushservice.mjs):
// every message tocsin sends is decrypted with the npm `http_ece` library using the subscriber's
// private key and its VAPID JWT verified with `jose` (k = the key of /v1/push/vapid-public-key,
// aud = the endpoint's origin, exp at most 24 h ahead); TTL, Urgency and Topic right; 410 tried
// once, then the subscription is gone; a 302 failed at once as push_redirected, not followed; 429
// with Retry-After: 2 retried after 2 s, not before; a rescheduled reminder sends its new time
// under the same Topic; a push service is held to its own
// share of requests in flight, not a webhook's; the subscription endpoints' validation, limit,
// scopes, deletion and isolation; one VAPID key across replicas; a push-only reminder calls no
// webhook.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createHash } from 'node:crypto';
import { harness, test, waitFor, sleep, MIN } from './harness.mjs';
import { pushService } from './pushservice.mjs';

const LEAD_MS = 1500;
const BOUND_MS = 20000; // generous: a delivery (or its retries) under ASan on a shared machine
const GRACE_MS = 60000; // TOCSIN_MISSED_GRACE_MS's default: part of the TTL
const SUBJECT = 'mailto:ops@tocsin.test';

const h = await harness('push');
const hShare = await harness('push_share'); // a database of its own: no other replica leases its rows
const hProbe = await harness('push_probe'); // the same, for the one worker whose circuit is watched
let ps;
let srv;
let second;
let key;

before(async () => {
    ps = await pushService();
    const env = { TOCSIN_WEBPUSH_ALLOW_PRIVATE: '1', TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1', TOCSIN_VAPID_SUBJECT: SUBJECT,
        TOCSIN_DELIVERY_RETRY_BASE_MS: '200' };
    srv = await h.startServer(env);
    second = await h.startServer(env);
    key = await srv.createKey('push');
});
after(() => ps.stop());

// Helpers for the file's server srv and stand-in ps; a test with a server and stand-in of its own
// passes them as on.
async function token(k, sub, scope = 'push', on = { s: srv }) {
    const r = await on.s.req('POST', '/v1/browser-tokens', { key: k, json: { sub, scope } });
    assert.equal(r.status, 201, r.text);
    return r.json.token;
}

async function subscribe(tok, sub, s = srv) {
    return s.req('POST', '/v1/push/subscriptions', { key: tok, json: sub.json });
}

// A participant with one subscription on the stand-in, answering as plan says.
async function subscriber(k, id, plan, on = { s: srv, service: ps }) {
    const sub = on.service.subscribe(plan);
    const r = await subscribe(await token(k, id, 'push', on), sub, on.s);
    assert.equal(r.status, 201, r.text);
    sub.id = r.json.id;
    return sub;
}

async function dueSoon(k, participants, fields = {}, channels = ['push'], on = { s: srv }) {
    const starts = new Date(Date.now() + LEAD_MS + 5 * MIN);
    starts.setUTCMilliseconds(0);
    const r = await on.s.req('POST', '/v1/meetings', {
        key: k,
        json: { title: 'Push', starts_at: starts.toISOString(), participants: participants.map((id) => ({ id })),
            reminders: [{ minutes_before: 5, channels }], ...fields },
    });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

const topicOf = (reminderId) => createHash('sha256').update(`rem_${reminderId}`).digest().subarray(0, 24).toString('base64url');

async function deliveries(k, id) {
    const r = await srv.req('GET', `/v1/meetings/${id}/deliveries`, { key: k });
    assert.equal(r.status, 200, r.text);
    return r.json.items;
}

test('every push decrypts with http_ece and carries a VAPID JWT jose verifies, with TTL, Urgency and Topic', async () => {
    const vapid = await srv.req('GET', '/v1/push/vapid-public-key', { key });
    assert.equal(vapid.status, 200, vapid.text);
    assert.match(vapid.json.key, /^[\w-]{87}$/);
    const again = await second.req('GET', '/v1/push/vapid-public-key', { key: await token(key, 'ada') });
    assert.equal(again.json.key, vapid.json.key, 'one key on every replica and for tokens');

    const ada = await subscriber(key, 'ada');
    const bob = await subscriber(key, 'bob');
    const m = await dueSoon(key, ['ada', 'bob'], { title: 'Design review', metadata: { url: 'https://app.example/m/1' } });
    assert.ok(await waitFor(() => ada.got.length >= 1 && bob.got.length >= 1, BOUND_MS), 'no push arrived');
    await sleep(500);
    assert.equal(ada.got.length, 1);
    assert.equal(bob.got.length, 1);
    const rem = m.reminders[0];
    for (const sub of [ada, bob]) {
        const rec = sub.got[0];
        assert.equal(rec.error, undefined, rec.error);
        assert.equal(rec.headers['content-encoding'], 'aes128gcm');
        assert.equal(rec.headers['content-type'], 'application/octet-stream');
        assert.equal(rec.headers.urgency, 'high');
        assert.equal(rec.headers.topic, topicOf(rem.id));
        const ttl = Number(rec.headers.ttl);
        const want = (Date.parse(m.starts_at) + GRACE_MS - rec.at) / 1000;
        assert.ok(Math.abs(ttl - want) <= 3, `TTL ${ttl}, wanted about ${want}`);
        assert.equal(rec.vapid.k, vapid.json.key);
        assert.equal(rec.vapid.claims.aud, ps.origin);
        assert.equal(rec.vapid.claims.sub, SUBJECT);
        assert.deepEqual(rec.message, {
            type: 'meeting.reminder', id: `rem_${rem.id}_${Date.parse(rem.fire_at)}`, meeting_id: m.id,
            title: 'Design review', starts_at: m.starts_at, minutes_before: 5, url: 'https://app.example/m/1',
        });
    }
    const rows = await deliveries(key, m.id);
    assert.deepEqual(rows.map((d) => [d.channel, d.recipient, d.status]).sort(),
        [['push', 'ada', 'delivered'], ['push', 'bob', 'delivered']]);
});

test('410: tried once, the subscription is gone, the next reminder does not try it', async () => {
    const k = await srv.createKey('push-gone');
    const gone = await subscriber(k, 'cy', () => 410);
    const m = await dueSoon(k, ['cy']);
    assert.ok(await waitFor(async () => (await deliveries(k, m.id))[0]?.status === 'failed', BOUND_MS));
    const [row] = await deliveries(k, m.id);
    assert.equal(row.attempts, 1, JSON.stringify(row));
    assert.equal(row.last_status, 410);
    assert.equal(gone.got.length, 1);
    const del = await srv.req('DELETE', `/v1/push/subscriptions/${gone.id}`, { key: await token(k, 'cy') });
    assert.equal(del.status, 404, 'the subscription was removed');
    const next = await dueSoon(k, ['cy']);
    assert.ok(await waitFor(async () => (await srv.req('GET', `/v1/meetings/${next.id}`, { key: k })).json.reminders[0].status === 'fired', BOUND_MS));
    await sleep(1000);
    assert.deepEqual(await deliveries(k, next.id), []);
    assert.equal(gone.got.length, 1, 'never tried again');
});

test('a 302 fails the row at once as push_redirected, and the redirect is not followed', async () => {
    const k = await srv.createKey('push-302');
    const target = ps.subscribe(); // where the redirect points: an endpoint that would take it
    const moved = await subscriber(k, 'eve', () => ({ status: 302, location: target.json.endpoint }));
    const m = await dueSoon(k, ['eve']);
    assert.ok(await waitFor(async () => (await deliveries(k, m.id))[0]?.status === 'failed', BOUND_MS),
        JSON.stringify(await deliveries(k, m.id)));
    await sleep(1000); // a retry, if any, is due after TOCSIN_DELIVERY_RETRY_BASE_MS (200 ms)
    const [row] = await deliveries(k, m.id);
    assert.equal(row.attempts, 1, JSON.stringify(row));
    assert.equal(row.last_status, 302);
    assert.match(row.last_error, /^push_redirected: HTTP 302 /);
    assert.equal(moved.got.length, 1, 'tried once');
    assert.equal(target.got.length, 0, 'the redirect was not followed');
});

test('429 with Retry-After: 2 is retried after 2 s, not before', async () => {
    const k = await srv.createKey('push-429');
    const busy = await subscriber(k, 'dee', (n) => (n === 1 ? { status: 429, retryAfter: 2 } : 201));
    const m = await dueSoon(k, ['dee']);
    assert.ok(await waitFor(() => busy.got.length >= 2, BOUND_MS), `tries: ${busy.got.length}`);
    const gap = busy.got[1].at - busy.got[0].at;
    assert.ok(gap >= 1950, `retried after ${gap} ms`);
    assert.ok(await waitFor(async () => (await deliveries(k, m.id))[0]?.status === 'delivered', BOUND_MS));
    assert.equal(busy.got[1].message.id, busy.got[0].message.id, 'the same notification');
});

test('a reminder rescheduled before it fires sends the new time under the same Topic', async () => {
    const k = await srv.createKey('push-move');
    const sub = await subscriber(k, 'eve');
    const m = await dueSoon(k, ['eve'], {}, ['push']);
    const later = new Date(Date.parse(m.starts_at) + 2000).toISOString();
    const p = await srv.req('PATCH', `/v1/meetings/${m.id}`, { key: k, json: { starts_at: later } });
    assert.equal(p.status, 200, p.text);
    assert.equal(p.json.reminders[0].id, m.reminders[0].id, 'the same reminder');
    assert.ok(await waitFor(() => sub.got.length >= 1, BOUND_MS));
    await sleep(1000);
    assert.equal(sub.got.length, 1, 'the old time never fired');
    assert.equal(Date.parse(sub.got[0].message.starts_at), Date.parse(later));
    assert.equal(sub.got[0].headers.topic, topicOf(m.reminders[0].id));
});

test('a push-only reminder calls no webhook, and a webhook-only one sends no push', async (t) => {
    const k = await srv.createKey('push-channels');
    const calls = [];
    const rx = http.createServer((req, res) => { req.resume(); req.on('end', () => { calls.push(1); res.writeHead(204).end(); }); });
    await new Promise((r) => rx.listen(0, '127.0.0.1', r));
    t.after(() => new Promise((r) => { rx.closeAllConnections(); rx.close(() => r()); }));
    assert.equal((await srv.req('POST', '/v1/webhooks', { key: k, json: { url: `http://127.0.0.1:${rx.address().port}/h` } })).status, 201);
    const sub = await subscriber(k, 'fin');
    await dueSoon(k, ['fin'], {}, ['push']);
    await dueSoon(k, ['fin'], { title: 'Hook' }, ['webhook']);
    assert.ok(await waitFor(() => sub.got.length >= 1 && calls.length >= 1, BOUND_MS));
    await sleep(1000);
    assert.equal(sub.got.length, 1);
    assert.equal(sub.got[0].message.title, 'Push');
    assert.equal(calls.length, 1);
});

test('a push service has a share of its own: TOCSIN_DELIVERY_PUSH_SERVICE_CONCURRENCY in flight, not the webhook share', async (t) => {
    const SHARE = 3, N = 9;
    const slow = await pushService();
    t.after(() => slow.stop());
    // One worker, one request at a time for a webhook: the push service alone may have SHARE.
    const one = await hShare.startServer({ TOCSIN_WEBPUSH_ALLOW_PRIVATE: '1', TOCSIN_VAPID_SUBJECT: SUBJECT,
        TOCSIN_DELIVERY_WORKERS: '1', TOCSIN_DELIVERY_RECEIVER_CONCURRENCY: '1',
        TOCSIN_DELIVERY_PUSH_SERVICE_CONCURRENCY: String(SHARE) });
    t.after(() => one.stop());
    const k = await one.createKey('push-share');
    const ids = [];
    for (let i = 0; i < N; i++) {
        const sub = slow.subscribe(() => ({ status: 201, delayMs: 600 }));
        const tok = (await one.req('POST', '/v1/browser-tokens', { key: k, json: { sub: `p${i}`, scope: 'push' } })).json.token;
        const r = await one.req('POST', '/v1/push/subscriptions', { key: tok, json: sub.json });
        assert.equal(r.status, 201, r.text);
        ids.push(`p${i}`);
    }
    const starts = new Date(Date.now() + LEAD_MS + 5 * MIN);
    const m = await one.req('POST', '/v1/meetings', { key: k, json: { title: 'Share', starts_at: starts.toISOString(),
        participants: ids.map((id) => ({ id })), reminders: [{ minutes_before: 5, channels: ['push'] }] } });
    assert.equal(m.status, 201, m.text);
    assert.ok(await waitFor(() => slow.all.length >= N && slow.open === 0, BOUND_MS), `${slow.all.length} of ${N} pushes`);
    assert.equal(slow.all.length, N, 'one request each');
    assert.equal(slow.maxOpen, SHARE, 'requests open at once at the push service');
});

test('a half-open circuit whose probe cannot be sent tries the next row, and the push service is reached again', async (t) => {
    const svc = await pushService();
    t.after(() => svc.stop());
    const one = await hProbe.startServer({ TOCSIN_WEBPUSH_ALLOW_PRIVATE: '1', TOCSIN_VAPID_SUBJECT: SUBJECT,
        TOCSIN_DELIVERY_WORKERS: '1', TOCSIN_DELIVERY_RETRY_BASE_MS: '100' });
    t.after(() => one.stop());
    const k = await one.createKey('push-probe');
    const on = { s: one, service: svc };
    const join = (id, plan) => subscriber(k, id, plan, on);
    const remind = (ids) => dueSoon(k, ids, { title: 'Probe' }, ['push'], on);
    // Five subscribers whose pushes the service refuses with 503: its circuit opens.
    const five = ['q0', 'q1', 'q2', 'q3', 'q4'];
    for (const id of five) await join(id, () => 503);
    await remind(five);
    assert.ok(await waitFor(() => /failed \d+ times in a row; circuit open/.test(one.log), BOUND_MS), 'the circuit opened');
    // While it is open their keys go bad: when it half-opens, none of their retries can even be
    // encrypted, so the first to be the probe fails before any request is made.
    await hProbe.sql(`UPDATE push_subscriptions SET p256dh = repeat('!', 87)`);
    const failed = async () => Number(await hProbe.sql(`SELECT count(*) FROM outbox WHERE status = 'failed'`));
    assert.ok(await waitFor(async () => await failed() >= 1, BOUND_MS), 'a retry failed for good as the probe');
    // A subscriber the service accepts: the next probe is its push, and it closes the circuit.
    const good = await join('q5', () => 201);
    await remind(['q5']);
    assert.ok(await waitFor(() => good.got.length === 1, BOUND_MS), 'the push service was reached again');
    assert.ok(await waitFor(async () => await failed() === five.length, BOUND_MS), `${await failed()} of the bad rows failed for good`);
    assert.match(await hProbe.sql(`SELECT DISTINCT last_error FROM outbox WHERE status = 'failed'`), /p256dh|key/i);
});

test('subscriptions: validation, scopes, re-subscribe, the limit of 10, deletion and isolation', async () => {
    const k = await srv.createKey('push-api');
    const gus = await token(k, 'gus');
    const good = ps.subscribe().json;
    const cases = [
        [{ ...good, endpoint: 'ftp://x.example/p' }, 'endpoint'],
        [{ ...good, endpoint: `https://x.example/${'p'.repeat(2100)}` }, 'endpoint'],
        [{ ...good, keys: { ...good.keys, p256dh: good.keys.p256dh.slice(0, -2) } }, 'keys.p256dh'],
        [{ ...good, keys: { ...good.keys, p256dh: 'C' + good.keys.p256dh.slice(1) } }, 'keys.p256dh'], // not 0x04 first
        [{ ...good, keys: { ...good.keys, auth: good.keys.auth.slice(0, 10) } }, 'keys.auth'],
        [{ ...good, keys: undefined }, 'keys'],
        [{ ...good, expirationTime: 'soon' }, 'expirationTime'],
    ];
    for (const [body, field] of cases) {
        const r = await srv.req('POST', '/v1/push/subscriptions', { key: gus, json: body });
        assert.equal(r.status, 400, `${field}: ${r.text}`);
        assert.equal(r.json.code, 'validation');
        assert.ok(r.json.errors.some((e) => e.field === field), `${field}: ${r.text}`);
    }
    assert.equal((await srv.req('POST', '/v1/push/subscriptions', { key: k, json: good })).status, 403, 'an API key has no participant');
    const noPush = await token(k, 'gus', 'notifications');
    const r403 = await srv.req('POST', '/v1/push/subscriptions', { key: noPush, json: good });
    assert.equal(r403.status, 403);
    assert.equal(r403.json.code, 'insufficient_scope');

    const first = await srv.req('POST', '/v1/push/subscriptions', { key: gus, json: { ...good, unknownMember: 1 } });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.header('location'), `/v1/push/subscriptions/${first.json.id}`);
    const again = await srv.req('POST', '/v1/push/subscriptions', { key: gus, json: good });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json.id, first.json.id);
    for (let i = 1; i < 10; i++) {
        assert.equal((await subscribe(gus, ps.subscribe())).status, 201);
    }
    const over = await subscribe(gus, ps.subscribe());
    assert.equal(over.status, 409, over.text);
    assert.equal(over.json.code, 'push_subscription_limit');

    const hal = await token(k, 'hal');
    // A browser hal subscribed, signed into as gus, who is at the limit: refused, and hal keeps it.
    const halsBrowser = ps.subscribe();
    const hals = await subscribe(hal, halsBrowser);
    assert.equal(hals.status, 201, hals.text);
    const taken = await subscribe(gus, halsBrowser);
    assert.equal(taken.status, 409, taken.text);
    const kept = await subscribe(hal, halsBrowser);
    assert.equal(kept.status, 200, `the refused request removed hal's subscription: ${kept.text}`);
    assert.equal(kept.json.id, hals.json.id);
    // An expired subscription holds no place, and the next subscription removes it.
    const gusRows = `push_subscriptions WHERE participant_id = 'gus'
        AND tenant_id = (SELECT tenant_id FROM push_subscriptions WHERE id = '${first.json.id}')`;
    await h.sql(`UPDATE push_subscriptions SET expires_at = now() - interval '1 minute'
                 WHERE id = (SELECT id FROM ${gusRows} AND id <> '${first.json.id}' LIMIT 1)`);
    const renewed = await subscribe(gus, ps.subscribe());
    assert.equal(renewed.status, 201, `an expired subscription held a place: ${renewed.text}`);
    assert.equal(await h.sql(`SELECT count(*) FROM ${gusRows} AND expires_at <= now()`), '0');
    assert.equal((await subscribe(gus, ps.subscribe())).status, 409, 'ten live ones again');
    assert.equal((await srv.req('DELETE', `/v1/push/subscriptions/${first.json.id}`, { key: hal })).status, 404, 'not hal\'s');
    const otherTenant = await token(await srv.createKey('push-other'), 'gus');
    assert.equal((await srv.req('DELETE', `/v1/push/subscriptions/${first.json.id}`, { key: otherTenant })).status, 404, 'not that tenant\'s');
    assert.equal((await srv.req('DELETE', `/v1/push/subscriptions/${first.json.id}`, { key: gus })).status, 204);
    assert.equal((await srv.req('DELETE', `/v1/push/subscriptions/${first.json.id}`, { key: gus })).status, 404);
    assert.equal((await subscribe(gus, ps.subscribe())).status, 201, 'room again after a deletion');
});
