// redis_tls.test.mjs -- Redis over TLS (rediss://) against redis-server's own --tls-port, with a CA
// and certificates this file makes with the openssl CLI: reminders fire through the expiry
// listener over TLS; a server certificate from another CA, or for another host name, is refused
// with OpenSSL's verify result in the log and in /readyz; a Redis that requires client
// certificates (--tls-auth-clients yes) refuses tocsin without one and serves it with one.
import { before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { harness, test, certificates, run, waitFor, MIN } from './harness.mjs';

const LEAD_MS = 3000; // a reminder due this far ahead: armed in Redis first, then expired
const FIRE_BOUND_MS = 15000;
const REFUSE_BOUND_MS = 10000; // the first connect fails at once; the bound is for a busy machine

const h = await harness('redis_tls');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-tls-'));
const certs = certificates(dir);
const { f } = certs;
const makeCa = certs.ca;
const makeLeaf = certs.leaf;

let good; // a TLS-only Redis whose certificate names localhost and 127.0.0.1
const serverFiles = (leaf, extra = {}) => ({ ca: f('ca.pem'), serverCert: f(`${leaf}.pem`), serverKey: f(`${leaf}.key`), ...extra });

before(async () => {
    await makeCa('ca');
    await makeCa('other-ca');
    await makeLeaf('ca', 'server', 'DNS:localhost,IP:127.0.0.1', 'serverAuth');
    await makeLeaf('ca', 'elsewhere', 'DNS:redis.elsewhere.example', 'serverAuth');
    await makeLeaf('ca', 'client', 'DNS:tocsin-client', 'clientAuth');
    good = await h.startRedis(serverFiles('server'));
});

const rediss = (port, host = '127.0.0.1') => `rediss://${host}:${port}/0`;

// Waits until /readyz says Redis is down for a reason matching why; returns its body.
async function refused(srv, why) {
    let rz;
    const ok = await waitFor(async () => {
        rz = await srv.req('GET', '/readyz');
        return rz.json.checks.subscriber === 'down' && why.test(rz.json.redis_error ?? '');
    }, REFUSE_BOUND_MS, 100);
    assert.ok(ok, `/readyz: ${rz?.text}\nlog:\n${srv.log}`);
    assert.equal(rz.status, 200, 'Redis never fails readiness');
    return rz;
}

test('rediss:// with the CA: the mirror and the expiry listener work over TLS, reminders fire', async () => {
    const srv = await h.startServer({ TOCSIN_REDIS_URL: rediss(good.port, 'localhost'), TOCSIN_REDIS_TLS_CA: f('ca.pem') });
    const key = await srv.createKey('tls');
    const fireMs = Date.now() + LEAD_MS;
    const c = await srv.req('POST', '/v1/meetings', { key, json: { title: 'over tls',
        starts_at: new Date(fireMs + 5 * MIN).toISOString(), reminders: [{ minutes_before: 5 }] } });
    assert.equal(c.status, 201, c.text);
    const rid = c.json.reminders[0].id;
    // Armed in the TLS Redis (what redis-cli --tls sees there is what tocsin wrote over TLS).
    const keys = await good.cli.keys(`${srv.prefix}:rem:${rid}:*`);
    assert.deepEqual(keys, [`${srv.prefix}:rem:${rid}:${Date.parse(c.json.reminders[0].fire_at)}`]);
    const fired = await waitFor(async () => (await h.sql(`SELECT status FROM reminders WHERE id = ${rid}`)) === 'fired',
        FIRE_BOUND_MS, 100);
    assert.ok(fired, `reminder ${rid} not fired:\n${srv.log}`);
    // Its expired event came over the TLS subscription.
    const mt = (await srv.req('GET', '/metrics', { validate: false })).text;
    assert.match(mt, /^tocsin_redis_expired_events_total [1-9]/m, mt);
    const rz = await srv.req('GET', '/readyz');
    assert.equal(rz.json.checks.redis, 'ok', rz.text);
    assert.equal(rz.json.checks.subscriber, 'ok', rz.text);
    assert.equal(rz.json.checks.notify_config, 'ok', rz.text);
    assert.equal(rz.json.redis_error, undefined, rz.text);
    await srv.stop();
});

test('a server certificate from another CA is refused: the log and /readyz name the verify result', async () => {
    const srv = await h.startServer({ TOCSIN_REDIS_URL: rediss(good.port), TOCSIN_REDIS_TLS_CA: f('other-ca.pem') });
    // OpenSSL's words for a chain it cannot anchor (which depends on whether Redis sends its CA).
    const why = 'TLS certificate verify failed for 127\\.0\\.0\\.1: (unable to get local issuer certificate|self-signed certificate in certificate chain)';
    const rz = await refused(srv, new RegExp(why));
    assert.equal(rz.json.checks.redis, 'down', rz.text);
    assert.match(srv.log, new RegExp(`expiry: redis unavailable \\(${why}\\); retrying`), srv.log);
    await srv.stop();
});

test('a certificate for another host name is refused (DNS name and IP address alike)', async () => {
    const other = await h.startRedis(serverFiles('elsewhere'));
    for (const host of ['localhost', '127.0.0.1']) {
        const srv = await h.startServer({ TOCSIN_REDIS_URL: rediss(other.port, host), TOCSIN_REDIS_TLS_CA: f('ca.pem') });
        const why = host === 'localhost' ? 'hostname mismatch' : 'IP address mismatch';
        await refused(srv, new RegExp(`verify failed for ${host}: ${why}`));
        assert.match(srv.log, new RegExp(why), srv.log);
        await srv.stop();
    }
    await other.stop();
});

test('--tls-auth-clients yes: refused without a client certificate, served with one', async () => {
    const strict = await h.startRedis(serverFiles('server', { authClients: true, cert: f('client.pem'), key: f('client.key') }));
    const bare = await h.startServer({ TOCSIN_REDIS_URL: rediss(strict.port), TOCSIN_REDIS_TLS_CA: f('ca.pem') });
    await refused(bare, /certificate required|handshake failure|alert/);
    await bare.stop();
    const srv = await h.startServer({ TOCSIN_REDIS_URL: rediss(strict.port), TOCSIN_REDIS_TLS_CA: f('ca.pem'),
        TOCSIN_REDIS_TLS_CERT: f('client.pem'), TOCSIN_REDIS_TLS_KEY: f('client.key') });
    const ok = await waitFor(async () => (await srv.req('GET', '/readyz')).json.checks.subscriber === 'ok', REFUSE_BOUND_MS, 100);
    assert.ok(ok, srv.log);
    await srv.stop();
    await strict.stop();
});

test('unreadable TLS files and a key of another certificate stop the start with one line', async () => {
    const cases = [
        [{ TOCSIN_REDIS_TLS_CA: f('missing.pem') }, /TOCSIN_REDIS_TLS_\*: .*missing\.pem/],
        [{ TOCSIN_REDIS_TLS_CA: f('ca.pem'), TOCSIN_REDIS_TLS_CERT: f('client.pem'), TOCSIN_REDIS_TLS_KEY: f('server.key') },
            /TOCSIN_REDIS_TLS_\*: .*does not match|TOCSIN_REDIS_TLS_\*: .*server\.key/],
    ];
    for (const [extra, want] of cases) {
        const r = await run(h.env.bin, ['serve'], { env: h.serverEnv({ TOCSIN_REDIS_URL: rediss(good.port), ...extra }) });
        assert.notEqual(r.code, 0, r.stderr);
        assert.match(r.stderr, want);
    }
});
