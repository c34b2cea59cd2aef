// bench/series.mjs -- recurring meetings measured, driven by bench/series.sh (which builds,
// starts PostgreSQL and Redis, migrates and makes an API key).
//   expand:   BENCH_SERIES weekly series (in four zones, first occurrences spread over the coming
//             week) are written due for expansion, as a bulk import would leave them, and
//             BENCH_REPLICAS replicas with TOCSIN_SERIES_WINDOW_S = BENCH_WINDOW_DAYS days
//             materialise them: the time until every series is covered, and the rows written.
//   lateness: BENCH_DUE single reminders due over BENCH_SPREAD_S seconds, fired to a local webhook
//             receiver, measured BENCH_ROUNDS times each way: with the reconcilers idle, and
//             while they expand every series again from scratch (their rows deleted, their windows
//             reset). Lateness is receipt at the receiver minus fire_at, as bench/engine.mjs
//             measures it, and fired_at - fire_at as recorded by the fire statement.
// Prints one table; exits non-zero when a reminder was lost, fired twice or early, or a series was
// left unexpanded or expanded twice.
import { spawn, execFile } from 'node:child_process';
import http from 'node:http';

import { freePort } from './serve.mjs';

const env = (name, def) => process.env[name] ?? def;
const DB_URL = env('BENCH_DB_URL');
const REDIS_PORT = Number(env('BENCH_REDIS_PORT'));
const BIN = env('TOCSIN_BIN');
const PSQL = env('BENCH_PSQL', 'psql');
const REPLICAS = Number(env('BENCH_REPLICAS', '2'));
const SERIES = Number(env('BENCH_SERIES', '100000'));
const WINDOW_DAYS = Number(env('BENCH_WINDOW_DAYS', '60'));
const DUE = Number(env('BENCH_DUE', '10000'));
const SPREAD_S = Number(env('BENCH_SPREAD_S', '20'));
const ROUNDS = Number(env('BENCH_ROUNDS', '2')); // idle / expanding pairs: the machine is shared
const LEAD_MS = 5000;           // the first single reminder is due this long after it is written
const SETTLE_MS = 30000;        // wait for stragglers after the last due time
const EXPAND_TIMEOUT_MS = 1800000;
const ZONES = ['Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'UTC'];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function die(msg) {
    process.stderr.write(`bench/series.mjs: ${msg}\n`);
    process.exit(1);
}

function psql(sql) {
    return new Promise((resolve, reject) => {
        execFile(PSQL, [DB_URL, '-v', 'ON_ERROR_STOP=1', '-qtAc', sql], { maxBuffer: 64 << 20 },
            (err, stdout, stderr) => (err ? reject(new Error(`psql: ${stderr || err}`)) : resolve(stdout.trim())));
    });
}

