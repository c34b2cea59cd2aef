// redis_cluster.test.mjs -- Redis Cluster (redis-cluster://) with Debian's redis-server on
// loopback: 3 masters and 3 replicas made by redis-cli --cluster create, none of them with
// notify-keyspace-events (tocsin must set it on every master), 2 tocsin replicas on the seeds,
// reminders created through the API falling due over 20 s. Under that load, first a reshard
// (redis-cli --cluster reshard moves slots and their keys from one master to another), then a
// master killed with kill -9 (its replica promoted by the cluster). Every reminder reaches the
// webhook receiver and is recorded once; the keys were spread over every master; /readyz and
// /metrics (tocsin_redis_master_up) name the master that is down while it is; both replicas come
// back subscribed to the promoted one, whose notify setting they set; a reminder created
// afterwards is armed on the master of its slot. Before the load, one slot is migrated by hand to
// check -ASK (ASKING sent to the importing master) and then -MOVED.
// The nodes listen on TOCSIN_TEST_REDIS_CLUSTER_TEST_PORT and the 5 ports after it (default
// 7110; each node's cluster bus is its port + 10000). In scripts/test.sh's TLS run
// (TOCSIN_TEST_REDIS_TLS=1) every node listens with TLS only, with the suite's CA, the bus and
// replication too (tls-cluster, tls-replication), and tocsin takes rediss-cluster://.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { arrivals, harness, ledgerReceiver, ownProcesses, recordedOnce, redisCli, remindersDue, run, sharedRedisTls,
    test, waitFor, webhookTenant, sleep, MIN } from './harness.mjs';

const BASE = Number(process.env.TOCSIN_TEST_REDIS_CLUSTER_TEST_PORT ?? 7110);
const NODES = 6;              // 3 masters, 3 replicas
const NODE_TIMEOUT_MS = 1500; // cluster-node-timeout: a master is failed over after about this
const N = 90;                 // reminders, due over SPREAD_MS
const LEAD_MS = 8000;         // the first falls due this long after the first is created
const SPREAD_MS = 20000;
const RESHARD_AFTER_MS = 2000; // the reshard starts this long after the first fell due
const RESHARD_SLOTS = 1000;
const KILL_AFTER_MS = 10000;   // the kill, this long after the first fell due (after the reshard)
const START_BOUND_MS = 20000;  // nodes up, the cluster ok, replicas in sync
const RESHARD_BOUND_MS = 30000;
const PROMOTE_BOUND_MS = 20000; // kill to the replica serving the slots
const READY_BOUND_MS = 15000;   // /readyz back after the promotion
const ARRIVE_MS = 15000;        // the last reminder arrives this long after it fell due at most
const SETTLE_MS = 1500;         // then wait this long for a (wrong) repeat

const h = await harness('redis_cluster');
const TLS = sharedRedisTls(); // null: plain TCP
const scheme = TLS ? 'rediss' : 'redis';
const listen = (port) => (TLS ? ['--port', '0', '--tls-port', String(port), '--tls-cert-file', TLS.serverCert,
    '--tls-key-file', TLS.serverKey, '--tls-ca-cert-file', TLS.ca, '--tls-auth-clients', 'no', '--tls-cluster', 'yes',
    '--tls-replication', 'yes'] : ['--port', String(port)]);
const cliTls = TLS ? ['--tls', '--cacert', TLS.ca] : []; // for redis-cli --cluster
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-cluster-'));
const { start, stop } = ownProcesses();
after(() => fs.rmSync(dir, { recursive: true, force: true }));
const cliOf = (port) => redisCli(`${scheme}://127.0.0.1:${port}/0`, TLS);

