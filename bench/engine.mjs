// bench/engine.mjs -- the reminder engine measured end to end, driven by bench/engine.sh (which
// builds, starts PostgreSQL and Redis, migrates and makes an API key). Starts BENCH_REPLICAS
// `tocsin serve` processes on one database and one Redis, a local webhook receiver, and runs:
//   lateness: BENCH_DUE reminders due evenly over BENCH_SPREAD_S seconds, once for each pending
//             load in BENCH_PENDING (other reminders mirrored in Redis with a TTL meanwhile);
//   burst:    BENCH_BURST reminders due at the same millisecond;
//   kill:     BENCH_KILL_DUE reminders due over 10 s, one replica killed (SIGKILL) 5 s in;
//   subdown:  1,000 reminders due over 10 s while every subscriber connection is killed
//             (CLIENT KILL TYPE pubsub) every 100 ms.
// Lateness is receipt time at the receiver minus the reminder's fire_at. The baseline, measured in
// the same run, is the seed articles' approach: for each reminder the bench writes a shadow key
// `bl:rem:<n>:<fire_ms>` with PXAT fire_ms into the same Redis (tocsin deletes its own keys when it
// fires, so those cannot serve) and records when Redis's own `expired` event for it arrives at a
// plain subscriber. Prints one table; exits
// non-zero when a reminder was lost, delivered twice or early.
import { spawn, execFile } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';

const env = (name, def) => process.env[name] ?? def;
const DB_URL = env('BENCH_DB_URL');
const REDIS_PORT = Number(env('BENCH_REDIS_PORT'));
const BIN = env('TOCSIN_BIN');
const PSQL = env('BENCH_PSQL', 'psql');
const REPLICAS = Number(env('BENCH_REPLICAS', '3'));
const PENDING = env('BENCH_PENDING', '0 1000000').split(/\s+/).filter(Boolean).map(Number);
const DUE = Number(env('BENCH_DUE', '10000'));
const SPREAD_S = Number(env('BENCH_SPREAD_S', '20'));
const BURST = Number(env('BENCH_BURST', '50000'));
const SCENARIOS = env('BENCH_SCENARIOS', 'lateness burst kill subdown').split(/\s+/);
const KILL_DUE = Number(env('BENCH_KILL_DUE', '10000'));
const LEAD_MS = 15000;         // first reminder due this long after its rows are written
const SETTLE_MS = 60000;       // wait for stragglers after the last due time
const ARM_TIMEOUT_MS = 600000; // for the reconciler to mirror the pending load into Redis
const PREFIX = 'bench';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

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

function redis(...args) {
    return new Promise((resolve, reject) => {
        execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(REDIS_PORT), ...args],
            (err, stdout) => (err ? reject(err) : resolve(stdout.trim())));
    });
}

function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.once('error', reject);
        s.listen(0, '127.0.0.1', () => {
            const { port } = s.address();
            s.close(() => resolve(port));
        });
    });
}

function quantile(sorted, q) {
    if (sorted.length === 0) {
        return NaN;
    }
    return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

// ------------------------------------------------------------------ the receiver

// Records each delivery's webhook-id, receipt time and fire_at; answers 204 at once. The fire time
// comes from the webhook-id (rem_<id>_<fire_at_ms>): the body is drained, not parsed, so that the
// receiver is as cheap as it can be and measures tocsin rather than itself.
function startReceiver() {
    const rx = { seen: new Map(), total: 0, early: 0 };
    rx.server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            const now = Date.now();
            res.writeHead(204).end();
            const id = req.headers['webhook-id'] ?? '';
            const fireAt = Number(/^rem_\d+_(\d+)$/.exec(id)?.[1] ?? NaN);
            rx.total++;
            const seen = rx.seen.get(id);
            if (seen) {
                seen.count++;
            } else {
                rx.seen.set(id, { at: now, fireAt, count: 1 });
            }
        });
    });
    rx.server.keepAliveTimeout = 60000;
    return new Promise((resolve) => rx.server.listen(0, '127.0.0.1', () => {
        rx.port = rx.server.address().port;
        resolve(rx);
    }));
}

// ------------------------------------------------------------------ the baseline subscriber

// A plain keyspace-event subscriber, as in the seed articles: records when each reminder key's
// `expired` event arrives.
function startBaseline() {
    const bl = { at: new Map() };
    bl.child = spawn('stdbuf', ['-oL', 'redis-cli', '-h', '127.0.0.1', '-p', String(REDIS_PORT), '--csv',
        'SUBSCRIBE', '__keyevent@0__:expired'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    bl.child.stdout.on('data', (d) => {
        const now = Date.now();
        buf += d;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            const m = /"message","[^"]*","(bl:rem:(\d+):(\d+))"/.exec(line);
            if (m && !bl.at.has(m[1])) {
                bl.at.set(m[1], now - Number(m[3]));
            }
        }
    });
    return bl;
}

