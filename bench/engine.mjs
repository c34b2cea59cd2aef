// bench/engine.mjs -- the reminder engine and its delivery measured end to end, driven by
// bench/engine.sh (which builds a release binary, starts PostgreSQL, tocsin's Redis and a second
// Redis for BullMQ, migrates and makes an API key). Starts `tocsin serve` replicas on one database
// and one Redis, local webhook receivers, and runs, in this order (BENCH_SCENARIOS picks):
//   burst:      BENCH_BURST reminders due at one instant with BENCH_REPLICAS replicas: time until
//               all are received, and the CPU time PostgreSQL, the replicas and the receiver spent
//               (less noisy on a shared machine than the time); next to it BullMQ with the same
//               number of delayed jobs due at one instant, BENCH_BULLMQ_WORKERS worker processes,
//               twice: whose processor only records receipt (no hop), and the fair peer whose
//               processor sends one signed webhook to a receiver like tocsin's (BullMQ + webhook);
//   kill:       BENCH_KILL_BURST due at one instant with no kill, then with one replica SIGKILLed
//               once a third arrived and it has requests out: max lateness and requests repeated on
//               the wire, next to its requests in flight and how long its leased rows took to be
//               delivered;
//   work:       for each count in BENCH_WORK_REPLICAS, BENCH_WORK_DUE reminders made through the
//               API and fired: Redis commands (INFO commandstats) and PostgreSQL rows read and
//               blocks touched (pg_stat_user_tables, pg_statio_*) per fired reminder, with the
//               same replicas' idle rate subtracted; and the CPU PostgreSQL and the replicas use
//               idle, next to PostgreSQL's with no replica;
//   throughput: a receiver answering after BENCH_SLOW_MS, for each webhook count in
//               BENCH_SLOW_WEBHOOKS: deliveries per second per replica;
//   lateness:   BENCH_PENDING reminders loaded through the API (POST /v1/meetings, five reminders
//               each), then at once BENCH_DUE due over BENCH_SPREAD_S: lateness p50/p99/max, and
//               of it the delivery hop (receipt minus the recorded fired_at). Last:
//               its load stays pending (due 20 to 55 minutes later) and would weigh on the others.
// Lateness is receipt time at the receiver minus the reminder's fire_at (from its webhook-id).
// Prints one table; exits non-zero when a reminder was lost, recorded twice or received early.
import { spawn, execFile, fork } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { cpuSecondsOf as cpuS, statFields } from './proc.mjs';
import { freePort } from './serve.mjs';

const env = (name, def) => process.env[name] ?? def;
const DB_URL = env('BENCH_DB_URL');
const REDIS_PORT = Number(env('BENCH_REDIS_PORT'));
const BULLMQ_REDIS_PORT = Number(env('BENCH_BULLMQ_REDIS_PORT', '0'));
// BENCH_REDIS_MODES (engine.sh): the scenarios once per Redis: plain, over TLS, on a Cluster.
const REDIS_MODES = env('BENCH_REDIS_MODES', 'plain').split(/\s+/).filter(Boolean);
const redisEnv = (mode) => ({
    TOCSIN_REDIS_URL: env(`BENCH_REDIS_URL_${mode.toUpperCase()}`, `redis://127.0.0.1:${REDIS_PORT}/0`),
    ...(mode === 'tls' ? { TOCSIN_REDIS_TLS_CA: env('BENCH_REDIS_TLS_CA') } : {}),
});
let redisMode = 'plain'; // the mode the replicas started now use
const BIN = env('TOCSIN_BIN');
const PSQL = env('BENCH_PSQL', 'psql');
const REPLICAS = Number(env('BENCH_REPLICAS', '3'));
const SCENARIOS = env('BENCH_SCENARIOS', 'steady burst kill work throughput lateness').split(/\s+/).filter(Boolean);
const BURST = Number(env('BENCH_BURST', '50000'));
const BULLMQ_WORKERS = Number(env('BENCH_BULLMQ_WORKERS', '3'));
const BULLMQ_CONCURRENCY = Number(env('BENCH_BULLMQ_CONCURRENCY', '100'));
const KILL_BURST = Number(env('BENCH_KILL_BURST', '10000'));
const PENDING = Number(env('BENCH_PENDING', '1000000'));
const DUE = Number(env('BENCH_DUE', '10000'));
const SPREAD_S = Number(env('BENCH_SPREAD_S', '20'));
const LOAD_CONNECTIONS = Number(env('BENCH_LOAD_CONNECTIONS', '32'));
const WORK_REPLICAS = env('BENCH_WORK_REPLICAS', '1 3 6').split(/\s+/).filter(Boolean).map(Number);
const WORK_DUE = Number(env('BENCH_WORK_DUE', '10000'));
const SLOW_MS = Number(env('BENCH_SLOW_MS', '100'));
const SLOW_WEBHOOKS = env('BENCH_SLOW_WEBHOOKS', '1 16').split(/\s+/).filter(Boolean).map(Number);
const SLOW_DELIVERIES = Number(env('BENCH_SLOW_DELIVERIES', '20000'));
const WORKERS = env('BENCH_WORKERS'); // TOCSIN_DELIVERY_WORKERS for the replicas, when set
const PG_DATA = env('BENCH_PG_DATA'); // the PostgreSQL data directory: its processes' CPU is counted
const BURST_ROUNDS = Number(env('BENCH_BURST_ROUNDS', '1')); // the burst (and BullMQ's) this many times
const PG_STATEMENTS = env('BENCH_PG_STATEMENTS', '') === '1'; // engine.sh loaded pg_stat_statements

const LEAD_MS = 15000;        // a batch written by SQL falls due this long after (> the 10 s window)
const SETTLE_MS = 60000;      // wait for stragglers after the last due time
const STATS_FLUSH_MS = 2500;  // PostgreSQL backends publish their table counters within about 1 s
const IDLE_WINDOW_MS = 10000; // the idle rate of the work scenario is measured over this
const CPU_LEAD_MS = 200;      // the burst's CPU is counted from this long before its due instant
const PREFIX = 'bench';
const HERE = path.dirname(fileURLToPath(import.meta.url));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (msg) => process.stderr.write(`==> ${msg}\n`);

function die(msg) {
    process.stderr.write(`bench/engine.mjs: ${msg}\n`);
    process.exit(1);
}

function psql(sql) {
    return new Promise((resolve, reject) => {
        execFile(PSQL, [DB_URL, '-v', 'ON_ERROR_STOP=1', '-qtAc', sql], { maxBuffer: 64 << 20 },
            (err, stdout, stderr) => (err ? reject(new Error(`psql: ${stderr || err}`)) : resolve(stdout.trim())));
    });
}

function redis(port, ...args) {
    return new Promise((resolve, reject) => {
        execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { maxBuffer: 16 << 20 },
            (err, stdout) => (err ? reject(err) : resolve(stdout.trim())));
    });
}

