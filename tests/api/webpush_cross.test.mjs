// webpush_cross.test.mjs -- tocsin's Web Push code (src/delivery/webpush.c) against independent
// implementations: bodies C encrypts for key pairs that node's crypto generates decrypt with the
// npm `http_ece` library (as a browser would); VAPID JWTs C signs, with keys node generated or C
// generated, verify with the npm `jose` library and with node's own ECDSA, the key taken from the
// k= of the Authorization value; origins C computes equal what node's WHATWG URL says; Topic values
// equal SHA-256 computed by node. The C side is tests/tools/webpush_tool, built next to TOCSIN_BIN.
// No server is needed: the delivery path gets its own tests against a push-service stand-in.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
    createECDH, createHash, createPublicKey, generateKeyPairSync, randomBytes, randomInt, verify,
} from 'node:crypto';
import ece from 'http_ece';
import { importJWK, jwtVerify } from 'jose';
import { run, test } from './harness.mjs';

const PLAINTEXT_MAX = 3993; // RFC 8291 section 4: a 4096-byte body
const HEADER_LEN = 86; // salt 16, rs 4, idlen 1, keyid 65
const OVERHEAD = HEADER_LEN + 1 + 16; // the 0x02 delimiter and the GCM tag
const ROUND_TRIPS = 24;
const DAY_S = 86400;

if (!process.env.TOCSIN_BIN) {
    throw new Error('TOCSIN_BIN is not set (scripts/test.sh sets it); refusing to skip');
}
const TOOL = path.join(path.dirname(process.env.TOCSIN_BIN), 'webpush_tool');
if (!fs.existsSync(TOOL)) {
    throw new Error(`${TOOL} does not exist: it is built with the tests (tests/tools/webpush_tool.c)`);
}

const nowS = () => Math.floor(Date.now() / 1000);
const b64u = (buf) => Buffer.from(buf).toString('base64url');

// Runs the tool; resolves to its stdout when it exits 0, else to {refused: NAME} for exit 1.
async function tool(...args) {
    const r = await run(TOOL, args);
    if (r.code === 0) {
        return r.stdout.trim();
    }
    assert.equal(r.code, 1, `webpush_tool ${args[0]}: exit ${r.code}: ${r.stderr}`);
    return { refused: r.stdout.trim() };
}

// A browser's subscription keys: node's ECDH pair and a random auth secret.
function subscriber() {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    return { ecdh, p256dh: ecdh.getPublicKey(), auth: randomBytes(16) };
}

test('bodies C encrypts decrypt with http_ece, at every interesting length', async () => {
    const lengths = [0, 1, 2, 15, 16, 17, 100, PLAINTEXT_MAX - 1, PLAINTEXT_MAX];
    for (let i = 0; i < ROUND_TRIPS; i++) {
        const ua = subscriber();
        const len = i < lengths.length ? lengths[i] : randomInt(0, PLAINTEXT_MAX + 1);
        const plaintext = randomBytes(len);
        // Some browsers write the keys with base64 padding: both forms must work.
        const pad = i % 3 === 0;
        const p256dh = pad ? `${b64u(ua.p256dh)}=` : b64u(ua.p256dh);
        const auth = pad ? `${b64u(ua.auth)}==` : b64u(ua.auth);
        const out = await tool('encrypt', p256dh, auth, b64u(plaintext));
        assert.equal(typeof out, 'string', `round trip ${i}: refused ${JSON.stringify(out)}`);
        const body = Buffer.from(out, 'base64url');
        assert.equal(body.length, len + OVERHEAD, `round trip ${i}: body length`);
        assert.equal(body.readUInt32BE(16), 4096, 'rs');
        assert.equal(body[20], 65, 'idlen');
        const opened = ece.decrypt(body, { version: 'aes128gcm', privateKey: ua.ecdh, authSecret: ua.auth });
        assert.ok(opened.equals(plaintext), `round trip ${i}: ${len} bytes decrypt to other bytes`);
        // The same body under another auth secret is refused by http_ece: the check can fail.
        assert.throws(() => ece.decrypt(body, {
            version: 'aes128gcm', privateKey: ua.ecdh, authSecret: randomBytes(16),
        }));
    }
});