async function node(port) {
    const d = fs.mkdtempSync(path.join(dir, 'node-'));
    const p = start(h.env.redisServerBin, [...listen(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
        '--dir', d, '--daemonize', 'no', '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf',
        '--cluster-node-timeout', String(NODE_TIMEOUT_MS)], `redis-server :${port}`);
    const cli = cliOf(port);
    assert.ok(await waitFor(async () => p.exited || (await cli.ping()), START_BOUND_MS, 50) === true, p.log);
    return { port, proc: p, cli };
}

// CLUSTER NODES as seen by the node on port: [{ id, port, master, of (its master's id), slots }].
async function topology(port) {
    const out = await cliOf(port).cmd('CLUSTER', 'NODES');
    return out.split('\n').filter((l) => l.trim() !== '').map((l) => {
        const f = l.split(' ');
        const slots = f.slice(8).filter((s) => /^\d/.test(s)).reduce((a, s) => {
            const [lo, hi] = s.split('-').map(Number);
            return a + (hi ?? lo) - lo + 1;
        }, 0);
        return { id: f[0], port: Number(/:(\d+)@/.exec(f[1])[1]), master: /master/.test(f[2]) && !/fail/.test(f[2]),
            of: f[3], slots };
    });
}

const clusterOk = async (port) => /cluster_state:ok/.test(await cliOf(port).cmd('CLUSTER', 'INFO'));

const ready = async (srv) => {
    const rz = await srv.req('GET', '/readyz');
    return rz.status === 200 && rz.json.checks.redis === 'ok' && rz.json.checks.subscriber === 'ok' &&
        rz.json.checks.notify_config === 'ok' ? rz : null;
};

// A slot being migrated by hand (SETSLOT IMPORTING/MIGRATING): its master answers -ASK for a
// key it does not hold, and tocsin must send ASKING and the SET to the importing master; once the
// slot is handed over (MIGRATE, SETSLOT NODE), the old master's -MOVED must be followed.
async function askedAndMoved(srv, key, masters, prefix) {
    const m = await srv.req('POST', '/v1/meetings', { key, json: { title: 'ask',
        starts_at: new Date(Date.now() + 60 * MIN).toISOString(), reminders: [{ minutes_before: 5 }] } });
    assert.equal(m.status, 201, m.text);
    const id = Number(m.json.reminders[0].id);
    const glob = `${prefix}:{s${id % 256}}:rem:${id}:*`;
    const slot = Number(await cliOf(masters[0].port).cmd('CLUSTER', 'KEYSLOT', `{s${id % 256}}`));
    const holds = async (x) => (await cliOf(x.port).keys(glob)).length;
    const src = (await Promise.all(masters.map(holds))).findIndex((n) => n === 1);
    assert.ok(src >= 0, `the reminder's key on one master (${glob})`);
    const [from, to] = [masters[src], masters[(src + 1) % masters.length]];
    await cliOf(to.port).cmd('CLUSTER', 'SETSLOT', slot, 'IMPORTING', from.id);
    await cliOf(from.port).cmd('CLUSTER', 'SETSLOT', slot, 'MIGRATING', to.id);
    const moved = await srv.req('PATCH', `/v1/meetings/${m.json.id}`, { key,
        json: { starts_at: new Date(Date.now() + 70 * MIN).toISOString() } });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(await holds(to), 1, 'the new key went to the importing master (ASK followed)');
    assert.equal(await holds(from), 0, 'the old key was deleted where it was');
    // Hand the slot over: what is left in it moves, then every master learns the new owner.
    const left = (await cliOf(from.port).cmd('CLUSTER', 'GETKEYSINSLOT', slot, 1000)).split('\n').filter(Boolean);
    if (left.length > 0) {
        await cliOf(from.port).cmd('MIGRATE', '127.0.0.1', to.port, '', 0, 5000, 'KEYS', ...left);
    }
    for (const x of [to, from, ...masters.filter((y) => y !== to && y !== from)]) {
        await cliOf(x.port).cmd('CLUSTER', 'SETSLOT', slot, 'NODE', to.id);
    }
    const again = await srv.req('PATCH', `/v1/meetings/${m.json.id}`, { key,
        json: { starts_at: new Date(Date.now() + 80 * MIN).toISOString() } });
    assert.equal(again.status, 200, again.text);
    assert.equal(await holds(to), 1, 'armed on the new owner (MOVED followed)');
    const del = await srv.req('DELETE', `/v1/meetings/${m.json.id}`, { key });
    assert.ok(del.status === 204 || del.status === 200, del.text);
    assert.equal(await holds(to), 0, 'deleted there');
}

const notifyOf = async (port) => (await cliOf(port).cmd('CONFIG', 'GET', 'notify-keyspace-events')).split('\n')[1];

test('a reshard and a master killed under load: all delivered, none recorded twice', async (t) => {
    const nodes = [];
    for (let i = 0; i < NODES; i++) {
        nodes.push(await node(BASE + i));
    }
    const made = await run('redis-cli', [...cliTls, '--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas', '1', '--cluster-yes']);
    assert.equal(made.code, 0, made.stdout + made.stderr);
    const formed = await waitFor(async () => {
        for (const n of nodes) {
            if (!(await clusterOk(n.port))) {
                return false;
            }
        }
        const topo = await topology(BASE);
        const replicas = topo.filter((x) => !x.master);
        for (const r of replicas) {
            if (!/master_link_status:up/.test(await cliOf(r.port).cmd('INFO', 'replication'))) {
                return false;
            }
        }
        return topo.filter((x) => x.master).length === 3 && replicas.length === 3;
    }, START_BOUND_MS, 200);
    assert.ok(formed, `cluster: ${await cliOf(BASE).cmd('CLUSTER', 'NODES')}`);
    const topo = await topology(BASE);
    const masters = topo.filter((x) => x.master).sort((a, b) => a.port - b.port);
    const [victim, from, to] = masters; // killed; resharded from; resharded to
    const heir = topo.find((x) => !x.master && x.of === victim.id);

    const seeds = masters.map((m) => `127.0.0.1:${m.port}`).join(',');
    const prefix = `clu${process.pid}`;
    const servers = [];
    for (const i of [1, 2]) {
        servers.push(await h.startServer({ TOCSIN_REDIS_URL: `${scheme}-cluster://${seeds}/`, TOCSIN_REDIS_PREFIX: prefix,
            TOCSIN_INSTANCE_ID: `cluster-${i}`, TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1', TOCSIN_LOG_LEVEL: 'info' }));
    }
    for (const srv of servers) {
        assert.ok(await waitFor(() => ready(srv), START_BOUND_MS, 100), `${(await servers[0].req('GET', '/readyz')).text}\n${srv.log}`);
    }
    for (const m of masters) {
        assert.match(await notifyOf(m.port), /E.*x|x.*E|A/, `tocsin set notify-keyspace-events on master :${m.port}`);
    }
    const rx = await ledgerReceiver(t);
    const key = await webhookTenant(servers[0], rx, 'cluster');

    await askedAndMoved(servers[0], key, masters, prefix);

    const t0 = Date.now() + LEAD_MS;
    const due = await remindersDue(servers, key, N, t0, SPREAD_MS);
    assert.ok(Date.now() < t0, 'created before the first one fell due');
    // Spread by shard tag over every master, each reminder's key on the master of its slot.
    const perMaster = [];
    for (const m of masters) {
        perMaster.push((await cliOf(m.port).keys(`${prefix}:{s*}:rem:*`)).length);
    }
    assert.ok(perMaster.every((n) => n > 0), `keys on every master: ${perMaster}`);
    assert.equal(perMaster.reduce((a, b) => a + b, 0), N, `every reminder armed once: ${perMaster}`);

    // The reshard, under load: slots and their keys move from one master to another.
    await sleep(t0 + RESHARD_AFTER_MS - Date.now());
    const slotsBefore = (await topology(to.port)).find((x) => x.id === to.id).slots;
    const moved = await run('redis-cli', [...cliTls, '--cluster', 'reshard', `127.0.0.1:${from.port}`, '--cluster-from', from.id,
        '--cluster-to', to.id, '--cluster-slots', String(RESHARD_SLOTS), '--cluster-yes'], { timeout: RESHARD_BOUND_MS });
    assert.equal(moved.code, 0, moved.stdout.slice(-2000) + moved.stderr);
    const after1 = await topology(to.port);
    assert.equal(after1.find((x) => x.id === to.id).slots, slotsBefore + RESHARD_SLOTS, 'the slots moved');

    // The kill, under load: the victim's replica takes its slots.
    await sleep(t0 + KILL_AFTER_MS - Date.now());
    await stop(nodes.find((n) => n.port === victim.port).proc, 'SIGKILL');
    let rz;
    const named = await waitFor(async () => {
        rz = await servers[0].req('GET', '/readyz');
        return new RegExp(`master 127\\.0\\.0\\.1:${victim.port}`).test(rz.json.redis_error ?? '');
    }, NODE_TIMEOUT_MS * 4, 100);
    assert.ok(named, `/readyz names the master that is down: ${rz?.text}`);
    assert.equal(rz.status, 200, 'Redis never fails readiness');
    const metrics = (await servers[0].req('GET', '/metrics', { validate: false })).text;
    assert.match(metrics, new RegExp(`^tocsin_redis_master_up\\{master="127\\.0\\.0\\.1:${victim.port}"\\} 0$`, 'm'),
        'the metric names the master that is down');
    assert.match(metrics, new RegExp(`^tocsin_redis_master_up\\{master="127\\.0\\.0\\.1:${to.port}"\\} 1$`, 'm'), metrics);
    const promoted = await waitFor(async () => {
        const now = await topology(from.port);
        return now.find((x) => x.id === heir.id)?.master && (await clusterOk(from.port));
    }, PROMOTE_BOUND_MS, 200);
    assert.ok(promoted, `replica :${heir.port} promoted: ${await cliOf(from.port).cmd('CLUSTER', 'NODES')}`);
    for (const srv of servers) {
        const back = await waitFor(() => ready(srv), READY_BOUND_MS, 100);
        assert.ok(back, `/readyz after the promotion: ${(await srv.req('GET', '/readyz')).text}\n${srv.log}`);
    }
    assert.match(await notifyOf(heir.port), /E.*x|x.*E|A/, 'tocsin set notify-keyspace-events on the promoted replica');
    for (const srv of servers) {
        assert.match(srv.log, new RegExp(`listening to redis cluster master 127\\.0\\.0\\.1:${heir.port}`), srv.log);
    }
    // A reminder created now is armed on the master of its slot (redis-cli -c follows MOVED).
    const later = await servers[1].req('POST', '/v1/meetings', { key, json: { title: 'after',
        starts_at: new Date(Date.now() + 60 * MIN).toISOString(), reminders: [{ minutes_before: 5 }] } });
    assert.equal(later.status, 201, later.text);
    const live = redisCli(`${scheme}-cluster://127.0.0.1:${from.port}/`, TLS);
    assert.equal((await live.keys(`${prefix}:rem:${later.json.reminders[0].id}:*`)).length, 1, 'armed after the failover');

    const { got, missing, late, repeats } = await arrivals(rx, due, t0 + SPREAD_MS + ARRIVE_MS, SETTLE_MS);
    assert.deepEqual(missing, [], `all delivered (${got.length}/${N})`);
    t.diagnostic(`${scheme}-cluster://: keys per master ${perMaster}; lateness p50 ${late[Math.floor(N / 2)]} ` +
        `max ${late[N - 1]} ms; ${repeats} repeated on the wire`);
    assert.ok(late[0] >= 0, 'none early');
    assert.equal(await recordedOnce(h, due), `${N}|${N}|${N}`, 'fired | outbox rows | delivered');
    for (const srv of servers) {
        await srv.stop();
    }
});
