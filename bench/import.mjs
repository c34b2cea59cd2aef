// bench/import.mjs -- reminder lateness while `tocsin import` writes, driven by bench/import.sh
// (which builds a release binary, starts PostgreSQL, Redis and one `tocsin serve` replica, and
// writes the import's JSON lines). A local webhook receiver gets a tenant's reminders; a steady
// flow of them, one due every BENCH_FLOW_STEP_MS, is written by SQL before each phase starts:
//   baseline: the flow due over BENCH_BASELINE_S with nothing else running;
//   import:   one phase a variant of BENCH_IMPORT_VARIANTS (space-separated, each a comma list
//             of jobs=N, batch=N, rate=N: `tocsin import`'s --jobs, --batch, --rate, and
//             nice=N: the import and its backends reniced (variantArgs); default
//             jobs=BENCH_IMPORT_JOBS), each importing BENCH_IMPORT_FILE into a tenant of its own:
//             the flow due from the import's start to well past its end, the import started as
//             the flow's first reminder falls due; the reminders due while it ran are measured.
// Lateness is receipt time at the receiver minus the reminder's fire_at (from its webhook-id),
// split at the fire statement's start (reminders.fired_at): before it, the scheduler, dispatch
// and Redis claim; after it, the fire statement, its commit and the delivery. Each phase also
// prints how busy the machine's CPUs were (/proc/stat), PostgreSQL's WAL rates and sync time
// (pg_stat_wal), and how long the replica's threads and backends waited for a CPU (schedstat,
// BENCH_SERVE_PID the replica's process); BENCH_IMPORT_PROFILE=1 samples
// pg_stat_activity every PROFILE_EVERY_MS during each import and prints what the active backends
// of the replica and the import were waiting on. Exits non-zero when an import failed or a
// reminder due in a phase was not received.
import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';

const env = (name, def) => process.env[name] ?? def;
const DB_URL = env('BENCH_DB_URL');
const BIN = env('TOCSIN_BIN');
const PSQL = env('BENCH_PSQL', 'psql');
const BASE = env('BENCH_URL');
const FILE = env('BENCH_IMPORT_FILE');
const LINES = Number(env('BENCH_IMPORT_LINES'));
const JOBS = env('BENCH_IMPORT_JOBS', '4');
const STEP_MS = Number(env('BENCH_FLOW_STEP_MS', '5'));
const BASELINE_S = Number(env('BENCH_BASELINE_S', '30'));
const IMPORT_FLOW_S = Number(env('BENCH_IMPORT_FLOW_S', '400')); // must outlast the import
const VARIANTS = env('BENCH_IMPORT_VARIANTS', `jobs=${JOBS}`).trim().split(/\s+/);
const PROFILE = env('BENCH_IMPORT_PROFILE', '0') === '1';
const SERVE_PID = env('BENCH_SERVE_PID');

const LEAD_MS = 15000;    // a flow written by SQL falls due this long after (> the scheduler's 10 s window)
const SETTLE_MS = 5000;   // receipts of the last due reminders may take this long
const RATE_FLOW_SLACK = 3; // a rate-bound import's flow lasts this much longer than lines/rate
const PROFILE_EVERY_MS = 200;
const PROFILE_TOP = 12;   // wait-event lines printed a phase
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (msg) => process.stderr.write(`==> ${msg}\n`);

function die(msg) {
    process.stderr.write(`bench/import.mjs: ${msg}\n`);
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

// Records each delivery's first receipt by webhook-id (rem_<id>_<fire_at ms>); answers 204.
function startReceiver() {
    const rx = { seen: new Map() };
    rx.server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            const id = req.headers['webhook-id'] ?? '';
            const m = /^rem_(\d+)_(\d+)$/.exec(id);
            if (m && !rx.seen.has(id)) {
                rx.seen.set(id, { at: Date.now(), fireAt: Number(m[2]) });
            }
            res.writeHead(204).end();
        });
    });
    rx.server.keepAliveTimeout = 60000;
    return new Promise((resolve) => rx.server.listen({ port: 0, host: '127.0.0.1', backlog: 1024 }, () => {
        rx.port = rx.server.address().port;
        resolve(rx);
    }));
}

function keysCreate(tenant) {
    return new Promise((resolve, reject) => {
        execFile(BIN, ['keys', 'create', '--tenant', tenant], { env: { ...process.env, TOCSIN_DATABASE_URL: DB_URL } },
            (err, stdout, stderr) => (err ? reject(new Error(`tocsin keys create: ${stderr}`)) : resolve(stdout.trim())));
    });
}