test('C refuses what a browser never sends: long plaintext, bad keys', async () => {
    const ua = subscriber();
    const p256dh = b64u(ua.p256dh);
    const auth = b64u(ua.auth);
    assert.deepEqual(await tool('encrypt', p256dh, auth, b64u(randomBytes(PLAINTEXT_MAX + 1))),
        { refused: 'WEBPUSH_E_TOO_LONG' });
    const compressed = b64u(ua.ecdh.getPublicKey(null, 'compressed'));
    assert.deepEqual(await tool('encrypt', compressed, auth, ''), { refused: 'WEBPUSH_E_P256DH_LENGTH' });
    const offCurve = Buffer.from(ua.p256dh);
    offCurve[64] ^= 1;
    assert.deepEqual(await tool('encrypt', b64u(offCurve), auth, ''), { refused: 'WEBPUSH_E_P256DH_POINT' });
    // node itself refuses that point: the C check agrees with an independent one.
    assert.throws(() => ua.ecdh.computeSecret(offCurve));
    assert.deepEqual(await tool('encrypt', p256dh, b64u(ua.auth.subarray(0, 15)), ''),
        { refused: 'WEBPUSH_E_AUTH_LENGTH' });
    // Standard base64 ('+', '/') is not base64url; these bytes make both characters appear.
    const std = Buffer.concat([Buffer.from([0xfb, 0xff, 0xbf]), randomBytes(13)]).toString('base64');
    assert.match(std, /^\+\/\+\//);
    assert.deepEqual(await tool('encrypt', p256dh, std, ''), { refused: 'WEBPUSH_E_AUTH_ENCODING' });
});

// The public key of the k= parameter as a JWK, checked to be an uncompressed point.
function jwkOfK(k) {
    const raw = Buffer.from(k, 'base64url');
    assert.equal(raw.length, 65, 'k is 65 bytes');
    assert.equal(raw[0], 4, 'k is uncompressed');
    return { kty: 'EC', crv: 'P-256', x: b64u(raw.subarray(1, 33)), y: b64u(raw.subarray(33)) };
}

// Verifies a tool `vapid` answer with jose (key from k=, as a JWK or as a KeyObject from spki) and
// node's ECDSA; returns the payload.
async function verifyVapid(out, { endpoint, subject, now, lifetime, spki }) {
    const m = /^vapid t=([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+), k=([A-Za-z0-9_-]+)$/.exec(out.authorization);
    assert.ok(m, `Authorization: ${out.authorization}`);
    const [, token, k] = m;
    assert.equal(token, out.jwt);
    assert.equal(k, out.public);
    const origin = new URL(endpoint).origin;
    assert.equal(out.origin, origin);
    const jwk = jwkOfK(k);
    const key = spki
        ? createPublicKey({ key: createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'der' }),
            format: 'der', type: 'spki' })
        : await importJWK(jwk, 'ES256');
    const { payload, protectedHeader } = await jwtVerify(token, key, {
        algorithms: ['ES256'], audience: origin, typ: 'JWT', requiredClaims: ['exp', 'sub'], currentDate: new Date(now * 1000),
    });
    assert.deepEqual(protectedHeader, { typ: 'JWT', alg: 'ES256' });
    assert.deepEqual(payload, { aud: origin, exp: now + lifetime, sub: subject });
    assert.ok(payload.exp <= now + DAY_S, 'exp at most 24 h ahead');
    // node's ECDSA over the same bytes, with the raw r||s signature (IEEE P1363 form).
    const dot = token.lastIndexOf('.');
    assert.ok(verify('sha256', Buffer.from(token.slice(0, dot)),
        { key: createPublicKey({ key: jwk, format: 'jwk' }), dsaEncoding: 'ieee-p1363' },
        Buffer.from(token.slice(dot + 1), 'base64url')), 'node crypto.verify');
    return { token, jwk };
}

test('VAPID JWTs from keys node generated verify with jose and node', async () => {
    const endpoints = [
        'https://fcm.googleapis.com/fcm/send/dGVzdA:APA91b',
        'https://updates.push.services.mozilla.com/wpush/v2/gAAAAABk',
        'https://web.push.apple.com/QGuQyavXutnMH6Ig2uYOJDwA',
        'HTTPS://Push.Example.COM:443/p',
        'http://127.0.0.1:8123/push/1',
        'https://[::1]:8443/p',
    ];
    const subjects = ['mailto:ops@example.com', 'https://example.com/contact'];
    for (let i = 0; i < endpoints.length * 2; i++) {
        const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
        const jwk = privateKey.export({ format: 'jwk' });
        const pub = b64u(Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x, 'base64url'), Buffer.from(jwk.y, 'base64url')]));
        const endpoint = endpoints[i % endpoints.length];
        const subject = subjects[i % 2];
        const now = nowS();
        const lifetime = i % 2 ? DAY_S : 43200;
        const out = JSON.parse(await tool('vapid', jwk.d, pub, endpoint, subject, String(now), String(lifetime)));
        assert.equal(out.public, pub, 'C derives the public key node has for the scalar');
        await verifyVapid(out, { endpoint, subject, now, lifetime, spki: i % 2 === 1 });
    }
});