// ------------------------------------------------------------------ tocsin replicas

async function startReplica(i, port) {
    const child = spawn(BIN, ['serve'], {
            stdio: ['ignore', 'inherit', 'inherit'],
            env: {
                ...process.env,
                TOCSIN_HTTP_ADDR: `127.0.0.1:${port}`,
                TOCSIN_DATABASE_URL: DB_URL,
                TOCSIN_REDIS_URL: `redis://127.0.0.1:${REDIS_PORT}/0`,
                TOCSIN_REDIS_PREFIX: PREFIX,
                TOCSIN_INSTANCE_ID: `bench-${i + 1}`,
                TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
                TOCSIN_MIRROR_HORIZON_S: '3600',
                TOCSIN_LOG_LEVEL: 'warn',
                ...(process.env.BENCH_WORKERS ? { TOCSIN_DELIVERY_WORKERS: process.env.BENCH_WORKERS } : {}),
            },
        });
    const end = Date.now() + 30000;
    for (;;) {
        const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((x) => x.ok, () => false);
        if (ok) {
            return { port, child };
        }
        if (Date.now() > end) {
            die(`replica on ${port} not ready after 30 s`);
        }
        await sleep(100);
    }
}

async function startReplicas() {
    const reps = [];
    for (let i = 0; i < REPLICAS; i++) {
        reps.push(await startReplica(i, await freePort()));
    }
    return reps;
}

async function stopReplicas(reps) {
    for (const r of reps) {
        r.child.kill('SIGTERM');
    }
    await Promise.all(reps.map((r) => new Promise((res) => (r.child.exitCode !== null ? res() : r.child.on('exit', res)))));
}

// ------------------------------------------------------------------ data

// Writes the baseline's shadow keys for n reminders due at t0Ms + i * stepUs microseconds.
let shadowSerial = 0;
function shadowKeys(n, t0Ms, stepUs) {
    const lines = [];
    for (let i = 0; i < n; i++) {
        const at = t0Ms + Math.floor((i * stepUs) / 1000);
        const key = `bl:rem:${++shadowSerial}:${at}`;
        lines.push(`*5\r\n$3\r\nSET\r\n$${key.length}\r\n${key}\r\n$0\r\n\r\n$4\r\nPXAT\r\n$${String(at).length}\r\n${at}\r\n`);
    }
    return new Promise((resolve, reject) => {
        const child = spawn('redis-cli', ['-h', '127.0.0.1', '-p', String(REDIS_PORT), '--pipe'], { stdio: ['pipe', 'ignore', 'inherit'] });
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`redis-cli --pipe: ${code}`))));
        child.stdin.end(lines.join(''));
    });
}

// Inserts n meetings with one reminder each (minutes_before 5), due at t0 + i * stepUs microseconds.
async function insertDue(tenant, n, t0Ms, stepUs, shadow = true) {
    if (shadow) {
        await shadowKeys(n, t0Ms, stepUs);
    }
    await psql(`
        WITH m AS (
            INSERT INTO meetings (id, tenant_id, title, starts_at, participants, version, created_at, updated_at)
            SELECT gen_random_uuid(), ${tenant}, 'bench',
                   to_timestamp(${t0Ms} / 1000.0) + (i::bigint * ${stepUs}) * interval '1 microsecond' + interval '5 minutes',
                   '[]'::json, 1, now(), now()
            FROM generate_series(0, ${n - 1}) AS i
            RETURNING id, tenant_id, starts_at)
        INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status)
        SELECT id, tenant_id, 5, starts_at - interval '5 minutes', 'pending' FROM m`);
}

async function waitArmed(want) {
    const end = Date.now() + ARM_TIMEOUT_MS;
    while (Date.now() < end) {
        if (Number(await redis('DBSIZE')) >= want) {
            return;
        }
        await sleep(1000);
    }
    die(`Redis holds fewer than ${want} keys after ${ARM_TIMEOUT_MS / 1000} s`);
}

// ------------------------------------------------------------------ scenarios

