// readiness.test.mjs -- start-up and readiness as a deployment sees them: tocsin started before
// PostgreSQL waits for it (bounded, logged), or for `tocsin migrate` when it must not migrate
// itself; /readyz follows PostgreSQL and the migrations only, and reports Redis in its body and in
// /metrics; a Redis that hangs (SIGSTOP) slows no API call; a Redis ACL user without CONFIG
// (managed Redis) authenticates as that user and the notify check works with a probe key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { harness, freePort, isoIn, redisCli, run, sleep, waitFor, MIN } from './harness.mjs';

// A hung Redis may cost one API call a command timeout (200 ms) once per reconnect backoff; a
// second is far above that and far below the 1 s command timeout stacking up per call.
const CALL_BOUND_MS = 1000;
const PROBE_RETRY_MS = 5000; // EXPIRY_PROBE_RETRY_MS
const REPAIR_BOUND_MS = 10000;

const h = await harness('readiness');

// A TCP forwarder to the test PostgreSQL on a port nobody listens on until open() is called: from
// tocsin's side, PostgreSQL is not there yet, then it is.
async function latePostgres() {
    const target = new URL(h.dbUrl);
    const port = await freePort();
    const socks = new Set();
    const server = net.createServer((down) => {
        const up = net.connect(Number(target.port), target.hostname);
        for (const s of [down, up]) {
            socks.add(s);
            s.on('error', () => {});
            s.on('close', () => socks.delete(s));
        }
        down.pipe(up);
        up.pipe(down);
    });
    const url = new URL(h.dbUrl);
    url.port = String(port);
    return {
        url: url.toString(),
        open: () => new Promise((resolve) => server.listen(port, '127.0.0.1', resolve)),
        close: () => {
            for (const s of socks) {
                s.destroy();
            }
            return new Promise((resolve) => server.close(resolve));
        },
    };
}

const metric = (text, name) => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
};

test('TOCSIN_MIGRATE_ON_START=0: serve waits for `tocsin migrate`, then starts', async () => {
    const srv = await h.newServer({ TOCSIN_MIGRATE_ON_START: '0', TOCSIN_LOG_LEVEL: 'info' });
    const starting = srv.start();
    await sleep(1500);
    assert.match(srv.log, /waiting for tocsin migrate/, srv.log);
    assert.equal(srv.proc.exited, null, 'serve is still waiting, not gone');
    const m = await run(h.env.bin, ['migrate'], { env: srv.env });
    assert.equal(m.code, 0, m.stderr);
    await starting;
    const rz = await srv.req('GET', '/readyz');
    assert.equal(rz.status, 200, rz.text);
    assert.equal(rz.json.checks.migrations, 'ok');
    await srv.stop();
});

test('started before PostgreSQL: waits with logged backoff, then serves', async () => {
    const pg = await latePostgres();
    try {
        const srv = await h.newServer({ TOCSIN_DATABASE_URL: pg.url, TOCSIN_LOG_LEVEL: 'info' });
        const starting = srv.start();
        await waitFor(() => /attempt 2; retrying/.test(srv.log), 5000, 50);
        assert.match(srv.log, /attempt 1; retrying in 250 ms/, srv.log);
        assert.match(srv.log, /attempt 2; retrying in 500 ms/, srv.log);
        assert.equal(srv.proc.exited, null, 'still waiting');
        await pg.open();
        await starting;
        assert.match(srv.log, /database reachable after \d+ attempts/, srv.log);
        const rz = await srv.req('GET', '/readyz');
        assert.equal(rz.status, 200, rz.text);
        assert.deepEqual([rz.json.status, rz.json.checks.postgres, rz.json.checks.migrations], ['ready', 'ok', 'ok']);
        await srv.stop();
    } finally {
        await pg.close();
    }
});

