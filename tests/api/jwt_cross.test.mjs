// jwt_cross.test.mjs -- tocsin's JWT code (src/http/jwt.c) against an independent implementation, the
// npm `jose` library: tokens jose signs (HS256 with kid, the key being the signing secret's UTF-8
// bytes) verify in C with the same claims; tokens jose signs that tocsin's policy forbids are
// refused for the right reason; tokens C mints pass jose's jwtVerify with the same claims. The C
// side is tests/tools/jwt_tool, built next to TOCSIN_BIN. No server is needed: the HTTP endpoints
// get the same cross-check in their own tests.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { SignJWT, UnsecuredJWT, jwtVerify, decodeProtectedHeader } from 'jose';
import { run, test } from './harness.mjs';

const AUD = 'tocsin';
const DAY_S = 86400;
const URL_LIFETIME_S = 900;
const SCOPES = ['meetings:read', 'meetings:write', 'notifications', 'push']; // tocsin's order
const MTG_MAX = 100;
const SUB_MAX = 200; // characters
const ROUND_TRIPS = 40; // random claim sets each way

if (!process.env.TOCSIN_BIN) {
    throw new Error('TOCSIN_BIN is not set (scripts/test.sh sets it); refusing to skip');
}
const TOOL = path.join(path.dirname(process.env.TOCSIN_BIN), 'jwt_tool');
if (!fs.existsSync(TOOL)) {
    throw new Error(`${TOOL} does not exist: it is built with the tests (tests/tools/jwt_tool.c)`);
}

const secret = `tsk_${randomBytes(32).toString('base64url')}`;
const key = new TextEncoder().encode(secret);
const nowS = () => Math.floor(Date.now() / 1000);

// C verifies: resolves to the claims it read, or to the refusal's name (JWT_E_...).
async function cVerify(token, { maxLifetime = DAY_S, at = nowS(), withSecret = secret } = {}) {
    const r = await run(TOOL, ['verify', withSecret, AUD, String(maxLifetime), String(at), token]);
    if (r.code === 0) {
        return JSON.parse(r.stdout);
    }
    assert.equal(r.code, 1, `jwt_tool verify: exit ${r.code}: ${r.stderr}`);
    return r.stdout.trim();
}

async function cMint({ kid, sub, scope, iat, exp, mtg = [] }) {
    const r = await run(TOOL, ['mint', secret, kid, AUD, sub, scope, String(iat), String(exp), ...mtg]);
    assert.equal(r.code, 0, `jwt_tool mint failed (${r.code}): ${r.stderr}`);
    return r.stdout.trim();
}

// jose signs claims (an object) with the header fields given; HS256 and kid k1 unless overridden.
function joseSign(claims, header = {}, signKey = key) {
    return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: 'k1', ...header })
        .sign(signKey);
}

// Claims tocsin accepts, issued at iat, with extra members added or replaced.
function standardClaims(extra = {}, iat = nowS()) {
    return { sub: 'u1', aud: AUD, iat, exp: iat + URL_LIFETIME_S, ...extra };
}

// A random sub of 1..SUB_MAX characters from a pool with the characters JSON and UTF-8 make
// interesting: quotes, backslashes, non-ASCII of 2, 3 and 4 bytes, U+2028, spaces.
function randomSub() {
    const pool = ['a', 'Z', '7', ' ', '"', '\\', '/', '<', 'é', 'ß', '€', '\u2028', '日', '😀', '𝄞', '_'];
    const n = randomInt(1, SUB_MAX + 1);
    let s = '';
    for (let i = 0; i < n; i++) {
        s += pool[randomInt(pool.length)];
    }
    return s;
}

function randomScopes() {
    return SCOPES.filter(() => randomInt(2) === 1);
}