function quantile(sorted, q) {
    return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

function median(v) {
    const s = [...v].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

const fmt = (v) => (Number.isFinite(v) ? String(Math.round(v)) : '-');
const fmt1 = (v) => (Number.isFinite(v) ? v.toFixed(1) : '-');

// ------------------------------------------------------------------ receivers

// Records each delivery's webhook-id (rem_<id>_<fire_at ms>), first receipt and count, and the
// bodies' bytes (by content-length); answers 204 after delayMs (at once when 0). The body is
// drained, not parsed: the receiver stays cheap.
function startReceiver(delayMs = 0) {
    const rx = { seen: new Map(), total: 0, bytes: 0 };
    rx.server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            const now = Date.now();
            const id = req.headers['webhook-id'] ?? '';
            const m = /^rem_(\d+)_(\d+)$/.exec(id);
            rx.total++;
            rx.bytes += Number(req.headers['content-length'] ?? 0);
            rx.lastAt = now;
            const seen = rx.seen.get(id);
            if (seen) {
                seen.count++;
            } else {
                rx.seen.set(id, { at: now, reminder: m ? Number(m[1]) : NaN, fireAt: m ? Number(m[2]) : NaN, count: 1 });
            }
            if (delayMs > 0) {
                setTimeout(() => res.writeHead(204).end(), delayMs);
            } else {
                res.writeHead(204).end();
            }
        });
    });
    rx.connections = 0;
    rx.server.on('connection', () => rx.connections++);
    rx.server.keepAliveTimeout = 60000;
    rx.server.maxRequestsPerSocket = 0;
    // A deep accept queue: replicas x workers x webhooks x the share per receiver may connect at once.
    return new Promise((resolve) => rx.server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => {
        rx.port = rx.server.address().port;
        resolve(rx);
    }));
}

function closeReceiver(rx) {
    rx.server.closeAllConnections?.();
    rx.server.close();
}

// Receipts of the reminders due in [t0, t1] (ms), by fire time from the webhook-id.
function receiptsBetween(rx, t0, t1) {
    const out = [];
    for (const v of rx.seen.values()) {
        if (v.fireAt >= t0 && v.fireAt <= t1) {
            out.push(v);
        }
    }
    return out;
}

// ------------------------------------------------------------------ tocsin replicas

const live = new Set(); // child processes to stop at exit

async function startReplica(name, port) {
    const child = spawn(BIN, ['serve'], {
        stdio: ['ignore', 'inherit', 'inherit'],
        env: {
            ...process.env,
            TOCSIN_HTTP_ADDR: `127.0.0.1:${port}`,
            TOCSIN_DATABASE_URL: DB_URL,
            ...redisEnv(redisMode),
            TOCSIN_REDIS_PREFIX: PREFIX,
            TOCSIN_INSTANCE_ID: name,
            TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
            TOCSIN_MIRROR_HORIZON_S: '3600',
            TOCSIN_LOG_LEVEL: 'warn',
            ...(WORKERS ? { TOCSIN_DELIVERY_WORKERS: WORKERS } : {}),
        },
    });
    live.add(child);
    child.on('exit', () => live.delete(child));
    const r = { name, port, child, base: `http://127.0.0.1:${port}` };
    const end = Date.now() + 30000;
    for (;;) {
        const ok = await fetch(`${r.base}/readyz`).then((x) => x.ok, () => false);
        if (ok) {
            return r;
        }
        if (child.exitCode !== null || child.signalCode !== null) {
            die(`replica ${name} exited while starting`);
        }
        if (Date.now() > end) {
            die(`replica ${name} not ready after 30 s`);
        }
        await sleep(100);
    }
}

const exited = (r) => new Promise((res) => (r.child.exitCode !== null || r.child.signalCode !== null ? res() : r.child.on('exit', () => res())));

let serial = 0;
async function startReplicas(n) {
    const reps = [];
    for (let i = 0; i < n; i++) {
        reps.push(await startReplica(`bench-${++serial}`, await freePort()));
    }
    await shardsSettled(reps);
    return reps;
}

async function stopReplicas(reps) {
    for (const r of reps) {
        r.child.kill('SIGTERM');
    }
    await Promise.all(reps.map(exited));
}

async function metricsOf(r) {
    const text = await fetch(`${r.base}/metrics`).then((x) => x.text());
    return (name) => Number(new RegExp(`^${name} (-?[0-9.e+]+)$`, 'm').exec(text)?.[1] ?? NaN);
}

// Waits until every replica sees all of them and their shards add up to 256.
async function shardsSettled(reps) {
    const end = Date.now() + 20000;
    while (Date.now() < end) {
        const ms = await Promise.all(reps.map(metricsOf));
        if (ms.every((m) => m('tocsin_replicas_live') === reps.length) &&
            ms.reduce((a, m) => a + m('tocsin_shards_owned'), 0) === 256) {
            return;
        }
        await sleep(200);
    }
    die(`the shards of ${reps.length} replicas did not settle within 20 s`);
}

// ------------------------------------------------------------------ data

// n meetings of `tenant` with one reminder each, due at t0Ms + floor(i * spreadMs / n), written by
// SQL (exact fire times; the scheduler's poll reads them: they fall due past its window).
async function insertDue(tenant, n, t0Ms, spreadMs) {
    await psql(`
        WITH m AS (
            INSERT INTO meetings (id, tenant_id, title, starts_at, participants, version, created_at, updated_at)
            SELECT gen_random_uuid(), ${tenant}, 'bench',
                   to_timestamp(${t0Ms} / 1000.0) + (floor(i * ${spreadMs}::float8 / ${n}) || ' ms')::interval
                       + interval '5 minutes',
                   '[]'::json, 1, now(), now()
            FROM generate_series(0, ${n - 1}) AS i
            RETURNING id, tenant_id, starts_at)
        INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status)
        SELECT id, tenant_id, 5, starts_at - interval '5 minutes', 'pending' FROM m`);
    return { n, t0: t0Ms, last: t0Ms + Math.floor(((n - 1) * spreadMs) / n) };
}

// A tenant of its own with its API key (tocsin keys create).
function newTenant(name) {
    return new Promise((resolve, reject) => {
        execFile(BIN, ['keys', 'create', '--tenant', name], { env: { ...process.env, TOCSIN_DATABASE_URL: DB_URL } },
            async (err, stdout, stderr) => {
                if (err) {
                    reject(new Error(`tocsin keys create: ${stderr}`));
                    return;
                }
                const id = Number(await psql(`SELECT id FROM tenants WHERE name = '${name}'`));
                resolve({ name, id, key: stdout.trim() });
            });
    });
}