test('PostgreSQL never comes: exit 1 after TOCSIN_DB_WAIT_S, naming the setting', async () => {
    const url = new URL(h.dbUrl);
    url.port = String(await freePort());
    const env = h.serverEnv({ TOCSIN_DATABASE_URL: url.toString(), TOCSIN_DB_WAIT_S: '2', TOCSIN_HTTP_ADDR: `127.0.0.1:${await freePort()}` });
    const t0 = Date.now();
    const r = await run(h.env.bin, ['serve'], { env });
    const took = Date.now() - t0;
    assert.equal(r.code, 1, r.stderr);
    assert.ok(took >= 2000 && took < 8000, `gave up after ${took} ms`);
    assert.match(r.stderr, /gave up after \d+ attempts in \d+ ms, TOCSIN_DB_WAIT_S/, r.stderr);
    // One line per attempt, not a flood: 250 + 500 + 1000 + the rest of 2 s.
    const attempts = r.stderr.split('\n').filter((l) => /attempt \d+; retrying/.test(l)).length;
    assert.ok(attempts >= 3 && attempts <= 5, `${attempts} retry lines:\n${r.stderr}`);
});

test('a bad TOCSIN_DATABASE_URL or TOCSIN_REDIS_URL stops the start with exit 2 naming the variable', async () => {
    const cases = [
        [{ TOCSIN_DATABASE_URL: 'postgresql://db/tocsin?sslmod=require' }, /^tocsin: TOCSIN_DATABASE_URL: .*sslmod/],
        [{ TOCSIN_REDIS_URL: 'redisx://:pw@redis:6380/0' }, /^tocsin: TOCSIN_REDIS_URL: .*rediss:\/\/ \(TLS\)/],
        [{ TOCSIN_REDIS_URL: 'redis://:pw@redis:6380/0', TOCSIN_REDIS_TLS_CA: '/ca.pem' }, /^tocsin: TOCSIN_REDIS_TLS_CA: .*rediss:\/\//],
        [{ TOCSIN_REDIS_URL: 'redis://h/0?db=1' }, /^tocsin: TOCSIN_REDIS_URL: .*query/],
    ];
    for (const [extra, want] of cases) {
        const r = await run(h.env.bin, ['serve'], { env: h.serverEnv(extra) });
        assert.equal(r.code, 2, `${JSON.stringify(extra)}: ${r.stderr}`);
        assert.match(r.stderr, want);
        assert.doesNotMatch(r.stderr, /pw/, 'the password is not echoed');
    }
});

test('Redis hung (SIGSTOP): API calls stay fast, /readyz stays 200 and reports Redis down; SIGCONT: repaired', async () => {
    const redis = await h.startRedis();
    const srv = await h.startServer({ TOCSIN_REDIS_URL: redis.url, TOCSIN_HTTP_THREADS: '2' });
    const key = await srv.createKey('hung');
    const create = async (title) => {
        const r = await srv.req('POST', '/v1/meetings', {
            key, json: { title, starts_at: isoIn(40 * MIN), reminders: [{ minutes_before: 10 }] },
        });
        assert.equal(r.status, 201, r.text);
        return r.json;
    };
    await create('before');
    process.kill(redis.pid, 'SIGSTOP');
    const made = [];
    try {
        const slow = [];
        const end = Date.now() + 4000; // several reconnect backoffs of every HTTP thread
        while (Date.now() < end) {
            for (const [what, call] of [
                ['POST', async () => made.push(await create('during'))],
                ['GET', async () => assert.equal((await srv.req('GET', `/v1/meetings/${made.at(-1).id}`, { key })).status, 200)],
                ['DELETE', async () => assert.equal((await srv.req('DELETE', `/v1/meetings/${(await create('gone')).id}`, { key })).status, 204)],
                ['readyz', async () => {
                    const rz = await srv.req('GET', '/readyz');
                    assert.equal(rz.status, 200, rz.text);
                }],
            ]) {
                const t0 = Date.now();
                await call();
                const took = Date.now() - t0;
                if (took > CALL_BOUND_MS) {
                    slow.push(`${what} ${took} ms`);
                }
            }
        }
        assert.deepEqual(slow, [], 'calls slower than the bound while Redis hangs');
        let rz;
        const seen = await waitFor(async () => {
            rz = await srv.req('GET', '/readyz');
            return rz.status === 200 && rz.json.checks.redis === 'down';
        }, 5000, 100);
        assert.ok(seen, `/readyz reports the hung Redis: ${rz.text}`);
        const mt = (await srv.req('GET', '/metrics', { validate: false })).text;
        assert.equal(metric(mt, 'tocsin_redis_up'), 0, mt);
    } finally {
        process.kill(redis.pid, 'SIGCONT');
    }
    const back = await waitFor(async () => {
        const rz = await srv.req('GET', '/readyz');
        return rz.json.checks.redis === 'ok';
    }, REPAIR_BOUND_MS, 100);
    assert.ok(back, 'Redis reported ok again after SIGCONT');
    // What the API wrote while Redis hung is mirrored by the repair.
    for (const m of made) {
        const want = `${srv.prefix}:rem:${m.reminders[0].id}:${Date.parse(m.reminders[0].fire_at)}`;
        const ok = await waitFor(async () => (await redis.cli.keys(want)).length === 1, REPAIR_BOUND_MS, 100);
        assert.ok(ok, `${want} re-armed after SIGCONT`);
    }
    await srv.stop();
    await redis.stop();
});

test('Redis ACL user without CONFIG: AUTH user password, percent-decoded; the notify check uses a probe key', async () => {
    const redis = await h.startRedis();
    const password = 'p@ss:w/rd% #?';
    const admin = redis.url.replace('://', '://admin:adminpw@'); // rediss:// in the TLS run
    await redis.cli.cmd('ACL', 'SETUSER', 'admin', 'on', '>adminpw', '~*', '&*', '+@all');
    await redis.cli.cmd('ACL', 'SETUSER', 'tocsin', 'on', `>${password}`, '~*', '&*', '+@all', '-config');
    await redis.cli.cmd('ACL', 'SETUSER', 'default', 'off');
    const cli = redisCli(admin, redis.tls);
    assert.equal(await cli.cmd('CONFIG', 'GET', 'notify-keyspace-events'), 'notify-keyspace-events\n');

    const url = redis.url.replace('://', `://tocsin:${encodeURIComponent(password)}@`);
    const srv = await h.startServer({ TOCSIN_REDIS_URL: url });
    // Every connection of tocsin is authenticated as the ACL user.
    const users = async () => (await cli.cmd('CLIENT', 'LIST')).split('\n')
        .filter((l) => !/ name=redis-cli| cmd=client/.test(l))
        .map((l) => / user=(\S+)/.exec(l)?.[1]);
    await waitFor(async () => (await users()).length >= 3, 5000, 100);
    const seen = await users();
    assert.ok(seen.length >= 3 && seen.every((u) => u === 'tocsin'), `client users: ${JSON.stringify(seen)}`);

    // CONFIG is refused to this user and the setting is off: the probe's event never comes.
    let rz;
    const missing = await waitFor(async () => {
        rz = await srv.req('GET', '/readyz');
        return rz.json.checks.notify_config === 'misconfigured';
    }, 5000, 100);
    assert.ok(missing, `/readyz names the missing setting: ${rz.text}`);
    assert.equal(rz.status, 200, 'a Redis setting never takes the replica out of rotation');
    assert.equal(rz.json.checks.redis, 'ok', rz.text);
    assert.match(rz.json.detail, /notify-keyspace-events/);
    assert.match(srv.log, /notify-keyspace-events must include E and x.*NOPERM/, srv.log);
    assert.equal(metric((await srv.req('GET', '/metrics', { validate: false })).text, 'tocsin_redis_notify_ok'), 0);
    assert.equal(await cli.cmd('CONFIG', 'GET', 'notify-keyspace-events'), 'notify-keyspace-events\n', 'tocsin could not change it');

    // The operator fixes it (as a managed Redis's parameter group would): the next probe sees it.
    await cli.cmd('CONFIG', 'SET', 'notify-keyspace-events', 'Ex');
    const fixed = await waitFor(async () => {
        rz = await srv.req('GET', '/readyz');
        return rz.json.checks.notify_config === 'ok';
    }, PROBE_RETRY_MS + 5000, 200);
    assert.ok(fixed, `the probe sees expired events once the setting has E and x: ${rz.text}`);
    assert.equal(rz.json.detail, undefined, rz.text);
    assert.equal(metric((await srv.req('GET', '/metrics', { validate: false })).text, 'tocsin_redis_notify_ok'), 1);
    // The probe keys do not pile up.
    assert.deepEqual(await cli.keys(`${srv.prefix}:probe:*`), []);
    await srv.stop();
    await redis.stop();
});