function shuffle(list) {
    const out = [...list];
    for (let i = out.length - 1; i > 0; i--) {
        const j = randomInt(i + 1);
        [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
}

function randomMtg() {
    return Array.from({ length: randomInt(4) === 0 ? MTG_MAX : randomInt(0, 6) }, () => randomUUID());
}

test('jose-signed tokens verify in C with the same claims', async () => {
    for (let i = 0; i < ROUND_TRIPS; i++) {
        const scopes = randomScopes();
        // jose may order scope names in any way; C reports them in its own order.
        const shuffled = shuffle(scopes);
        const mtg = randomMtg();
        const sub = randomSub();
        const kid = `k_${i}-${randomBytes(6).toString('base64url')}`;
        const claims = standardClaims({ sub, scope: shuffled.join(' '), ...(mtg.length ? { mtg } : {}) });
        const token = await joseSign(claims, { kid });
        const got = await cVerify(token, { maxLifetime: URL_LIFETIME_S });
        assert.deepEqual(got, {
            kid, sub, scope: scopes.join(' '), iat: claims.iat, exp: claims.exp, mtg,
        }, `round trip ${i}: sub of ${[...sub].length} characters, ${mtg.length} meetings`);
    }
});

test('tokens minted in C pass jose jwtVerify with the same claims and header', async () => {
    for (let i = 0; i < ROUND_TRIPS; i++) {
        const scopes = randomScopes();
        const mtg = randomMtg();
        const sub = randomSub();
        const kid = `k${i}`;
        const iat = nowS();
        const exp = iat + (i % 2 ? DAY_S : URL_LIFETIME_S);
        const token = await cMint({ kid, sub, scope: scopes.join(' '), iat, exp, mtg });
        const { payload, protectedHeader } = await jwtVerify(token, key, {
            algorithms: ['HS256'], audience: AUD, typ: 'JWT', requiredClaims: ['sub', 'iat', 'exp'],
        });
        assert.deepEqual(protectedHeader, { alg: 'HS256', typ: 'JWT', kid });
        assert.deepEqual(payload, {
            sub, aud: AUD, iat, exp, scope: scopes.join(' '), ...(mtg.length ? { mtg } : {}),
        }, `round trip ${i}`);
        // And C reads back what it wrote.
        assert.equal((await cVerify(token)).sub, sub);
    }
});

test('a C-minted token under another secret fails in jose', async () => {
    const iat = nowS();
    const token = await cMint({ kid: 'k1', sub: 'u1', scope: 'push', iat, exp: iat + 60 });
    await assert.rejects(jwtVerify(token, new TextEncoder().encode(`${secret}x`), { algorithms: ['HS256'] }),
        { code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
    assert.equal(decodeProtectedHeader(token).kid, 'k1');
});

test('jose-signed tokens that tocsin policy forbids are refused for the right reason', async () => {
    // One clock for the whole test: the claims are built from iat and C checks them at iat.
    const iat = nowS();
    const claims = (extra) => standardClaims(extra, iat);
    const verify = (token, maxLifetime = DAY_S) => cVerify(token, { maxLifetime, at: iat });
    const ids = Array.from({ length: MTG_MAX + 1 }, () => randomUUID());
    const cases = [
        ['HS512 with the same key', () => joseSign(claims(), { alg: 'HS512' }), 'JWT_E_ALG'],
        ['alg none', async () => new UnsecuredJWT(claims()).encode(), 'JWT_E_ALG'],
        ['another secret', () => joseSign(claims(), {}, new TextEncoder().encode(`${secret}x`)),
            'JWT_E_SIGNATURE'],
        ['no kid', () => new SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).sign(key),
            'JWT_E_KID'],
        ['typ at+jwt', () => joseSign(claims(), { typ: 'at+jwt' }), 'JWT_E_TYP'],
        ['crit', () => joseSign(claims(), { crit: ['b64'], b64: true }), 'JWT_E_CRIT'],
        ['another audience', () => joseSign(claims({ aud: 'tocsin-staging' })), 'JWT_E_AUD'],
        ['aud list without tocsin', () => joseSign(claims({ aud: ['a', 'b'] })), 'JWT_E_AUD'],
        ['no exp', () => joseSign({ sub: 'u1', aud: AUD, iat }), 'JWT_E_EXP'],
        ['expired', () => joseSign(claims({ iat: iat - 200, exp: iat - 31 })), 'JWT_E_EXPIRED'],
        ['no iat', () => joseSign({ sub: 'u1', aud: AUD, exp: iat + 60 }), 'JWT_E_IAT'],
        ['iat in the future', () => joseSign(claims({ iat: iat + 120, exp: iat + 180 })),
            'JWT_E_IAT_FUTURE'],
        ['24 h + 1 s', () => joseSign(claims({ exp: iat + DAY_S + 1 })), 'JWT_E_LIFETIME'],
        ['not before later', () => joseSign(claims({ nbf: iat + 120 })), 'JWT_E_NBF_FUTURE'],
        ['no sub', () => joseSign({ aud: AUD, iat, exp: iat + 60 }), 'JWT_E_SUB'],
        ['sub of 201 characters', () => joseSign(claims({ sub: 'é'.repeat(SUB_MAX + 1) })),
            'JWT_E_SUB'],
        ['unknown scope', () => joseSign(claims({ scope: 'notifications admin' })), 'JWT_E_SCOPE'],
        ['101 meetings', () => joseSign(claims({ mtg: ids })), 'JWT_E_MTG'],
        ['an upper-case meeting id', () => joseSign(claims({ mtg: [ids[0].toUpperCase()] })),
            'JWT_E_MTG'],
    ];
    for (const [name, make, want] of cases) {
        assert.equal(await verify(await make()), want, name);
    }
    // The boundaries, accepted: 24 h exactly, 100 meetings, a sub of 200 four-byte characters.
    const ok = [
        claims({ exp: iat + DAY_S }),
        claims({ mtg: ids.slice(0, MTG_MAX) }),
        claims({ sub: '😀'.repeat(SUB_MAX) }),
    ];
    for (const c of ok) {
        const got = await verify(await joseSign(c));
        assert.equal(typeof got, 'object', `refused: ${got}`);
    }
    // 15 minutes is the bound for a token that travelled in a URL.
    const urlToken = await joseSign(claims({ exp: iat + URL_LIFETIME_S + 1 }));
    assert.equal(await verify(urlToken, URL_LIFETIME_S), 'JWT_E_LIFETIME');
    assert.equal(typeof (await verify(urlToken, DAY_S)), 'object');
});