// Waits until `ids` are all received or SETTLE_MS after lastDueMs; returns the receipt stats.
async function collect(rx, bl, t0Ms, lastDueMs, n, tag) {
    while (Date.now() < lastDueMs + SETTLE_MS) {
        if (countFrom(rx, t0Ms) >= n && Date.now() > lastDueMs + 2000) {
            break;
        }
        await sleep(200);
    }
    const late = [];
    let early = 0, lastAt = 0, wireDup = 0;
    for (const { at, fireAt, count } of rx.seen.values()) {
        if (fireAt >= t0Ms && fireAt <= lastDueMs) {
            late.push(at - fireAt);
            early += at < fireAt ? 1 : 0;
            lastAt = Math.max(lastAt, at);
            wireDup += count - 1;
        }
    }
    late.sort((a, b) => a - b);
    const base = [];
    for (const [key, ms] of bl.at) {
        const fire = Number(key.split(':').pop());
        if (fire >= t0Ms && fire <= lastDueMs) {
            base.push(ms);
        }
    }
    base.sort((a, b) => a - b);
    const dbDup = Number(await psql(`SELECT count(*) FROM (SELECT reminder_id, fire_at, webhook_id FROM outbox
        WHERE fire_at BETWEEN to_timestamp(${t0Ms} / 1000.0) AND to_timestamp(${lastDueMs} / 1000.0)
        GROUP BY 1, 2, 3 HAVING count(*) > 1) d`));
    const notFired = Number(await psql(`SELECT count(*) FROM reminders
        WHERE fire_at BETWEEN to_timestamp(${t0Ms} / 1000.0) AND to_timestamp(${lastDueMs} / 1000.0)
          AND status <> 'fired'`));
    const fired = (await psql(`SELECT concat_ws('/', percentile_disc(0.5) WITHIN GROUP (ORDER BY l),
            percentile_disc(0.99) WITHIN GROUP (ORDER BY l), max(l))
        FROM (SELECT round(extract(epoch FROM fired_at - fire_at) * 1000) AS l FROM reminders
              WHERE fire_at BETWEEN to_timestamp(${t0Ms} / 1000.0) AND to_timestamp(${lastDueMs} / 1000.0)
                AND status = 'fired') f`)) || '-';
    return { tag, n, got: late.length, lost: n - late.length, early, dbDup, wireDup, notFired, late, base, lastAt, fired };
}

function countFrom(rx, t0Ms) {
    let c = 0;
    for (const v of rx.seen.values()) {
        c += v.fireAt >= t0Ms ? 1 : 0;
    }
    return c;
}

async function lateness(rx, bl, tenant, pending) {
    if (pending > 0) {
        const now = Date.now();
        // The load falls due 10 to 50 minutes from now: inside the mirror horizon, after the run.
        process.stderr.write(`==> inserting ${pending} pending reminders\n`);
        await insertDue(tenant, pending, now + 600000, Math.floor(2400e6 / pending), false);
        process.stderr.write('==> waiting for the reconciler to mirror them into Redis\n');
        await waitArmed(pending);
    }
    const t0 = Date.now() + LEAD_MS;
    const stepUs = Math.floor((SPREAD_S * 1e6) / DUE);
    await insertDue(tenant, DUE, t0, stepUs);
    const last = t0 + Math.floor(((DUE - 1) * stepUs) / 1000) + 1;
    process.stderr.write(`==> ${DUE} reminders due over ${SPREAD_S} s with ${pending} others pending\n`);
    return collect(rx, bl, t0, last, DUE, `lateness, ${pending} pending`);
}

async function burst(rx, bl, tenant) {
    const t0 = Date.now() + LEAD_MS + 10000;
    await insertDue(tenant, BURST, t0, 0);
    process.stderr.write(`==> ${BURST} reminders due at one instant\n`);
    const r = await collect(rx, bl, t0, t0, BURST, 'burst');
    r.allAfterMs = r.lost === 0 ? r.lastAt - t0 : NaN;
    r.firedAfterMs = Number(await psql(`SELECT round(extract(epoch FROM max(fired_at)) * 1000) - ${t0}
        FROM reminders WHERE fire_at = to_timestamp(${t0} / 1000.0)`));
    return r;
}

// One replica SIGKILLed halfway through KILL_DUE reminders due over 10 s; started again after.
async function kill(rx, bl, tenant, reps) {
    const spread = 10000;
    const t0 = Date.now() + LEAD_MS;
    const stepUs = Math.floor((spread * 1000) / KILL_DUE);
    await insertDue(tenant, KILL_DUE, t0, stepUs);
    const last = t0 + Math.floor(((KILL_DUE - 1) * stepUs) / 1000) + 1;
    process.stderr.write(`==> ${KILL_DUE} reminders due over 10 s, replica ${reps.length} killed 5 s in\n`);
    const victim = reps[reps.length - 1];
    const timer = setTimeout(() => victim.child.kill('SIGKILL'), t0 + spread / 2 - Date.now());
    const r = await collect(rx, bl, t0, last, KILL_DUE, `kill -9 one of ${reps.length}`);
    clearTimeout(timer);
    await new Promise((res) => (victim.child.exitCode !== null || victim.child.signalCode !== null ? res() : victim.child.on('exit', res)));
    reps[reps.length - 1] = await startReplica(reps.length - 1, victim.port);
    return r;
}