// n reminders of tenant, one every STEP_MS from t0Ms, each a meeting of its own, written by SQL
// (exact fire times; the scheduler's poll reads them as they come into its window).
async function insertFlow(tenant, t0Ms, n) {
    await psql(`
        WITH m AS (
            INSERT INTO meetings (id, tenant_id, title, starts_at, participants, version, created_at, updated_at)
            SELECT gen_random_uuid(), ${tenant}, 'flow',
                   to_timestamp(${t0Ms} / 1000.0) + (i * ${STEP_MS} || ' ms')::interval + interval '5 minutes',
                   '[]'::json, 1, now(), now()
            FROM generate_series(0, ${n - 1}) AS i
            RETURNING id, tenant_id, starts_at)
        INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status)
        SELECT id, tenant_id, 5, starts_at - interval '5 minutes', 'pending' FROM m`);
}

// The lateness (sorted, ms) of the flow's reminders due in [t0, t1], split at the fire
// statement's start (toFire: fired_at - fire_at, after: receipt - fired_at, each sorted), and
// how many of those the database holds that were not received.
async function lateness(rx, tenant, t0, t1) {
    const rows = await psql(`SELECT id, (extract(epoch FROM fired_at) * 1000)::bigint FROM reminders
        WHERE tenant_id = ${tenant} AND fire_at BETWEEN to_timestamp(${t0} / 1000.0) AND to_timestamp(${t1} / 1000.0)`);
    const fired = new Map(rows.split('\n').filter(Boolean).map((r) => r.split('|').map(Number)));
    const late = [], toFire = [], after = [];
    for (const [id, v] of rx.seen) {
        if (v.fireAt >= t0 && v.fireAt <= t1) {
            late.push(v.at - v.fireAt);
            const f = fired.get(Number(/^rem_(\d+)_/.exec(id)[1]));
            if (f > 0) { // fired_at is NULL (0 here) only if it never fired
                toFire.push(f - v.fireAt);
                after.push(v.at - f);
            }
        }
    }
    for (const a of [late, toFire, after]) {
        a.sort((x, y) => x - y);
    }
    return { late, toFire, after, due: fired.size, missing: fired.size - late.length };
}

// The CPUs' counters (/proc/stat's first line); busy(a, b) is the share of the time between
// two readings that they were not idle.
function cpuTimes() {
    const v = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return { idle: v[3] + v[4], total: v.reduce((x, y) => x + y, 0) };
}
const busy = (a, b) => 1 - (b.idle - a.idle) / (b.total - a.total);

// PostgreSQL's WAL counters (pg_stat_wal; main turns track_wal_io_timing on): bytes, full-page
// images, syncs and their time (ms).
async function walStats() {
    const [bytes, fpi, syncs, syncMs] = (await psql('SELECT wal_bytes, wal_fpi, wal_sync, wal_sync_time FROM pg_stat_wal'))
        .split('|').map(Number);
    return { bytes, fpi, syncs, syncMs };
}
const walLine = (a, b, s) => `WAL ${((b.bytes - a.bytes) / 1e6 / s).toFixed(1)} MB/s ` +
    `(${Math.round((b.fpi - a.fpi) / s)} full-page images/s, ${Math.round((b.syncs - a.syncs) / s)} syncs/s ` +
    `of ${((b.syncMs - a.syncMs) / Math.max(1, b.syncs - a.syncs)).toFixed(2)} ms each)`;

// The replica's processes: its own and its PostgreSQL backends.
async function replicaPids() {
    const rows = await psql("SELECT pid FROM pg_stat_activity WHERE application_name = 'tocsin'");
    return [Number(SERVE_PID), ...rows.split('\n').filter(Boolean).map(Number)];
}

// pid -> the ms its threads have been runnable but waiting for a CPU (schedstat's run_delay).
function runDelays(pids) {
    const out = new Map();
    for (const pid of pids) {
        try {
            let ns = 0;
            for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
                ns += Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[1]);
            }
            out.set(pid, ns / 1e6);
        } catch {
            // gone (a backend that disconnected): left out of both readings
        }
    }
    return out;
}

// How long, a second, the replica's process and its backends waited for a CPU between a and b.
function cpuWaitLine(a, b, s) {
    let own = 0, backends = 0;
    for (const [pid, ms] of b) {
        if (a.has(pid)) {
            const d = ms - a.get(pid);
            pid === Number(SERVE_PID) ? (own += d) : (backends += d);
        }
    }
    return `the replica waited for a CPU ${Math.round(own / s)} ms a second in its threads, ` +
        `${Math.round(backends / s)} ms a second in its PostgreSQL backends`;
}