async function registerWebhook(rep, tenant, url) {
    const r = await fetch(`${rep.base}/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url }),
    });
    if (r.status !== 201) {
        die(`POST /v1/webhooks: ${r.status} ${await r.text()}`);
    }
}

// POSTs `count` meetings built by body(i) through the replicas, round robin, `connections` at a
// time on keep-alive connections. Returns the elapsed ms.
async function postMeetings(reps, tenant, count, connections, body) {
    const agents = reps.map(() => new http.Agent({ keepAlive: true, maxSockets: connections }));
    let next = 0, done = 0, lastLog = Date.now();
    const start = Date.now();
    const one = (i) => new Promise((resolve, reject) => {
        const k = i % reps.length;
        const data = JSON.stringify(body(i));
        const req = http.request({
            host: '127.0.0.1', port: reps[k].port, path: '/v1/meetings', method: 'POST', agent: agents[k],
            headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
        }, (res) => {
            res.resume();
            res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error(`POST /v1/meetings: ${res.statusCode}`))));
        });
        req.on('error', reject);
        req.end(data);
    });
    const lane = async () => {
        while (next < count) {
            const i = next++;
            for (let tries = 0; ; tries++) {
                try {
                    await one(i);
                    break;
                } catch (e) {
                    if (tries >= 3) {
                        throw e;
                    }
                    await sleep(100);
                }
            }
            done++;
            if (Date.now() - lastLog > 10000) {
                lastLog = Date.now();
                log(`  ${done} of ${count} meetings posted`);
            }
        }
    };
    await Promise.all(Array.from({ length: connections }, lane));
    for (const a of agents) {
        a.destroy();
    }
    return Date.now() - start;
}

// Waits until the n reminders due in [t0, last] were all received, or SETTLE_MS after last, then
// checks them in PostgreSQL; beforeChecks, when given, runs just before those queries (the work
// scenario reads its counters there: the checks scan the whole reminders table, which after the
// burst and the kill doubled its rows read per fired reminder).
async function collect(rx, b, beforeChecks = null) {
    // Scanning every receipt while they arrive would hold up the receiver on this thread: the wait
    // counts new ids (nothing else is due meanwhile), the scan runs once at the end.
    while (Date.now() < b.last + SETTLE_MS) {
        if (rx.seen.size - (b.seenBefore ?? 0) >= b.n && Date.now() > b.last + 1000) {
            break;
        }
        await sleep(100);
    }
    await sleep(1000); // a repeat, if any, has time to arrive
    await beforeChecks?.();
    const got = receiptsBetween(rx, b.t0, b.last);
    const late = got.map((v) => v.at - v.fireAt).sort((x, y) => x - y);
    const span = `to_timestamp(${b.t0} / 1000.0) AND to_timestamp(${b.last} / 1000.0)`;
    const [notFired, dbDup] = (await psql(`SELECT
            (SELECT count(*) FROM reminders WHERE fire_at BETWEEN ${span} AND status <> 'fired'),
            (SELECT count(*) FROM (SELECT reminder_id, fire_at, webhook_id FROM outbox WHERE fire_at BETWEEN ${span}
                                   GROUP BY 1, 2, 3 HAVING count(*) > 1) d)`)).split('|').map(Number);
    const fired = (await psql(`SELECT concat_ws('/', percentile_disc(0.5) WITHIN GROUP (ORDER BY l),
            percentile_disc(0.99) WITHIN GROUP (ORDER BY l), max(l))
        FROM (SELECT round(extract(epoch FROM fired_at - fire_at) * 1000) AS l FROM reminders
              WHERE fire_at BETWEEN ${span} AND status = 'fired') f`)) || '-';
    return {
        n: b.n, got: got.length, lost: b.n - got.length, early: late.filter((l) => l < 0).length,
        repeats: got.reduce((a, v) => a + v.count - 1, 0), dbDup, notFired, late, fired,
        lastAt: got.reduce((a, v) => Math.max(a, v.at), 0), firstAt: got.reduce((a, v) => Math.min(a, v.at), Infinity),
    };
}

// The CPU of a BullMQ burst from CPU_LEAD_MS before its due instant until all were done, gross.
const peerCpu = (b) => `(gross, from ${CPU_LEAD_MS} ms before the due instant until all were done): workers ${b.cpu.workers.toFixed(2)} s, Redis ${b.cpu.redis.toFixed(2)} s, ` +
    `this process (the receiver) ${b.cpu.self.toFixed(2)} s; ${fmt(((b.cpu.workers + b.cpu.redis + b.cpu.self) * 1e6) / b.n)} us per job in all`;
const lat = (r) => `${fmt(quantile(r.late, 0.5))}/${fmt(quantile(r.late, 0.99))}/${fmt(r.late[r.late.length - 1])}`;
const checks = (r) => `${r.got} of ${r.n} received, lost ${r.lost}, early ${r.early}, recorded twice ${r.dbDup}, not fired ${r.notFired}`;

// ------------------------------------------------------------------ BullMQ

// BULLMQ_WORKERS processes of bench/bullmq.mjs; the child adds `n` delayed jobs all due at one
// instant and waits until they were all done. With a webhook (the fair peer) each job POSTs to a
// receiver of its own here, like tocsin's, and "all received" is its last receipt after the due
// instant, measured as tocsin's is; this process's CPU over the child's window is the receiver's.
// Returns bench/bullmq.mjs's answer and cpu.self; with the webhook also { got, late, repeats,
// bodyBytes, connections }, allAfterMs the receiver's and doneAfterMs the processors' last 2xx.
async function bullmqBurst(n, withWebhook) {
    const rx = withWebhook ? await startReceiver() : null;
    const hook = rx ? [`http://127.0.0.1:${rx.port}/hook`] : [];
    const child = fork(path.join(HERE, 'bullmq.mjs'), ['burst', String(n), String(BULLMQ_WORKERS), String(BULLMQ_CONCURRENCY), ...hook], {
        env: { ...process.env, BENCH_BULLMQ_REDIS_PORT: String(BULLMQ_REDIS_PORT) },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    live.add(child);
    let self0 = 0;
    const m = await new Promise((resolve, reject) => {
        child.on('message', (x) => {
            if (x.open) {
                self0 = cpuS(process.pid);
            } else {
                resolve(x);
            }
        });
        child.on('exit', (code) => {
            live.delete(child);
            if (code !== 0) {
                reject(new Error(`bench/bullmq.mjs exited ${code}`));
            }
        });
    });
    m.cpu.self = cpuS(process.pid) - self0;
    if (rx) {
        closeReceiver(rx);
        const got = [...rx.seen.values()];
        m.late = got.map((v) => v.at - v.fireAt).sort((x, y) => x - y);
        m.got = got.length;
        m.doneAfterMs = m.allAfterMs; // the processors' view: the last 2xx answer
        m.repeats = got.reduce((a, v) => a + v.count - 1, 0);
        m.allAfterMs = got.length >= n ? m.late[m.late.length - 1] : NaN;
        m.bodyBytes = rx.bytes / rx.total;
        m.connections = rx.connections;
    }
    return m;
}

// ------------------------------------------------------------------ CPU

// The processes of the bench's PostgreSQL: the postmaster and its children (backends of the
// replicas' connections, background workers). A backend that exits between two samples takes
// its CPU along, so short sessions (psql) are missed; the replicas' connections stay open.
function pgPids() {
    if (!PG_DATA) {
        return [];
    }
    const postmaster = fs.readFileSync(path.join(PG_DATA, 'postmaster.pid'), 'latin1').split('\n')[0].trim();
    const kids = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((d) => {
        try {
            return statFields(d)[1] === postmaster;
        } catch {
            return false;
        }
    });
    return [postmaster, ...kids];
}

// CPU seconds so far of PostgreSQL, the replicas and this process (the webhook receiver, with the
// bench's own bookkeeping), by pid, so that a difference counts only processes seen at both ends.
function cpuSample(reps) {
    const by = (pids) => new Map(pids.map((p) => [String(p), cpuS(p)]));
    return { pg: by(pgPids()), replicas: by(reps.map((r) => r.child.pid)), self: by([process.pid]) };
}

function cpuSince(a, b) {
    const part = (x, y) => [...y].reduce((s, [pid, v]) => s + (x.has(pid) ? v - x.get(pid) : 0), 0);
    return { pg: part(a.pg, b.pg), replicas: part(a.replicas, b.replicas), self: part(a.self, b.self) };
}

// ------------------------------------------------------------------ scenarios

async function burst(ctx) {
    const out = { tag: `burst ${BURST}, ${REPLICAS} replicas${BURST_ROUNDS > 1 ? `, round ${ctx.round} of ${BURST_ROUNDS}` : ''}` };
    if (BULLMQ_REDIS_PORT > 0 && redisMode === REDIS_MODES[0]) { // the baseline once a run
        log(`BullMQ: ${BURST} delayed jobs due at one instant, ${BULLMQ_WORKERS} worker processes x concurrency ${BULLMQ_CONCURRENCY}, no hop`);
        out.bullmq = await bullmqBurst(BURST, false);
        log(`BullMQ + webhook: the same, each job one signed webhook POST to a local receiver`);
        out.bullmqHook = await bullmqBurst(BURST, true);
    }
    const idle = await idleOver(ctx.reps, IDLE_WINDOW_MS);
    const t0 = Date.now() + LEAD_MS + 10000;
    const seenBefore = ctx.rx.seen.size;
    const connsBefore = ctx.rx.connections;
    const bytesBefore = { bytes: ctx.rx.bytes, total: ctx.rx.total };
    const b = { ...(await insertDue(ctx.tenant.id, BURST, t0, 0)), seenBefore };
    log(`tocsin: ${BURST} reminders due at one instant`);
    await sleep(t0 - CPU_LEAD_MS - Date.now());
    if (PG_STATEMENTS) {
        await psql('SELECT pg_stat_statements_reset()');
    }
    const cpu0 = cpuSample(ctx.reps);
    const start = Date.now();
    log('burst: the CPU window opens');
    const r = await collect(ctx.rx, b);
    r.cpu = cpuSince(cpu0, cpuSample(ctx.reps));
    r.cpuPer = cpuPerReminder(r.cpu, Date.now() - start, idle, BURST);
    r.connections = ctx.rx.connections - connsBefore;
    r.bodyBytes = (ctx.rx.bytes - bytesBefore.bytes) / (ctx.rx.total - bytesBefore.total);
    log('burst: the CPU window closes');
    if (PG_STATEMENTS) {
        r.statements = await psql(`SELECT concat_ws(' | ', round(total_exec_time)::text || ' ms', calls || ' calls',
                rows || ' rows', round(shared_blks_hit::numeric / greatest(rows, 1), 1) || ' blocks/row', left(regexp_replace(query, '\\s+', ' ', 'g'), 90))
            FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12`);
    }
    r.allAfterMs = r.lost === 0 ? r.lastAt - t0 : NaN;
    r.firedAfterMs = Number(await psql(`SELECT round(extract(epoch FROM max(fired_at)) * 1000) - ${t0}
        FROM reminders WHERE fire_at = to_timestamp(${t0} / 1000.0)`));
    return { ...out, ...r };
}

async function kill(ctx) {
    // The same burst with no kill first: what the burst costs by itself in this run.
    const seenBase = ctx.rx.seen.size;
    const base = await collect(ctx.rx, { ...(await insertDue(ctx.tenant.id, KILL_BURST, Date.now() + LEAD_MS, 0)), seenBefore: seenBase });
    const t0 = Date.now() + LEAD_MS;
    const seenBefore = ctx.rx.seen.size;
    const b = { ...(await insertDue(ctx.tenant.id, KILL_BURST, t0, 0)), seenBefore };
    const victim = ctx.reps[ctx.reps.length - 1];
    log(`${KILL_BURST} reminders due at one instant, ${victim.name} killed (SIGKILL) once a third arrived and it has requests out`);
    let inFlight = NaN, sampledAt = NaN, sampling = true;
    const sampler = (async () => {
        while (sampling) {
            try {
                const v = (await metricsOf(victim))('tocsin_deliveries_in_flight');
                if (sampling) {
                    inFlight = v;
                    sampledAt = Date.now();
                }
            } catch {
                return;
            }
            await sleep(5);
        }
    })();
    // Once a third arrived, at a moment when it has requests out (by a sample younger than 20 ms):
    // a replica between two rounds has nothing to repeat, and that case says little. Past two
    // thirds, whatever it has.
    const arrived = () => ctx.rx.seen.size - seenBefore;
    while (Date.now() < t0 + SETTLE_MS && (arrived() < KILL_BURST / 3 ||
           (arrived() < (2 * KILL_BURST) / 3 && !(inFlight > 0 && Date.now() - sampledAt < 20)))) {
        await sleep(1);
    }
    sampling = false;
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    await sampler;
    // The rows it held, in flight, queued or given by its fires: a worker's lease names it
    // "<instance>/<n>/<token>". Read at once after the kill, not before (that would move the
    // moment picked above): the others may take them at their next look (250 ms apart) once
    // PostgreSQL has seen its connections close, so a slow read finds fewer, never more.
    const held = (await psql(`SELECT id FROM outbox WHERE status = 'pending' AND lease_owner LIKE '${victim.name}/%'`))
        .split('\n').filter(Boolean);
    const r = await collect(ctx.rx, b);
    const recoveredMs = held.length === 0 ? NaN : Number(await psql(`SELECT round(extract(epoch FROM max(delivered_at)) * 1000)
        - ${killedAt} FROM outbox WHERE id IN (${held.join(',')})`));
    await exited(victim);
    ctx.reps[ctx.reps.length - 1] = await startReplica(victim.name, victim.port);
    await shardsSettled(ctx.reps);
    return {
        tag: `kill -9 1 of ${ctx.reps.length} in a burst of ${KILL_BURST}`, ...r, base, inFlight, sampleAgeMs: killedAt - sampledAt,
        killedAfterMs: killedAt - t0, held: held.length, recoveredMs,
    };
}

async function lateness(ctx) {
    let loadMs = 0;
    if (PENDING > 0) {
        // Five reminders a meeting (1 to 5 minutes before), meetings 20 to 55 minutes ahead: all
        // pending through the run and inside the mirror horizon, so each is a Redis key too.
        const meetings = Math.ceil(PENDING / 5);
        const from = Date.now() + 20 * 60000, span = 35 * 60000;
        log(`loading ${meetings * 5} pending reminders through the API (${meetings} meetings, ${LOAD_CONNECTIONS} connections)`);
        loadMs = await postMeetings(ctx.reps, ctx.loadTenant, meetings, LOAD_CONNECTIONS, (i) => ({
            title: 'load', starts_at: new Date(from + Math.floor((i * span) / meetings)).toISOString(),
            reminders: [1, 2, 3, 4, 5].map((m) => ({ minutes_before: m })),
        }));
        log(`loaded in ${(loadMs / 1000).toFixed(1)} s`);
    }
    const seenBefore = ctx.rx.seen.size;
    const b = { ...(await insertDue(ctx.tenant.id, DUE, Date.now() + LEAD_MS, SPREAD_S * 1000)), seenBefore };
    log(`${DUE} reminders due over ${SPREAD_S} s with ${PENDING} pending`);
    const r = await collect(ctx.rx, b);
    const pending = Number(await psql(`SELECT count(*) FROM reminders WHERE status = 'pending'`));
    return { tag: `lateness, ${pending} pending`, ...r, loadMs, pending, hop: await hop(ctx.rx, b) };
}

// CPU seconds of PostgreSQL, the replicas reps and this process over ms of wall time with nothing
// due: the idle baseline of the same processes, measured in the same run.
async function idleOver(reps, ms) {
    const c0 = cpuSample(reps);
    await sleep(ms);
    return { ...cpuSince(c0, cpuSample(reps)), ms };
}

// CPU microseconds per reminder of a window: gross, the idle baseline scaled to the window's
// wall time, and net (gross - idle), for PostgreSQL, the replicas and the receiver.
function cpuPerReminder(cpu, windowMs, idle, n) {
    const one = (k) => {
        const gross = (cpu[k] * 1e6) / n, base = idle ? (idle[k] * 1e6 * windowMs) / idle.ms / n : 0;
        return { gross, idle: base, net: gross - base };
    };
    const out = { pg: one('pg'), replicas: one('replicas'), self: one('self') };
    out.pgReplicasNet = out.pg.net + out.replicas.net;
    return out;
}

const cpuLine = (c) => ['pg', 'replicas', 'self'].map((k) => `${{ pg: 'PostgreSQL', replicas: 'replicas', self: 'receiver' }[k]} ` +
    `${fmt(c[k].gross)} - idle ${fmt(c[k].idle)} = ${fmt(c[k].net)}`).join('; ') + `; PostgreSQL + replicas net ${fmt(c.pgReplicasNet)} us`;

// PostgreSQL's database-wide counters (pg_stat_database, pg_stat_wal) so far. Backends publish
// them within about a second of going idle: read STATS_FLUSH_MS after the work.
async function pgCounters() {
    const cols = ['xact_commit', 'xact_rollback', 'blks_hit', 'blks_read', 'tup_returned', 'tup_fetched',
        'tup_inserted', 'tup_updated', 'tup_deleted'];
    const line = await psql(`SELECT ${cols.join(', ')}, w.wal_records, w.wal_bytes, w.wal_write, w.wal_sync
        FROM pg_stat_database, pg_stat_wal w WHERE datname = current_database()`);
    const v = line.split('|').map(Number);
    return Object.fromEntries([...cols, 'wal_records', 'wal_bytes', 'wal_write', 'wal_sync'].map((k, i) => [k, v[i]]));
}

// The statements of the window per reminder due (pg_stat_statements, reset at its start), by
// time: calls, mean time, rows, blocks. The bench's own queries (psql) are left out.
const statementTable = (fired) => psql(`SELECT concat_ws(' | ', to_char(calls::numeric / ${fired}, 'FM990.000') || ' calls',
        to_char(mean_exec_time, 'FM990.000') || ' ms', to_char(rows::numeric / ${fired}, 'FM990.00') || ' rows',
        to_char((shared_blks_hit + shared_blks_read)::numeric / ${fired}, 'FM9990.0') || ' blocks',
        to_char(total_exec_time * 1000 / ${fired}, 'FM9990') || ' us/reminder', left(regexp_replace(query, '\\s+', ' ', 'g'), 100))
    FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%' AND calls > 0 ORDER BY total_exec_time DESC LIMIT 14`);

// BENCH_DUE reminders due evenly over BENCH_SPREAD_S with the REPLICAS replicas and nothing else
// pending: lateness, CPU per reminder (PostgreSQL, replicas, receiver) beside the idle CPU of the
// same processes over the same wall time, measured just before, and PostgreSQL's commits, WAL
// syncs, blocks and rows per reminder; with BENCH_PG_STATEMENTS=1 the statements too.
async function steady(ctx) {
    const windowMs = SPREAD_S * 1000 + CPU_LEAD_MS + 2000; // about the window measured below
    log(`steady: the idle baseline, ${fmt1(windowMs / 1000)} s`);
    const idle = await idleOver(ctx.reps, windowMs);
    const seenBefore = ctx.rx.seen.size;
    const b = { ...(await insertDue(ctx.tenant.id, DUE, Date.now() + LEAD_MS, SPREAD_S * 1000)), seenBefore };
    log(`steady: ${DUE} reminders due over ${SPREAD_S} s`);
    await sleep(b.t0 - CPU_LEAD_MS - Date.now());
    const p0 = await pgCounters();
    if (PG_STATEMENTS) {
        await psql('SELECT pg_stat_statements_reset()');
    }
    const cpu0 = cpuSample(ctx.reps);
    const start = Date.now();
    let cpu = null, ms = 0, p1 = null, statements = null;
    const r = await collect(ctx.rx, b, async () => {
        cpu = cpuSince(cpu0, cpuSample(ctx.reps));
        ms = Date.now() - start;
        await sleep(STATS_FLUSH_MS);
        p1 = await pgCounters();
        statements = PG_STATEMENTS ? await statementTable(DUE) : null;
    });
    const fired = DUE - r.notFired;
    const pg = Object.fromEntries(Object.keys(p1).map((k) => [k, (p1[k] - p0[k]) / fired]));
    return { tag: `steady, ${DUE} due over ${SPREAD_S} s, ${ctx.reps.length} replicas`, ...r, windowMs: ms, idle,
        cpuPer: cpuPerReminder(cpu, ms, idle, fired), pg, statements, hop: await hop(ctx.rx, b) };
}

// The delivery hop of each reminder due in [t0, last]: its receipt minus its fired_at (when the
// fire statement's transaction began), sorted. What the lateness is made of beyond the fire.
async function hop(rx, b) {
    const span = `to_timestamp(${b.t0} / 1000.0) AND to_timestamp(${b.last} / 1000.0)`;
    const rows = (await psql(`SELECT id || ' ' || round(extract(epoch FROM fired_at) * 1000) FROM reminders
        WHERE fire_at BETWEEN ${span} AND status = 'fired'`)).split('\n').filter(Boolean);
    const firedAt = new Map(rows.map((l) => l.split(' ').map(Number)));
    return receiptsBetween(rx, b.t0, b.last).filter((v) => firedAt.has(v.reminder))
        .map((v) => v.at - firedAt.get(v.reminder)).sort((x, y) => x - y);
}

// Redis commands (all but INFO) and PostgreSQL rows read and blocks touched so far, in total and
// by command and by table.
async function workCounters() {
    const info = await redis(REDIS_PORT, 'INFO', 'commandstats');
    const byCmd = {};
    for (const m of info.matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+)/gm)) {
        if (m[1] !== 'info') {
            byCmd[m[1]] = Number(m[2]);
        }
    }
    const byTable = {};
    let blocks = 0;
    for (const line of (await psql(`SELECT s.relname, coalesce(s.seq_tup_read, 0) + coalesce(s.idx_tup_fetch, 0),
            io.heap_blks_read + io.heap_blks_hit + coalesce(io.idx_blks_read, 0) + coalesce(io.idx_blks_hit, 0)
        FROM pg_stat_user_tables s JOIN pg_statio_user_tables io USING (relid)`)).split('\n').filter(Boolean)) {
        const [name, rows, b] = line.split('|');
        byTable[name] = Number(rows);
        blocks += Number(b);
    }
    const sum = (o) => Object.values(o).reduce((a, v) => a + v, 0);
    return { at: Date.now(), cmds: sum(byCmd), rows: sum(byTable), blocks, byCmd, byTable };
}

const minus = (b, a) => Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v - (a[k] ?? 0)]));
const delta = (a, b) => ({
    ms: b.at - a.at, cmds: b.cmds - a.cmds, rows: b.rows - a.rows, blocks: b.blocks - a.blocks,
    byCmd: minus(b.byCmd, a.byCmd), byTable: minus(b.byTable, a.byTable),
});

