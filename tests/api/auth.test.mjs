// auth.test.mjs -- bearer API keys and tenant isolation: missing, malformed, unknown and revoked
// keys answer 401 with WWW-Authenticate: Bearer; another tenant's meeting is a 404, never a 403.
import { before } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { harness, test, isoIn, DAY, run, freePort } from './harness.mjs';

const h = await harness('auth');
let srv;
let keyA;
let keyB;

before(async () => {
    // No cache: a revoked key must be refused by the very next request.
    srv = await h.startServer({ TOCSIN_AUTH_CACHE_MS: '0' });
    keyA = await srv.createKey('auth-tenant-a');
    keyB = await srv.createKey('auth-tenant-b');
});

const prefixOf = (k) => k.split('_')[1];

function assert401(r, what) {
    assert.equal(r.status, 401, `${what}: ${r.text}`);
    assert.match(r.header('www-authenticate') || '', /^Bearer\b/, `${what}: WWW-Authenticate`);
    assert.match(r.contentType || '', /^application\/problem\+json/, what);
    assert.equal(r.json.code, 'unauthorized', what);
}

function randomKey() {
    return `tsk_${crypto.randomBytes(4).toString('hex')}_${crypto.randomBytes(32).toString('base64url')}`;
}

test('keys create prints one key per call; keys list shows the prefixes and tenants', async () => {
    assert.notEqual(keyA, keyB);
    const r = await srv.keys(['list']);
    assert.equal(r.code, 0, r.stderr);
    for (const [k, tenant] of [[keyA, 'auth-tenant-a'], [keyB, 'auth-tenant-b']]) {
        const line = r.stdout.split('\n').find((l) => l.includes(prefixOf(k)));
        assert.ok(line, `keys list shows ${prefixOf(k)}:\n${r.stdout}`);
        assert.ok(line.includes(tenant), `line names the tenant: ${line}`);
        assert.match(line, /\blive\b/);
        // The secret is everything after "tsk_<prefix>_" (base64url, so it may hold '_' itself).
        assert.ok(!line.includes(k.slice(13)), 'keys list never shows the secret part');
    }
});

test('keys subcommands: usage errors exit 2', async () => {
    assert.equal((await srv.keys(['create'])).code, 2, 'create without --tenant');
    assert.equal((await srv.keys(['frobnicate'])).code, 2, 'unknown subcommand');
    const help = await srv.keys(['create', '--help']);
    assert.equal(help.code, 0);
});

test('no key, malformed, unknown keys and wrong schemes: 401 + WWW-Authenticate: Bearer', async () => {
    const valid = keyA;
    const cases = {
        'no header': null,
        'empty header': '',
        'Bearer alone': 'Bearer',
        'Bearer space': 'Bearer ',
        'Basic scheme': `Basic ${Buffer.from('user:pass').toString('base64')}`,
        'Token scheme': `Token ${valid}`,
        'key without scheme': valid,
        'unknown key, right shape': `Bearer ${randomKey()}`,
        'known prefix, wrong secret': `Bearer tsk_${prefixOf(valid)}_${crypto.randomBytes(32).toString('base64url')}`,
        'truncated key': `Bearer ${valid.slice(0, -1)}`,
        'key plus a byte': `Bearer ${valid}x`,
        'key with trailing junk': `Bearer ${valid} extra`,
        'uppercase prefix': `Bearer ${valid.toUpperCase()}`,
        'not a key': 'Bearer hunter2',
        'very long': `Bearer ${'a'.repeat(4000)}`,
    };
    for (const [what, auth] of Object.entries(cases)) {
        const headers = auth === null ? {} : { Authorization: auth };
        assert401(await srv.req('GET', '/v1/meetings', { headers }), `list, ${what}`);
        const p = await srv.req('POST', '/v1/meetings', { headers, json: { title: 'x', starts_at: isoIn(DAY) } });
        assert401(p, `create, ${what}`);
    }
    const g = await srv.req('GET', '/v1/meetings/00000000-0000-4000-8000-000000000000', {});
    assert401(g, 'get without a key');
    // Health probes need no key.
    assert.equal((await srv.req('GET', '/healthz', {})).status, 200);
});

test('tenant isolation: B cannot see or change A\'s meeting (404, never 403)', async () => {
    const c = await srv.req('POST', '/v1/meetings', { key: keyA, json: { title: 'A only', starts_at: isoIn(2 * DAY) } });
    assert.equal(c.status, 201, c.text);
    const path = `/v1/meetings/${c.json.id}`;
    const tries = [
        ['GET', {}],
        ['PUT', { json: { title: 'stolen', starts_at: isoIn(DAY) } }],
        ['PATCH', { json: { title: 'stolen' } }],
        ['DELETE', {}],
    ];
    for (const [method, extra] of tries) {
        const r = await srv.req(method, path, { key: keyB, ...extra });
        assert.equal(r.status, 404, `${method} by B: ${r.text}`);
        assert.equal(r.json.code, 'meeting_not_found');
    }
    const listB = await srv.req('GET', '/v1/meetings', { key: keyB });
    assert.equal(listB.status, 200);
    assert.ok(!listB.json.items.some((m) => m.id === c.json.id), 'B\'s list does not show A\'s meeting');

    const stillThere = await srv.req('GET', path, { key: keyA });
    assert.equal(stillThere.status, 200);
    assert.deepEqual(stillThere.json, c.json, 'nothing B tried changed the meeting');
    const listA = await srv.req('GET', '/v1/meetings', { key: keyA });
    assert.ok(listA.json.items.some((m) => m.id === c.json.id));
});