const fmt = (v) => (Number.isFinite(v) ? String(Math.round(v)) : '-');
const p99 = (a) => quantile(a, 0.99);
const line = (tag, r) => `${tag}: ${r.late.length} of ${r.due} received, lateness p50/p99/max ` +
    `${fmt(quantile(r.late, 0.5))}/${fmt(p99(r.late))}/${fmt(r.late[r.late.length - 1])} ms ` +
    `(p99 before the fire statement ${fmt(p99(r.toFire))} ms, from it to receipt ${fmt(p99(r.after))} ms), ` +
    `CPUs ${Math.round(r.cpu * 100)}% busy`;

// jobs=4,rate=3000 -> ['--jobs', '4', '--rate', '3000'], its rate (0: none) and nice (nice=N:
// not an option of the import but the experiment of running it and its PostgreSQL backends at
// that niceness, to see how much of the lateness is their CPU; 0: none).
function variantArgs(v) {
    const args = [];
    let rate = 0, nice = 0;
    for (const kv of v.split(',')) {
        const m = /^(jobs|batch|rate|nice)=(\d+)$/.exec(kv);
        if (!m) {
            die(`BENCH_IMPORT_VARIANTS: '${kv}' is not jobs=N, batch=N, rate=N or nice=N`);
        }
        if (m[1] === 'nice') {
            nice = Number(m[2]);
        } else {
            args.push(`--${m[1]}`, m[2]);
        }
        rate = m[1] === 'rate' ? Number(m[2]) : rate;
    }
    return { args, rate, nice };
}

// Renices the import (pid) and, as they connect, its PostgreSQL backends, until done() is true.
async function reniceImport(pid, nice, done) {
    const seen = new Set([String(pid)]);
    os.setPriority(pid, nice);
    while (!done()) {
        const rows = await psql("SELECT pid FROM pg_stat_activity WHERE application_name = 'tocsin-import'");
        const fresh = rows.split('\n').filter((p) => p && !seen.has(p));
        for (const p of fresh) {
            seen.add(p);
            try {
                os.setPriority(Number(p), nice);
            } catch (e) {
                die(`renice ${p}: ${e.message} (nice=N needs the right to renice PostgreSQL's backends)`);
            }
        }
        await sleep(PROFILE_EVERY_MS);
    }
}

function runImport(tenant, args, onSpawn) {
    return new Promise((resolve) => {
        const out = fs.openSync(`${FILE}.log`, 'w');
        const child = spawn(BIN, ['import', ...args, '--tenant', tenant, FILE], {
            stdio: ['ignore', 'ignore', out],
            env: { ...process.env, TOCSIN_DATABASE_URL: DB_URL, PGAPPNAME: 'tocsin-import' },
        });
        child.on('exit', (code) => resolve(code));
        onSpawn(child.pid);
    });
}

// Samples the active client backends until done() is true: application (tocsin is the
// replica, tocsin-import the import), wait event (none: on a CPU or waiting for one) and the
// statement's start; returns the counts, most first, and the number of samples.
async function profile(done) {
    const counts = new Map();
    let samples = 0;
    while (!done()) {
        const rows = await psql(`SELECT application_name, coalesce(wait_event_type || ':' || wait_event, 'CPU'),
            left(regexp_replace(query, '\\s+', ' ', 'g'), 48) FROM pg_stat_activity
            WHERE state = 'active' AND backend_type = 'client backend' AND pid <> pg_backend_pid()`);
        samples++;
        for (const r of rows.split('\n').filter(Boolean)) {
            counts.set(r, (counts.get(r) ?? 0) + 1);
        }
        await sleep(PROFILE_EVERY_MS);
    }
    return { top: [...counts].sort((a, b) => b[1] - a[1]).slice(0, PROFILE_TOP), samples };
}