// The largest entries of a per-fired breakdown, "name value ...".
const top = (o, fired, n = 5) => Object.entries(o).filter(([, v]) => v > 0).sort((x, y) => y[1] - x[1]).slice(0, n)
    .map(([k, v]) => `${k} ${fmt1(v / fired)}`).join(', ');

// CPU ms per second of PostgreSQL and of the replicas reps over IDLE_WINDOW_MS.
async function idleCpu(reps) {
    const c0 = cpuSample(reps);
    await sleep(IDLE_WINDOW_MS);
    const c = cpuSince(c0, cpuSample(reps));
    return { pg: (c.pg * 1e6) / IDLE_WINDOW_MS, replicas: (c.replicas * 1e6) / IDLE_WINDOW_MS };
}

async function work(ctx) {
    const results = [];
    await stopReplicas(ctx.reps);
    // The baseline of the idle CPU: PostgreSQL with no replica connected.
    const quiet = await idleCpu([]);
    for (const k of WORK_REPLICAS) {
        const reps = await startReplicas(k);
        await sleep(STATS_FLUSH_MS);
        const i0 = await workCounters();
        const cpu = await idleCpu(reps);
        const idle = { ...delta(i0, await workCounters()), cpu };
        const tenant = await newTenant(`work-${k}`);
        await registerWebhook(reps[0], tenant, `http://127.0.0.1:${ctx.rx.port}/work`);
        // Made through the API, as an application would, 20 s ahead; measured from after they
        // were written (their keys armed) until all were delivered.
        const t0 = Date.now() + 20000;
        const spread = 10000;
        await postMeetings(reps, tenant, WORK_DUE, 16, (i) => ({
            title: 'work', starts_at: new Date(t0 + Math.floor((i * spread) / WORK_DUE) + 5 * 60000).toISOString(),
            reminders: [{ minutes_before: 5 }],
        }));
        await sleep(STATS_FLUSH_MS);
        if (PG_STATEMENTS) {
            await psql('SELECT pg_stat_statements_reset()');
        }
        const w0 = await workCounters();
        const b = { n: WORK_DUE, t0, last: t0 + Math.floor(((WORK_DUE - 1) * spread) / WORK_DUE), seenBefore: ctx.rx.seen.size };
        if (Date.now() > t0) {
            log(`warning: creating ${WORK_DUE} meetings took past their due time`);
        }
        let w1 = null;
        const r = await collect(ctx.rx, b, async () => {
            await sleep(STATS_FLUSH_MS);
            w1 = await workCounters();
        });
        const d = delta(w0, w1);
        const fired = WORK_DUE - r.notFired;
        const net = (x, idleX) => (x - (idleX * d.ms) / idle.ms) / fired;
        // What read the rows: pg_stat_statements' rows are those returned or changed, a lower
        // bound of what each statement read, so the blocks it touched are shown too.
        const statements = PG_STATEMENTS ? await psql(`SELECT concat_ws(' | ', round(rows::numeric / ${fired}, 2) || ' rows',
                round(shared_blks_hit::numeric / ${fired}, 2) || ' blocks', calls || ' calls', round(total_exec_time)::text || ' ms',
                left(regexp_replace(query, '\\s+', ' ', 'g'), 90))
            FROM pg_stat_statements ORDER BY shared_blks_hit DESC LIMIT 10`) : null;
        results.push({
            k, r, d, idle, fired, statements,
            cmds: d.cmds / fired, rows: d.rows / fired, blocks: d.blocks / fired,
            cmdsNet: net(d.cmds, idle.cmds), rowsNet: net(d.rows, idle.rows), blocksNet: net(d.blocks, idle.blocks),
        });
        log(`work with ${k} replicas: ${fmt1(d.cmds / fired)} Redis commands, ${fmt1(d.rows / fired)} rows read per fired reminder`);
        await stopReplicas(reps);
    }
    ctx.reps = await startReplicas(REPLICAS);
    return { tag: 'work', work: results, quiet };
}

