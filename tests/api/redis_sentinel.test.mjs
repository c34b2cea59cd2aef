// redis_sentinel.test.mjs -- Redis Sentinel (redis-sentinel://) with Debian's redis-server and
// redis-sentinel on loopback: 1 master, 1 replica, 3 Sentinels with short failover settings, 2
// tocsin replicas on the Sentinel URL, reminders created through the API falling due over 20 s,
// and the master killed with kill -9 in the middle. Every reminder reaches the webhook receiver,
// none is recorded twice, each is late by at most the failover time (the kill to the Sentinels'
// +switch-master, as this file sees it on a Sentinel of its own) plus 1 s, and both replicas come
// back on the new master: its notify-keyspace-events set by them (the replica was started without
// it), their subscriber's probe answered by it, keys of new reminders written to it.
// Then the two refusals that keep tocsin off a replica: a Sentinel whose answer names a replica
// (ROLE says slave: refused, and /readyz says so), and a master demoted under tocsin's connections
// (its READONLY reply drops the connection; the next one works once the node is master again).
// In scripts/test.sh's TLS run (TOCSIN_TEST_REDIS_TLS=1) every node and Sentinel listens with TLS
// only, with the suite's CA, and tocsin takes rediss-sentinel://.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import tls from 'node:tls';
import { arrivals, freePort, harness, ledgerReceiver, ownProcesses, recordedOnce, redisCli, remindersDue, sharedRedisTls,
    test, waitFor, webhookTenant, sleep, MIN } from './harness.mjs';

const MASTER = 'tocsinmaster';
const N = 100;              // reminders, due over SPREAD_MS
const LEAD_MS = 8000;       // the first falls due this long after the first is created
const SPREAD_MS = 20000;
const KILL_AFTER_MS = 6000; // the master is killed this long after the first one fell due
const SLACK_MS = 1000;      // the bound: failover time + this
const DOWN_AFTER_MS = 1000; // the Sentinels' down-after-milliseconds
const FAILOVER_TIMEOUT_MS = 5000;
const START_BOUND_MS = 15000;  // servers up, Sentinels agreeing on a quorum
const SWITCH_BOUND_MS = 20000; // kill to +switch-master on a loaded machine
const ARRIVE_MS = 15000;       // the last reminder arrives this long after it fell due at most
const SETTLE_MS = 1500;        // then wait this long for a (wrong) repeat
const READY_BOUND_MS = 10000;  // /readyz back on the new master after the switch

const h = await harness('redis_sentinel');
const TLS = sharedRedisTls(); // null: plain TCP
const scheme = TLS ? 'rediss' : 'redis';
// How a node or a Sentinel listens: port, or TLS only on it (also to each other: tls-replication).
const listen = (port) => (TLS ? ['port 0', `tls-port ${port}`, `tls-cert-file ${TLS.serverCert}`,
    `tls-key-file ${TLS.serverKey}`, `tls-ca-cert-file ${TLS.ca}`, 'tls-auth-clients no', 'tls-replication yes']
    : [`port ${port}`]);
const cliOf = (port, db = '/0') => redisCli(`${scheme}://127.0.0.1:${port}${db}`, TLS);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-sentinel-'));
const { start, stop } = ownProcesses();
after(() => fs.rmSync(dir, { recursive: true, force: true }));

async function dataNode(port, extra) {
    const d = fs.mkdtempSync(path.join(dir, 'node-'));
    const args = listen(port).flatMap((l) => [`--${l.split(' ')[0]}`, l.slice(l.indexOf(' ') + 1)]);
    const p = start('redis-server', [...args, '--bind', '127.0.0.1', '--save', '',
        '--appendonly', 'no', '--dir', d, '--daemonize', 'no', ...extra], `redis-server :${port}`);
    const cli = cliOf(port);
    assert.ok(await waitFor(async () => p.exited || (await cli.ping()), START_BOUND_MS, 50) === true, p.log);
    return { port, proc: p, cli };
}

async function sentinel(port, masterPort, master = MASTER) {
    const conf = path.join(fs.mkdtempSync(path.join(dir, 'sentinel-')), 'sentinel.conf');
    fs.writeFileSync(conf, [...listen(port), 'bind 127.0.0.1', 'daemonize no', `dir ${path.dirname(conf)}`,
        `sentinel monitor ${master} 127.0.0.1 ${masterPort} 2`,
        `sentinel down-after-milliseconds ${master} ${DOWN_AFTER_MS}`,
        `sentinel failover-timeout ${master} ${FAILOVER_TIMEOUT_MS}`,
        `sentinel parallel-syncs ${master} 1`, ''].join('\n'));
    const p = start('redis-sentinel', [conf], `redis-sentinel :${port}`);
    const cli = cliOf(port, '');
    assert.ok(await waitFor(async () => p.exited || (await cli.ping()), START_BOUND_MS, 50) === true, p.log);
    return { port, proc: p, cli };
}