test('VAPID keys C generates work the same, and refusals have their reasons', async () => {
    const pair = JSON.parse(await tool('vapid-new'));
    assert.match(pair.private, /^[A-Za-z0-9_-]{43}$/);
    assert.match(pair.public, /^[A-Za-z0-9_-]{87}$/);
    // node computes the same public key from the stored scalar.
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(Buffer.from(pair.private, 'base64url'));
    assert.equal(b64u(ecdh.getPublicKey()), pair.public);
    const endpoint = 'https://fcm.googleapis.com/fcm/send/x';
    const now = nowS();
    const out = JSON.parse(await tool('vapid', pair.private, '-', endpoint, 'mailto:a@example.com', String(now), '3600'));
    const { token } = await verifyVapid(out, { endpoint, subject: 'mailto:a@example.com', now, lifetime: 3600 });
    // Under another key, jose refuses the token: the verification above can fail.
    const other = JSON.parse(await tool('vapid-new'));
    await assert.rejects(jwtVerify(token, await importJWK(jwkOfK(other.public), 'ES256'), { algorithms: ['ES256'] }),
        { code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });

    const refusals = [
        [[pair.private, other.public, endpoint, 'mailto:a@example.com', now, 60], 'WEBPUSH_E_VAPID_MISMATCH'],
        [[pair.private.slice(1), '-', endpoint, 'mailto:a@example.com', now, 60], 'WEBPUSH_E_VAPID_KEY'],
        [[pair.private, '-', endpoint, 'mailto:a@example.com', now, DAY_S + 1], 'WEBPUSH_E_LIFETIME'],
        [[pair.private, '-', endpoint, 'mailto:a@example.com', now, 0], 'WEBPUSH_E_LIFETIME'],
        [[pair.private, '-', endpoint, 'ops@example.com', now, 60], 'WEBPUSH_E_SUBJECT'],
        [[pair.private, '-', 'ftp://example.com/', 'mailto:a@example.com', now, 60], 'WEBPUSH_E_ENDPOINT'],
        [[pair.private, '-', 'https://u@example.com/', 'mailto:a@example.com', now, 60], 'WEBPUSH_E_ENDPOINT'],
    ];
    for (const [args, want] of refusals) {
        assert.deepEqual(await tool('vapid', ...args.map(String)), { refused: want }, want);
    }
});

test('origins C computes are what the WHATWG URL parser says, or refused', async () => {
    const schemes = ['https://', 'http://', 'HTTPS://', 'hTtP://', 'ftp://', 'https:/'];
    const hosts = ['push.example.com', 'Push.Example.COM', 'fcm.googleapis.com', 'a-b_c.example',
        '127.0.0.1', '1.2.3.4', '127.1', '0x7f.0.0.1', '01.2.3.4', '1.2.3.4.5', 'a.b.123', 'a.b.0x1F',
        '[::1]', '[2001:DB8::0:1]', '[0:0:0:0:0:ffff:7f00:1]', '[::ffff:10.0.0.1]', '[1:0:0:2:0:0:0:3]',
        '[fe80::1%25eth0]', 'h..x', '.h', 'h.', 'user@h', 'u:p@h', 'h%41', 'exämple.com', 'h x', ''];
    const ports = ['', ':443', ':80', ':0443', ':8080', ':08080', ':65535', ':65536', ':0', ':', ':8a'];
    const rests = ['', '/', '/wpush/v2/abc', '?q=1', '#f', '/a:b@c', '\\x'];
    const urls = [];
    for (const s of schemes) {
        for (const h of hosts) {
            for (const p of ports) {
                for (const r of rests) {
                    urls.push(`${s}${h}${p}${r}`);
                }
            }
        }
    }
    const lines = (await tool('origin', ...urls)).split('\n');
    assert.equal(lines.length, urls.length);
    let accepted = 0;
    for (let i = 0; i < urls.length; i++) {
        if (lines[i] === '-') {
            continue; // refused: allowed, C takes only what it can write exactly like a browser
        }
        accepted++;
        let origin;
        try {
            origin = new URL(urls[i]).origin;
        } catch {
            assert.fail(`C accepted ${urls[i]} as ${lines[i]}, the WHATWG parser refuses it`);
        }
        assert.equal(lines[i], origin, urls[i]);
    }
    // The comparison covered real ground: the plain hosts under http(s) with good ports at least.
    assert.ok(accepted >= 1000, `only ${accepted} of ${urls.length} URLs accepted`);
});

test('Topic values are 32 base64url characters of SHA-256 of the id', async () => {
    const ids = ['rem_1_1700000000000', 'rem_9223372036854775807_9223372036854775807', 'x'];
    const topics = new Set();
    for (const id of ids) {
        const got = await tool('topic', id);
        assert.match(got, /^[A-Za-z0-9_-]{32}$/);
        assert.equal(got, createHash('sha256').update(id).digest().subarray(0, 24).toString('base64url'));
        topics.add(got);
    }
    assert.equal(topics.size, ids.length);
});