async function throughput(ctx) {
    const rx = await startReceiver(SLOW_MS);
    const rows = [];
    try {
        for (const hooks of SLOW_WEBHOOKS) {
            const tenant = await newTenant(`slow-${hooks}`);
            for (let i = 0; i < hooks; i++) {
                await registerWebhook(ctx.reps[0], tenant, `http://127.0.0.1:${rx.port}/slow/${i}`);
            }
            const n = Math.ceil(SLOW_DELIVERIES / hooks);
            const t0 = Date.now() + LEAD_MS;
            await insertDue(tenant.id, n, t0, 0);
            log(`${n * hooks} deliveries (${n} reminders x ${hooks} webhooks) to a receiver answering after ${SLOW_MS} ms`);
            const before = rx.total;
            const delivered = () => psql(`SELECT count(*) FROM outbox WHERE tenant_id = ${tenant.id} AND status = 'delivered'`).then(Number);
            const end = t0 + SETTLE_MS;
            let done = 0;
            while ((done = await delivered()) < n * hooks && Date.now() < end) {
                await sleep(250);
            }
            // Every request counts (each webhook's request carries the same webhook-id).
            const got = rx.total - before;
            const spanMs = rx.lastAt - t0;
            const [retries, errors] = (await psql(`SELECT coalesce(sum(attempts), 0) - count(*),
                    coalesce(string_agg(DISTINCT last_error, '; '), '') FROM outbox WHERE tenant_id = ${tenant.id}`)).split('|');
            rows.push({ hooks, n: n * hooks, got, delivered: done, spanMs, retries: Number(retries), errors,
                perReplica: done / (spanMs / 1000) / ctx.reps.length });
        }
    } finally {
        closeReceiver(rx);
    }
    return { tag: 'throughput', slow: rows };
}