// Subscribes to +switch-master on a Sentinel with a RESP socket: resolves with the time the
// message came and its new master port.
function watchSwitch(port) {
    return new Promise((resolve, reject) => {
        const hello = () => s.write('SUBSCRIBE +switch-master\r\n');
        const s = TLS ? tls.connect({ port, host: '127.0.0.1', ca: fs.readFileSync(TLS.ca) }, hello)
            : net.connect(port, '127.0.0.1', hello);
        let buf = '';
        s.on('data', (d) => {
            buf += d;
            const m = new RegExp(`${MASTER} \\S+ \\d+ \\S+ (\\d+)`).exec(buf);
            if (m) {
                resolve({ at: Date.now(), port: Number(m[1]) });
                s.destroy();
            }
        });
        s.on('error', reject);
        after(() => s.destroy());
    });
}

const ready = async (srv) => {
    const rz = await srv.req('GET', '/readyz');
    return rz.status === 200 && rz.json.checks.redis === 'ok' && rz.json.checks.subscriber === 'ok' &&
        rz.json.checks.notify_config === 'ok' ? rz : null;
};

const counter = async (srv, name) => {
    const t = (await srv.req('GET', '/metrics', { validate: false })).text;
    const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(t);
    assert.ok(m, `${name} in /metrics`);
    return Number(m[1]);
};