// 1,000 reminders due over 10 s while every pubsub connection is killed every 100 ms.
async function subdown(rx, bl, tenant) {
    const n = 1000, spread = 10000;
    const t0 = Date.now() + LEAD_MS;
    const stepUs = Math.floor((spread * 1000) / n);
    await insertDue(tenant, n, t0, stepUs);
    const last = t0 + Math.floor(((n - 1) * stepUs) / 1000) + 1;
    process.stderr.write(`==> ${n} reminders due over 10 s, subscribers killed every 100 ms meanwhile\n`);
    await sleep(t0 - Date.now());
    const end = last;
    while (Date.now() < end) {
        await redis('CLIENT', 'KILL', 'TYPE', 'pubsub').catch(() => {});
        await sleep(100);
    }
    return collect(rx, bl, t0, last, n, 'subscriber down 10 s');
}

function fmt(v) {
    return Number.isNaN(v) ? '-' : String(Math.round(v));
}

function report(results) {
    console.log(`\nreminder engine, ${REPLICAS} replicas, lateness = receipt at the webhook - fire_at (ms)`);
    console.log('(lost: never received; dup db: outbox rows twice; dup wire: requests received twice; not fired: reminders not recorded fired)');
    console.log('scenario                    tocsin p50/p99/max      received lost dup-db dup-wire early not-fired | baseline (Redis expired events) p50/p99/max, arrived');
    for (const r of results) {
        const q = (a) => `${fmt(quantile(a, 0.5))}/${fmt(quantile(a, 0.99))}/${fmt(a[a.length - 1] ?? NaN)}`;
        console.log(`${r.tag.padEnd(27)} ${q(r.late).padEnd(22)} ${String(r.got).padStart(8)} ${String(r.lost).padStart(4)} ${String(r.dbDup).padStart(6)} ${String(r.wireDup).padStart(8)} ${String(r.early).padStart(5)} ${String(r.notFired).padStart(9)} | ${q(r.base)} ms, ${r.base.length} of ${r.n}` +
            `\n  recorded fired (fired_at - fire_at) p50/p99/max: ${r.fired} ms` +
            (r.allAfterMs !== undefined ? `\n  burst: all ${r.n} recorded fired ${fmt(r.firedAfterMs)} ms and received ${fmt(r.allAfterMs)} ms after the due instant` : ''));
    }
}

async function main() {
    if (!DB_URL || !REDIS_PORT || !BIN) {
        die('needs BENCH_DB_URL, BENCH_REDIS_PORT and TOCSIN_BIN (run bench/engine.sh)');
    }
    const tenant = Number(await psql(`SELECT id FROM tenants WHERE name = 'bench'`));
    const token = env('BENCH_TOKEN');
    const rx = await startReceiver();
    const bl = startBaseline();
    const reps = await startReplicas();
    const hook = await fetch(`http://127.0.0.1:${reps[0].port}/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://127.0.0.1:${rx.port}/hook` }),
    });
    if (hook.status !== 201) {
        die(`POST /v1/webhooks: ${hook.status} ${await hook.text()}`);
    }
    const results = [];
    try {
        if (SCENARIOS.includes('lateness')) {
            for (const p of PENDING) {
                results.push(await lateness(rx, bl, tenant, p));
            }
        }
        if (SCENARIOS.includes('burst')) {
            results.push(await burst(rx, bl, tenant));
        }
        if (SCENARIOS.includes('kill')) {
            results.push(await kill(rx, bl, tenant, reps));
        }
        if (SCENARIOS.includes('subdown')) {
            results.push(await subdown(rx, bl, tenant));
        }
    } finally {
        await stopReplicas(reps);
        bl.child.kill('SIGTERM');
        rx.server.close();
        rx.server.closeAllConnections?.();
    }
    report(results);
    const bad = results.some((r) => r.lost > 0 || r.dbDup > 0 || r.early > 0 || r.notFired > 0);
    if (rx.total !== rx.seen.size) {
        console.log(`duplicates on the wire: ${rx.total - rx.seen.size} (at-least-once; the record is what must be once)`);
    }
    process.exit(bad ? 1 : 0);
}

main().catch((e) => die(e.stack || String(e)));