// ------------------------------------------------------------------ report

function report(results) {
    console.log('\ntocsin engine benchmark (a shared machine: figures vary run to run; compare within one run)');
    console.log('lateness = receipt at the local webhook receiver - fire_at, ms (p50/p99/max)');
    for (const r of results) {
        if (REDIS_MODES.length > 1) {
            console.log(`[Redis: ${r.mode}]`);
        }
        if (r.tag.startsWith('burst')) {
            console.log(`\n${r.tag}: ${checks(r)}`);
            console.log(`  tocsin: all recorded fired ${fmt(r.firedAfterMs)} ms and all received ${fmt(r.allAfterMs)} ms after the due instant (lateness ${lat(r)}, ${r.repeats} repeated on the wire)`);
            const c = r.cpu;
            console.log(`  tocsin CPU, from ${CPU_LEAD_MS} ms before the due instant to the end of the wait (the last receipt + about 1 s): PostgreSQL ${c.pg.toFixed(2)} s, ` +
                `replicas ${c.replicas.toFixed(2)} s, this process (the receiver) ${c.self.toFixed(2)} s; ${fmt(((c.pg + c.replicas + c.self) * 1e6) / r.n)} us per reminder in all; ${r.connections} connections opened to the receiver`);
            console.log(`  CPU per reminder, us (gross - the idle baseline of the same processes, measured before over ${IDLE_WINDOW_MS / 1000} s, scaled to the window = net): ${cpuLine(r.cpuPer)}`);
            if (r.bullmq) {
                const b = r.bullmq, h = r.bullmqHook;
                console.log(`  tocsin's webhook bodies: ${fmt(r.bodyBytes)} bytes on average; ${BULLMQ_WORKERS} BullMQ worker processes x concurrency ${BULLMQ_CONCURRENCY}, default job options:`);
                console.log(`  BullMQ, no hop (the processor only records when it ran: no HTTP request, nothing recorded durably): all ${b.processed} of ${b.n} jobs processed ${fmt(b.allAfterMs)} ms after the due instant (lateness ${b.lat}); ` +
                    `CPU ${peerCpu(b)}`);
                console.log(`  BullMQ + webhook (one signed POST of ${fmt(h.bodyBytes)} bytes per job to a receiver of its own here, done on its 2xx): ${h.processed} of ${h.n} jobs answered 2xx, the last ${fmt(h.doneAfterMs)} ms after the due instant; ` +
                    `${h.got} received, all received ${fmt(h.allAfterMs)} ms after it (lateness ${lat(h)}, ${h.repeats} repeated on the wire, ${h.connections} connections); CPU ${peerCpu(h)}`);
                console.log(`  ratio tocsin / BullMQ (no hop): ${(r.allAfterMs / b.allAfterMs).toFixed(2)}; tocsin / BullMQ + webhook: ${(r.allAfterMs / h.allAfterMs).toFixed(2)}`);
            }
            if (r.statements) {
                console.log(`  PostgreSQL statements in the CPU window (pg_stat_statements, by time):\n    ${r.statements.split('\n').join('\n    ')}`);
            }
            const all = results.filter((x) => x.tag.startsWith('burst') && x.bullmq);
            if (r === all[all.length - 1]) {
                const ratios = (peer) => all.map((x) => x.allAfterMs / x[peer].allAfterMs);
                const line = (peer) => `${ratios(peer).map((x) => x.toFixed(2)).join(', ')}; median ${median(ratios(peer)).toFixed(2)}`;
                console.log(`\nburst, all ${all.length} round(s): ratio tocsin / BullMQ (no hop) ${line('bullmq')}; tocsin / BullMQ + webhook ${line('bullmqHook')}`);
                console.log(`  medians of all received: tocsin ${fmt(median(all.map((x) => x.allAfterMs)))} ms, BullMQ (no hop) ${fmt(median(all.map((x) => x.bullmq.allAfterMs)))} ms, ` +
                    `BullMQ + webhook ${fmt(median(all.map((x) => x.bullmqHook.allAfterMs)))} ms`);
            }
        } else if (r.tag.startsWith('kill')) {
            console.log(`\n${r.tag}: ${checks(r)}`);
            console.log(`  killed ${r.killedAfterMs} ms after the due instant with ${fmt(r.inFlight)} requests in flight (its /metrics ${fmt(r.sampleAgeMs)} ms before); ` +
                `${r.repeats} requests repeated on the wire; max lateness ${fmt(r.late[r.late.length - 1])} ms (lateness ${lat(r)})`);
            console.log(`  (requests out, as the gauge counts them: sent and not recorded yet, answered ones included until they are recorded, 5 ms at most; what a replica can repeat is bounded by its TOCSIN_DELIVERY_WORKERS x TOCSIN_DELIVERY_RECEIVER_CONCURRENCY, 2 x 16 by default, for one receiver)`);
            console.log(`  the ${r.held} rows it held (leased, in flight or queued) were all delivered ${fmt(r.recoveredMs)} ms after the kill`);
            console.log(`  the same burst with no kill, just before: max lateness ${fmt(r.base.late[r.base.late.length - 1])} ms (lateness ${lat(r.base)}; ${checks(r.base)})`);
        } else if (r.tag.startsWith('steady')) {
            console.log(`\n${r.tag}: ${checks(r)}`);
            console.log(`  received ${lat(r)}; recorded fired (fired_at - fire_at) ${r.fired}; delivery hop (receipt - fired_at) ${lat({ late: r.hop })}`);
            console.log(`  CPU per reminder over ${fmt1(r.windowMs / 1000)} s, us (gross - the idle baseline of the same processes over ${fmt1(r.idle.ms / 1000)} s just before, scaled = net): ${cpuLine(r.cpuPer)}`);
            const p = r.pg;
            console.log(`  PostgreSQL per fired reminder: ${fmt1(p.xact_commit)} commits (${fmt1(p.xact_rollback)} rollbacks), ${fmt1(p.wal_sync)} WAL syncs, ${fmt1(p.wal_write)} WAL writes, ` +
                `${fmt1(p.wal_records)} WAL records (${fmt(p.wal_bytes)} bytes), ${fmt1(p.blks_hit + p.blks_read)} blocks, rows: ${fmt1(p.tup_returned)} returned, ${fmt1(p.tup_fetched)} fetched, ` +
                `${fmt1(p.tup_inserted)} inserted, ${fmt1(p.tup_updated)} updated, ${fmt1(p.tup_deleted)} deleted`);
            if (r.statements) {
                console.log(`  statements per reminder due, by time (pg_stat_statements):\n    ${r.statements.split('\n').join('\n    ')}`);
            }
        } else if (r.tag.startsWith('lateness')) {
            console.log(`\n${r.tag} (loaded through the API in ${fmt1(r.loadMs / 1000)} s, measured right after): ${checks(r)}`);
            console.log(`  received ${lat(r)}; recorded fired (fired_at - fire_at) ${r.fired}; delivery hop (receipt - fired_at) ${lat({ late: r.hop })}`);
        } else if (r.tag === 'work') {
            console.log('\nwork per fired reminder (PostgreSQL rows read = seq_tup_read + idx_tup_fetch; blocks = heap + index, hit + read);');
            console.log('gross = everything in the window / fired; net = minus the same replicas\' idle rate over the window');
            console.log('replicas  fired  window s  Redis cmds gross/net  PG rows read gross/net  PG blocks gross/net  idle/s: cmds rows blocks  lateness');
            for (const w of r.work) {
                console.log(`${String(w.k).padStart(8)} ${String(w.fired).padStart(6)} ${fmt1(w.d.ms / 1000).padStart(9)}  ${`${fmt1(w.cmds)}/${fmt1(w.cmdsNet)}`.padStart(20)}  ${`${fmt1(w.rows)}/${fmt1(w.rowsNet)}`.padStart(22)}  ${`${fmt1(w.blocks)}/${fmt1(w.blocksNet)}`.padStart(19)}  ${`${fmt(w.idle.cmds * 1000 / w.idle.ms)} ${fmt(w.idle.rows * 1000 / w.idle.ms)} ${fmt(w.idle.blocks * 1000 / w.idle.ms)}`.padStart(24)}  ${lat(w.r)} (${checks(w.r)})`);
                console.log(`         gross by Redis command: ${top(w.d.byCmd, w.fired)}; rows read by table: ${top(w.d.byTable, w.fired)}`);
                if (w.statements) {
                    console.log(`         statements per fired reminder, by blocks (pg_stat_statements):\n           ${w.statements.split('\n').join('\n           ')}`);
                }
            }
            console.log(`idle CPU, ms per second over ${IDLE_WINDOW_MS / 1000} s: PostgreSQL with no replica ${fmt1(r.quiet.pg)}`);
            for (const w of r.work) {
                console.log(`  ${w.k} replica(s): PostgreSQL ${fmt1(w.idle.cpu.pg)} (${fmt1((w.idle.cpu.pg - r.quiet.pg) / w.k)} per replica above no replica), the replicas ${fmt1(w.idle.cpu.replicas)}`);
            }
        } else if (r.tag === 'throughput') {
            console.log(`\nthroughput against a receiver answering after ${SLOW_MS} ms, ${REPLICAS} replicas (TOCSIN_DELIVERY_WORKERS ${WORKERS ?? 'default'}, other delivery settings default)`);
            for (const s of r.slow) {
                console.log(`  ${s.hooks} webhook(s): ${s.delivered} of ${s.n} recorded delivered (${s.got} requests, ${s.retries} attempts beyond the first${s.errors ? `: ${s.errors}` : ''}), the last received ${fmt1(s.spanMs / 1000)} s after the due instant: ${fmt(s.perReplica)} deliveries/s per replica`);
            }
        }
    }
}