test('a master killed under load: all delivered, none recorded twice, late by the failover at most', async (t) => {
    const [mp, rp, ...sp] = await Promise.all([0, 1, 2, 3, 4].map(() => freePort()));
    // The master has the notify setting, the replica not: tocsin must set it on the new master.
    const master = await dataNode(mp, ['--notify-keyspace-events', 'Ex']);
    const replica = await dataNode(rp, ['--replicaof', '127.0.0.1', String(mp)]);
    const sentinels = [];
    for (const p of sp) {
        sentinels.push(await sentinel(p, mp));
    }
    // Ready for a failover: the replica in sync, every Sentinel seeing the replica and the others.
    const agreed = await waitFor(async () => {
        if (!/master_link_status:up/.test(await replica.cli.cmd('INFO', 'replication'))) {
            return false;
        }
        for (const s of sentinels) {
            const info = (await s.cli.cmd('SENTINEL', 'MASTER', MASTER)).split('\n');
            const field = (k) => Number(info[info.indexOf(k) + 1]);
            if (field('num-slaves') < 1 || field('num-other-sentinels') < 2) {
                return false;
            }
        }
        return true;
    }, START_BOUND_MS, 200);
    assert.ok(agreed, `sentinels: ${await sentinels[0].cli.cmd('SENTINEL', 'MASTER', MASTER)}`);

    const url = `${scheme}-sentinel://${sp.map((p) => `127.0.0.1:${p}`).join(',')}/${MASTER}/0`;
    const prefix = `sent${process.pid}`;
    const servers = [];
    for (const i of [1, 2]) {
        servers.push(await h.startServer({ TOCSIN_REDIS_URL: url, TOCSIN_REDIS_PREFIX: prefix,
            TOCSIN_INSTANCE_ID: `sentinel-${i}`, TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1', TOCSIN_LOG_LEVEL: 'info' }));
    }
    for (const srv of servers) {
        assert.ok(await waitFor(() => ready(srv), START_BOUND_MS, 100), srv.log);
    }
    const rx = await ledgerReceiver(t);
    const key = await webhookTenant(servers[0], rx, 'sentinel');

    // N reminders due from t0 on, over SPREAD_MS, created through both replicas (armed in Redis).
    const t0 = Date.now() + LEAD_MS;
    const due = await remindersDue(servers, key, N, t0, SPREAD_MS);
    assert.ok(Date.now() < t0, 'created before the first one fell due');
    assert.equal((await master.cli.keys(`${prefix}:rem:*`)).length, N, 'every reminder armed on the master');

    const switched = watchSwitch(sp[0]);
    await sleep(t0 + KILL_AFTER_MS - Date.now());
    const killedAt = Date.now();
    await stop(master.proc, 'SIGKILL');
    const sw = await Promise.race([switched, sleep(SWITCH_BOUND_MS).then(() => null)]);
    assert.ok(sw, `no +switch-master within ${SWITCH_BOUND_MS} ms:\n${sentinels[0].proc.log}`);
    assert.equal(sw.port, rp, 'the replica is the new master');
    const failoverMs = sw.at - killedAt;

    // Both replicas back on the new master: subscribed, and their probe's expired event came.
    for (const srv of servers) {
        const back = await waitFor(() => ready(srv), READY_BOUND_MS, 100);
        assert.ok(back, `/readyz on the new master: ${(await srv.req('GET', '/readyz')).text}\n${srv.log}`);
    }
    const readyMs = Date.now() - sw.at;
    const notify = await replica.cli.cmd('CONFIG', 'GET', 'notify-keyspace-events');
    assert.match(notify.split('\n')[1], /E/, 'tocsin set notify-keyspace-events on the new master');
    assert.match(notify.split('\n')[1], /x|A/, notify);
    for (const srv of servers) {
        assert.ok(await counter(srv, 'tocsin_redis_failovers_total') >= 1, srv.log);
        assert.match(srv.log, new RegExp(`the redis master is now 127\\.0\\.0\\.1:${rp}`), srv.log);
    }
    // A reminder created now is armed on the new master (the API threads moved too).
    const later = await servers[1].req('POST', '/v1/meetings', { key, json: { title: 'after',
        starts_at: new Date(Date.now() + 60 * MIN).toISOString(), reminders: [{ minutes_before: 5 }] } });
    assert.equal(later.status, 201, later.text);
    assert.equal((await replica.cli.keys(`${prefix}:rem:${later.json.reminders[0].id}:*`)).length, 1);

    // Every reminder arrived; each is late by at most the failover time + SLACK_MS.
    const { got, missing, late, repeats } = await arrivals(rx, due, t0 + SPREAD_MS + ARRIVE_MS, SETTLE_MS);
    assert.deepEqual(missing, [], `all delivered (${got.length}/${N})`);
    const bound = failoverMs + SLACK_MS;
    t.diagnostic(`${scheme}-sentinel://: failover ${failoverMs} ms (kill to +switch-master), /readyz back ${readyMs} ms after it; ` +
        `lateness p50 ${late[Math.floor(N / 2)]} max ${late[N - 1]} ms (bound ${bound} ms); ` +
        `${repeats} repeated on the wire`);
    assert.ok(late[N - 1] <= bound, `max lateness ${late[N - 1]} ms <= ${bound} ms`);
    assert.ok(late[0] >= 0, 'none early');
    // Recorded once: every reminder fired, one outbox row each, delivered.
    assert.equal(await recordedOnce(h, due), `${N}|${N}|${N}`, 'fired | outbox rows | delivered');
    for (const srv of servers) {
        await srv.stop();
    }
});

test('a replica is refused: ROLE after the Sentinels\' answer, READONLY on a demoted master', async () => {
    const [ap, bp, cp, sp] = await Promise.all([0, 1, 2, 3].map(() => freePort()));
    const a = await dataNode(ap, ['--notify-keyspace-events', 'Ex']);
    const b = await dataNode(bp, ['--replicaof', '127.0.0.1', String(ap)]);
    const c = await dataNode(cp, []);
    // A Sentinel told that the replica b is the master "stale" (as one whose view is old).
    await sentinel(sp, bp, 'stale');
    const refused = await h.startServer({ TOCSIN_REDIS_URL: `${scheme}-sentinel://127.0.0.1:${sp}/stale/0` });
    let rz;
    const said = await waitFor(async () => {
        rz = await refused.req('GET', '/readyz');
        return /is not the master \(ROLE: slave\)/.test(rz.json.redis_error ?? '');
    }, START_BOUND_MS, 100);
    assert.ok(said, `/readyz: ${rz?.text}\n${refused.log}`);
    assert.equal(rz.status, 200, 'Redis never fails readiness');
    assert.equal(rz.json.checks.subscriber, 'down', rz.text);
    assert.equal((await b.cli.keys('*:probe:*')).length, 0, 'nothing written through the replica');
    await refused.stop();

    // a demoted under a replica's connections: its writes answer READONLY, which drops them.
    const srv = await h.startServer({ TOCSIN_REDIS_URL: `${scheme}://127.0.0.1:${ap}/0` });
    assert.ok(await waitFor(() => ready(srv), START_BOUND_MS, 100), srv.log);
    const key = await srv.createKey('demoted');
    const meeting = (title) => srv.req('POST', '/v1/meetings', { key, json: { title,
        starts_at: new Date(Date.now() + 60 * MIN).toISOString(), reminders: [{ minutes_before: 5 }] } });
    await a.cli.cmd('REPLICAOF', '127.0.0.1', String(cp));
    const during = await meeting('during');
    assert.equal(during.status, 201, 'the API works without the mirror');
    assert.ok(await waitFor(() => /answered READONLY \(a replica now\); reconnecting/.test(srv.log), START_BOUND_MS, 100), srv.log);
    await a.cli.cmd('REPLICAOF', 'NO', 'ONE');
    const back = await meeting('back');
    assert.equal(back.status, 201, back.text);
    const armed = await waitFor(async () => (await a.cli.keys(`${srv.prefix}:rem:${back.json.reminders[0].id}:*`)).length === 1,
        START_BOUND_MS, 100);
    assert.ok(armed, `armed on a once it is master again:\n${srv.log}`);
    await srv.stop();
    await stop(c.proc);
    await stop(b.proc);
    await stop(a.proc);
});