test('two keys of one tenant see the same meetings', async () => {
    const keyA2 = await srv.createKey('auth-tenant-a');
    const c = await srv.req('POST', '/v1/meetings', { key: keyA, json: { title: 'shared', starts_at: isoIn(2 * DAY) } });
    const g = await srv.req('GET', `/v1/meetings/${c.json.id}`, { key: keyA2 });
    assert.equal(g.status, 200, g.text);
});

test('a revoked key is refused at once (TOCSIN_AUTH_CACHE_MS=0) and listed as revoked', async () => {
    const k = await srv.createKey('auth-tenant-c');
    const ok = await srv.req('GET', '/v1/meetings', { key: k });
    assert.equal(ok.status, 200, ok.text);

    const rv = await srv.keys(['revoke', prefixOf(k)]);
    assert.equal(rv.code, 0, rv.stderr);
    assert401(await srv.req('GET', '/v1/meetings', { key: k }), 'revoked key');

    const list = await srv.keys(['list']);
    const line = list.stdout.split('\n').find((l) => l.includes(prefixOf(k)));
    assert.match(line || '', /\brevoked\b/, `keys list marks the key revoked: ${line}`);
    // The other keys keep working.
    assert.equal((await srv.req('GET', '/v1/meetings', { key: keyA })).status, 200);

    const unknown = await srv.keys(['revoke', '00000000']);
    assert.notEqual(unknown.code, 0, 'revoking an unknown prefix is an error');
});

// A person at a prompt with the wrong (or no) TOCSIN_DATABASE_URL learns it in seconds, not after
// serve's start-up wait (TOCSIN_DB_WAIT_S, 60 s by default), and the message names the variable.
test('keys list without a database gives up within seconds and names TOCSIN_DATABASE_URL', async () => {
    const port = await freePort(); // nothing listens there
    const env = { ...srv.env, TOCSIN_DATABASE_URL: `postgresql://127.0.0.1:${port}/nothing` };
    delete env.TOCSIN_DB_WAIT_S;
    const t0 = Date.now();
    const r = await run(h.env.bin, ['keys', 'list'], { env });
    const took = Date.now() - t0;
    assert.equal(r.code, 1, `exit 1: ${r.stderr}`);
    assert.match(r.stderr, /TOCSIN_DATABASE_URL/, r.stderr);
    assert.equal(r.stdout, '', 'no header without a database');
    assert.ok(took < 30000, `gave up after ${took} ms, not the 60 s start-up wait`);
});

// `keys list` prints a header, then one line per key: prefix, tenant, created (RFC 3339, UTC),
// state: four tab-separated fields.
function assertListLines(stdout, what) {
    const [header, ...lines] = stdout.split('\n').filter((l) => l !== '');
    assert.equal(header, 'PREFIX\tTENANT\tCREATED\tSTATE', `${what}: the header line`);
    for (const l of lines) {
        assert.match(l, /^[0-9a-f]{8}\t[^\t]+\t\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\t(live|revoked)$/,
            `${what}: a forged or broken line ${JSON.stringify(l)}`);
        const created = Date.parse(l.split('\t')[2]);
        assert.ok(Math.abs(created - Date.now()) < 86400e3, `${what}: created is a time of today: ${l}`);
    }
    return lines;
}

test('tenant names are bounded: control bytes refused by keys create, escaped by keys list', async () => {
    const before = assertListLines((await srv.keys(['list'])).stdout, 'before');
    for (const bad of ['evil\n00000000\tforged\t0\tlive', 'esc\x1b[2J', 'tab\there', 'sp ace', 'n'.repeat(101), '']) {
        const r = await srv.keys(['create', '--tenant', bad]);
        assert.equal(r.code, 2, `--tenant ${JSON.stringify(bad)}: exit 2, got ${r.code}`);
        assert.equal(r.stdout, '', 'no key printed');
        assert.match(r.stderr, /--tenant/, r.stderr);
    }
    assert.equal(assertListLines((await srv.keys(['list'])).stdout, 'after refusals').length, before.length,
        'no key was made for a refused name');
    assert.ok(await srv.createKey('n'.repeat(100)), 'a name of 100 bytes is fine');

    // A name stored before the bound (made here by SQL) cannot forge lines either: escaped.
    const k = await srv.createKey('auth-legacy');
    await h.sql("UPDATE tenants SET name = E'legacy\\n00000000\\tforged\\t0\\tlive\\x1b[31m' WHERE name = 'auth-legacy'");
    const lines = assertListLines((await srv.keys(['list'])).stdout, 'legacy name');
    assert.equal(lines.length, before.length + 2);
    const line = lines.find((l) => l.startsWith(prefixOf(k)));
    assert.equal(line.split('\t')[1], 'legacy\\x0a00000000\\x09forged\\x090\\x09live\\x1b[31m');
});