// The burst and lateness figures of each Redis mode side by side, each against the first mode's
// (plain Redis) measured in the same run.
function byMode(results) {
    console.log('\nby Redis mode (lateness p50/p99/max ms; ratio = p99 / the first mode\'s p99)');
    for (const kind of ['burst', 'lateness']) {
        const rows = results.filter((r) => r.tag.startsWith(kind) && r.late?.length);
        const base = rows.find((r) => r.mode === REDIS_MODES[0]);
        for (const r of rows) {
            const p99 = quantile(r.late, 0.99), ratio = base ? p99 / Math.max(1, quantile(base.late, 0.99)) : NaN;
            console.log(`  ${kind.padEnd(9)} ${r.mode.padEnd(8)} ${lat(r).padEnd(20)} x${Number.isFinite(ratio) ? ratio.toFixed(2) : '-'}  (${checks(r)})`);
        }
    }
}

function failed(results) {
    const bad = (r) => r.lost > 0 || r.early > 0 || r.dbDup > 0 || r.notFired > 0;
    return results.some((r) => bad(r) || (r.base && bad(r.base)) || (r.work ?? []).some((w) => bad(w.r)) ||
        (r.slow ?? []).some((s) => s.delivered < s.n) || (r.bullmq && r.bullmq.processed < r.bullmq.n) ||
        (r.bullmqHook && (r.bullmqHook.processed < r.bullmqHook.n || r.bullmqHook.got < r.bullmqHook.n)));
}