function quantile(sorted, q) {
    return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

// Records each delivery's webhook-id, receipt time and fire_at (from the id); answers 204 at once.
function startReceiver() {
    const rx = { seen: new Map(), total: 0 };
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

async function startReplica(i, port) {
    const child = spawn(BIN, ['serve'], {
        stdio: ['ignore', 'inherit', 'inherit'],
        env: {
            ...process.env,
            TOCSIN_HTTP_ADDR: `127.0.0.1:${port}`,
            TOCSIN_DATABASE_URL: DB_URL,
            TOCSIN_REDIS_URL: `redis://127.0.0.1:${REDIS_PORT}/0`,
            TOCSIN_INSTANCE_ID: `bench-${i + 1}`,
            TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
            TOCSIN_MIRROR_HORIZON_S: '3600',
            TOCSIN_SERIES_WINDOW_S: String(WINDOW_DAYS * 86400),
            TOCSIN_LOG_LEVEL: env('BENCH_LOG_LEVEL', 'warn'),
        },
    });
    const end = Date.now() + 30000;
    for (;;) {
        if (await fetch(`http://127.0.0.1:${port}/readyz`).then((x) => x.ok, () => false)) {
            return { port, child };
        }
        if (Date.now() > end) {
            die(`replica on ${port} not ready after 30 s`);
        }
        await sleep(100);
    }
}

// The series, as a bulk import leaves them: due for expansion now, nothing materialised. A weekly
// rule without BYDAY recurs on its first occurrence's weekday, which is therefore its first time.
async function insertSeries(tenant) {
    const zones = `ARRAY[${ZONES.map((z) => `'${z}'`).join(',')}]`;
    await psql(`
        WITH m AS (
            INSERT INTO meetings (id, tenant_id, title, starts_at, time_zone, participants, version, created_at, updated_at)
            SELECT gen_random_uuid(), ${tenant}, 'weekly',
                   date_trunc('minute', now()) + interval '1 hour' + (i % 10080) * interval '1 minute',
                   (${zones})[1 + i % ${ZONES.length}], '[]'::json, 1, now(), now()
            FROM generate_series(0, ${SERIES - 1}) AS i
            RETURNING id, tenant_id)
        INSERT INTO series (meeting_id, tenant_id, rrule, exdates, rdates, reminder_minutes, reminder_channels,
                            shard, covered_to, extend_after)
        SELECT id, tenant_id, 'FREQ=WEEKLY', '{}', '{}', '{5}', '{3}', get_byte(uuid_send(id), 0), now(), now()
        FROM m`);
}

const occurrenceRows = async () => Number(await psql('SELECT count(*) FROM reminders WHERE original_start IS NOT NULL'));
const pendingSeries = async () => Number(await psql('SELECT count(*) FROM series WHERE extend_after <= now()'));

// Waits until no series is due; returns the seconds it took and the samples of progress.
async function expanded(t0) {
    const end = t0 + EXPAND_TIMEOUT_MS;
    while (Date.now() < end) {
        if ((await pendingSeries()) === 0) {
            return (Date.now() - t0) / 1000;
        }
        await sleep(250);
    }
    die(`series still due after ${EXPAND_TIMEOUT_MS / 1000} s`);
}

// Inserts n single meetings with one webhook reminder each, due at t0 + i * stepUs microseconds.
async function insertDue(tenant, n, t0Ms, stepUs) {
    await psql(`
        WITH m AS (
            INSERT INTO meetings (id, tenant_id, title, starts_at, participants, version, created_at, updated_at)
            SELECT gen_random_uuid(), ${tenant}, 'single',
                   to_timestamp(${t0Ms} / 1000.0) + (i::bigint * ${stepUs}) * interval '1 microsecond' + interval '5 minutes',
                   '[]'::json, 1, now(), now()
            FROM generate_series(0, ${n - 1}) AS i
            RETURNING id, tenant_id, starts_at)
        INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status, channels)
        SELECT id, tenant_id, 5, starts_at - interval '5 minutes', 'pending', 1 FROM m`);
}

async function lateness(rx, tenant, tag, during) {
    const t0 = Date.now() + LEAD_MS;
    const stepUs = Math.floor((SPREAD_S * 1e6) / DUE);
    await insertDue(tenant, DUE, t0, stepUs);
    const last = t0 + Math.floor(((DUE - 1) * stepUs) / 1000) + 1;
    const work = during ? during() : Promise.resolve(null);
    while (Date.now() < last + SETTLE_MS) {
        let c = 0;
        for (const v of rx.seen.values()) {
            c += v.fireAt >= t0 && v.fireAt <= last ? 1 : 0;
        }
        if (c >= DUE && Date.now() > last + 2000) {
            break;
        }
        await sleep(200);
    }
    const late = [];
    let early = 0, wireDup = 0;
    for (const { at, fireAt, count } of rx.seen.values()) {
        if (fireAt >= t0 && fireAt <= last) {
            late.push(at - fireAt);
            early += at < fireAt ? 1 : 0;
            wireDup += count - 1;
        }
    }
    late.sort((a, b) => a - b);
    const fired = await psql(`SELECT concat_ws('/', percentile_disc(0.5) WITHIN GROUP (ORDER BY l),
            percentile_disc(0.99) WITHIN GROUP (ORDER BY l), max(l))
        FROM (SELECT round(extract(epoch FROM fired_at - fire_at) * 1000) AS l FROM reminders
              WHERE original_start IS NULL AND fire_at BETWEEN to_timestamp(${t0} / 1000.0)
                AND to_timestamp(${last} / 1000.0) AND status = 'fired') f`);
    const overlap = await work;
    return { tag, n: DUE, got: late.length, lost: DUE - late.length, early, wireDup, late, fired, t0, last, overlap };
}

function fmt(v) {
    return Number.isNaN(v) ? '-' : String(Math.round(v));
}

async function main() {
    if (!DB_URL || !REDIS_PORT || !BIN) {
        die('needs BENCH_DB_URL, BENCH_REDIS_PORT and TOCSIN_BIN (run bench/series.sh)');
    }
    const tenant = Number(await psql(`SELECT id FROM tenants WHERE name = 'bench'`));
    const rx = await startReceiver();
    process.stderr.write(`==> writing ${SERIES} weekly series due for expansion\n`);
    await insertSeries(tenant);
    await psql('ANALYZE');
    const reps = [];
    const t0 = Date.now();
    for (let i = 0; i < REPLICAS; i++) {
        reps.push(await startReplica(i, await freePort()));
    }
    process.stderr.write(`==> ${REPLICAS} replicas expanding them ${WINDOW_DAYS} days ahead\n`);
    const expandS = await expanded(t0);
    const rows = await occurrenceRows();
    const twice = Number(await psql(`SELECT count(*) FROM (SELECT 1 FROM reminders WHERE original_start IS NOT NULL
        GROUP BY meeting_id, original_start, minutes_before HAVING count(*) > 1) d`));
    const minMax = await psql(`SELECT concat_ws('/', min(n), max(n)) FROM (SELECT count(*) AS n FROM reminders
        WHERE original_start IS NOT NULL GROUP BY meeting_id) c`);
    const hook = await fetch(`http://127.0.0.1:${reps[0].port}/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env('BENCH_TOKEN')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://127.0.0.1:${rx.port}/hook` }),
    });
    if (hook.status !== 201) {
        die(`POST /v1/webhooks: ${hook.status} ${await hook.text()}`);
    }
    const results = [];
    try {
        for (let round = 1; round <= ROUNDS; round++) {
            process.stderr.write(`==> round ${round}: ${DUE} reminders due over ${SPREAD_S} s, reconcilers idle\n`);
            results.push(await lateness(rx, tenant, `${round}: idle`, null));
            process.stderr.write(`==> round ${round}: the same while every series is expanded again\n`);
            // Reset first (nothing materialised), every series due when the first reminder is:
            // the reset's own statements then fall outside the measured span, the expansion in it.
            await psql('DELETE FROM reminders WHERE original_start IS NOT NULL');
            await psql('VACUUM ANALYZE reminders');
            await psql(`UPDATE series SET covered_to = now(), extend_after = now() + interval '${LEAD_MS} milliseconds'`);
            const due = Date.now() + LEAD_MS;
            results.push(await lateness(rx, tenant, `${round}: expanding`, async () => {
                await sleep(due - Date.now());
                const start = Date.now();
                const s = await expanded(start);
                return { start, end: start + s * 1000, rows: await occurrenceRows() };
            }));
        }
    } finally {
        for (const r of reps) {
            r.child.kill('SIGTERM');
        }
        await Promise.all(reps.map((r) => new Promise((res) => (r.child.exitCode !== null ? res() : r.child.on('exit', res)))));
        rx.server.close();
        rx.server.closeAllConnections?.();
    }
    console.log(`\nrecurring meetings, ${REPLICAS} replicas (a shared machine: figures vary with its other load)`);
    console.log(`expand: ${SERIES} weekly series, ${WINDOW_DAYS} days ahead: ${expandS.toFixed(1)} s, ` +
        `${rows} occurrence rows (${fmt(rows / expandS)} rows/s, ${fmt(SERIES / expandS)} series/s), ` +
        `rows per series min/max ${minMax}, written twice: ${twice}`);
    console.log('lateness = receipt at the webhook - fire_at (ms)');
    for (const r of results) {
        const q = `${fmt(quantile(r.late, 0.5))}/${fmt(quantile(r.late, 0.99))}/${fmt(r.late[r.late.length - 1] ?? NaN)}`;
        let note = '';
        if (r.overlap) {
            const covered = Math.max(0, Math.min(r.last, r.overlap.end) - Math.max(r.t0, r.overlap.start));
            note = ` | expansion ${((r.overlap.end - r.overlap.start) / 1000).toFixed(1)} s ` +
                `(${r.overlap.rows} rows), overlapping ${fmt((100 * covered) / (r.last - r.t0))}% of the due span`;
        }
        console.log(`${r.tag.padEnd(13)} p50/p99/max ${q.padEnd(16)} received ${r.got}/${r.n} early ${r.early} ` +
            `dup-wire ${r.wireDup}; recorded fired p50/p99/max ${r.fired || '-'} ms${note}`);
    }
    const bad = twice > 0 || results.some((r) => r.lost > 0 || r.early > 0);
    process.exit(bad ? 1 : 0);
}

main().catch((e) => die(e.stack || String(e)));