// One import phase: variant v into tenant bench-import-<no>, with the flow due all through it.
async function importPhase(rx, tenant, no, v) {
    const { args, rate, nice } = variantArgs(v);
    const flowS = Math.max(IMPORT_FLOW_S, rate > 0 ? Math.ceil((LINES / rate) * RATE_FLOW_SLACK) : 0);
    const i0 = Date.now() + LEAD_MS, n = Math.floor((flowS * 1000) / STEP_MS);
    log(`import ${v}: ${n} reminders due over ${flowS} s; ${LINES} lines imported from the first`);
    await insertFlow(tenant, i0, n);
    await sleep(i0 - Date.now());
    const w0 = await walStats(), pids = await replicaPids();
    const start = Date.now(), c0 = cpuTimes(), r0 = runDelays(pids);
    let finished = false;
    const sampled = PROFILE ? profile(() => finished) : null;
    let reniced = null;
    const code = await runImport(`bench-import-${no}`, args, (pid) => {
        reniced = nice > 0 ? reniceImport(pid, nice, () => finished) : null;
    });
    finished = true;
    await reniced;
    const end = Date.now(), c1 = cpuTimes(), r1 = runDelays(pids);
    const wal = walLine(w0, await walStats(), (end - start) / 1000);
    const cpuWait = cpuWaitLine(r0, r1, (end - start) / 1000);
    if (code !== 0) {
        die(`tocsin import exited ${code}: ${fs.readFileSync(`${FILE}.log`, 'utf8').slice(-500)}`);
    }
    if (end > i0 + n * STEP_MS) {
        die(`the import outlasted the flow: raise BENCH_IMPORT_FLOW_S above ${Math.ceil((end - i0) / 1000)}`);
    }
    await sleep(SETTLE_MS);
    const during = { ...(await lateness(rx, tenant, start, end)), cpu: busy(c0, c1) };
    const made = Number(await psql(`SELECT count(*) FROM meetings m JOIN tenants t ON t.id = m.tenant_id
        WHERE t.name = 'bench-import-${no}'`));
    if (made !== LINES) {
        die(`the import made ${made} meetings, not ${LINES}`);
    }
    return { v, s: (end - start) / 1000, during, wal, cpuWait, prof: sampled ? await sampled : null };
}

async function main() {
    await psql('ALTER SYSTEM SET track_wal_io_timing = on');
    await psql('SELECT pg_reload_conf()');
    const rx = await startReceiver();
    const key = await keysCreate('flow');
    const tenant = Number(await psql("SELECT id FROM tenants WHERE name = 'flow'"));
    const r = await fetch(`${BASE}/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://127.0.0.1:${rx.port}/hook` }),
    });
    if (r.status !== 201) {
        die(`POST /v1/webhooks: ${r.status} ${await r.text()}`);
    }

    const b0 = Date.now() + LEAD_MS, bn = Math.floor((BASELINE_S * 1000) / STEP_MS);
    log(`baseline: ${bn} reminders due over ${BASELINE_S} s, one every ${STEP_MS} ms`);
    await insertFlow(tenant, b0, bn);
    await sleep(b0 - Date.now());
    const c0 = cpuTimes(), w0 = await walStats(), pids = await replicaPids(), r0 = runDelays(pids);
    await sleep(bn * STEP_MS);
    const c1 = cpuTimes(), r1 = runDelays(pids), wal = walLine(w0, await walStats(), (bn * STEP_MS) / 1000);
    const cpuWait = cpuWaitLine(r0, r1, (bn * STEP_MS) / 1000);
    await sleep(SETTLE_MS);
    const base = { ...(await lateness(rx, tenant, b0, b0 + (bn - 1) * STEP_MS)), cpu: busy(c0, c1) };

    console.log(line(`\nreminders due without an import (${BASELINE_S} s)`, base));
    console.log(wal);
    console.log(cpuWait);
    let missing = base.missing;
    for (const [i, v] of VARIANTS.entries()) {
        const ph = await importPhase(rx, tenant, i + 1, v);
        console.log(`\nimport ${ph.v}: ${LINES} meetings (one reminder each) in ${ph.s.toFixed(1)} s: ` +
            `${Math.round(LINES / ph.s)} meetings/s`);
        console.log(line(`reminders due during it (${ph.s.toFixed(0)} s)`, ph.during));
        console.log(ph.wal);
        console.log(ph.cpuWait);
        console.log(`p99 ratio (during / without): ${(p99(ph.during.late) / p99(base.late)).toFixed(2)}`);
        for (const [what, n] of ph.prof?.top ?? []) {
            console.log(`  ${(n / ph.prof.samples).toFixed(2).padStart(5)} ${what}`);
        }
        missing += ph.during.missing;
    }
    rx.server.closeAllConnections?.();
    rx.server.close();
    if (missing !== 0) {
        die(`not received: ${missing} of the reminders due in the phases`);
    }
}

main().catch((e) => die(e.stack));