async function main() {
    if (!DB_URL || !REDIS_PORT || !BIN) {
        die('needs BENCH_DB_URL, BENCH_REDIS_PORT and TOCSIN_BIN (run bench/engine.sh)');
    }
    const ctx = {};
    ctx.tenant = { id: Number(await psql(`SELECT id FROM tenants WHERE name = 'bench'`)), key: env('BENCH_TOKEN') };
    ctx.rx = await startReceiver();
    const results = [];
    try {
        for (redisMode of REDIS_MODES) {
            log(`Redis: ${redisMode} (${redisEnv(redisMode).TOCSIN_REDIS_URL})`);
            ctx.reps = await startReplicas(REPLICAS);
            if (redisMode === REDIS_MODES[0]) {
                await registerWebhook(ctx.reps[0], ctx.tenant, `http://127.0.0.1:${ctx.rx.port}/hook`);
                ctx.loadTenant = await newTenant('load'); // no webhook: its reminders stay pending anyway
            }
            for (const [name, fn] of [['steady', steady], ['burst', burst], ['kill', kill], ['work', work], ['throughput', throughput], ['lateness', lateness]]) {
                for (ctx.round = 1; SCENARIOS.includes(name) && ctx.round <= (name === 'burst' ? BURST_ROUNDS : 1); ctx.round++) {
                    const r = await fn(ctx);
                    results.push({ ...r, mode: redisMode });
                }
            }
            await stopReplicas(ctx.reps);
            ctx.reps = [];
        }
    } finally {
        await stopReplicas(ctx.reps ?? []);
        closeReceiver(ctx.rx);
    }
    report(results);
    if (REDIS_MODES.length > 1) {
        byMode(results);
    }
    process.exit(failed(results) ? 1 : 0);
}

process.on('exit', () => {
    for (const c of live) {
        c.kill('SIGKILL');
    }
});
main().catch((e) => die(e.stack || String(e)));
