// bench/import.mjs -- reminder lateness while `tocsin import` writes, driven by bench/import.sh
// (which builds a release binary, starts PostgreSQL, Redis and one `tocsin serve` replica, and
// writes the import's JSON lines). A local webhook receiver gets a tenant's reminders; a steady
// flow of them, one due every BENCH_FLOW_STEP_MS, is written by SQL before each phase starts:
//   baseline: the flow due over BENCH_BASELINE_S with nothing else running;
//   import:   the flow due from the import's start to well past its end, and the import of
//             BENCH_IMPORT_FILE (--jobs BENCH_IMPORT_JOBS) started as the flow's first reminder
//             falls due; the reminders due while it ran are the ones measured.
// Lateness is receipt time at the receiver minus the reminder's fire_at (from its webhook-id).
// Prints the import's wall time and rate and both phases' lateness p50/p99/max; exits non-zero
// when the import failed or a reminder due in a phase was not received.
import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';

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

const LEAD_MS = 15000;    // a flow written by SQL falls due this long after (> the scheduler's 10 s window)
const SETTLE_MS = 5000;   // receipts of the last due reminders may take this long
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

// The lateness (sorted, ms) of the flow's reminders due in [t0, t1], and how many of those the
// database holds that were not received.
async function lateness(rx, tenant, t0, t1) {
    const late = [];
    for (const v of rx.seen.values()) {
        if (v.fireAt >= t0 && v.fireAt <= t1) {
            late.push(v.at - v.fireAt);
        }
    }
    late.sort((a, b) => a - b);
    const due = Number(await psql(`SELECT count(*) FROM reminders WHERE tenant_id = ${tenant}
        AND fire_at BETWEEN to_timestamp(${t0} / 1000.0) AND to_timestamp(${t1} / 1000.0)`));
    return { late, due, missing: due - late.length };
}

const fmt = (v) => (Number.isFinite(v) ? String(Math.round(v)) : '-');
const line = (tag, r) => `${tag}: ${r.late.length} of ${r.due} received, lateness p50/p99/max ` +
    `${fmt(quantile(r.late, 0.5))}/${fmt(quantile(r.late, 0.99))}/${fmt(r.late[r.late.length - 1])} ms`;

function runImport() {
    return new Promise((resolve) => {
        const out = fs.openSync(`${FILE}.log`, 'w');
        const child = spawn(BIN, ['import', '--jobs', JOBS, '--tenant', 'bench-import', FILE],
            { stdio: ['ignore', 'ignore', out], env: { ...process.env, TOCSIN_DATABASE_URL: DB_URL } });
        child.on('exit', (code) => resolve(code));
    });
}

async function main() {
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
    await sleep(b0 + bn * STEP_MS + SETTLE_MS - Date.now());
    const base = await lateness(rx, tenant, b0, b0 + (bn - 1) * STEP_MS);

    const i0 = Date.now() + LEAD_MS, n = Math.floor((IMPORT_FLOW_S * 1000) / STEP_MS);
    log(`import: ${n} reminders due over ${IMPORT_FLOW_S} s; ${LINES} lines imported (--jobs ${JOBS}) from the first`);
    await insertFlow(tenant, i0, n);
    await sleep(i0 - Date.now());
    const start = Date.now();
    const code = await runImport();
    const end = Date.now();
    if (code !== 0) {
        die(`tocsin import exited ${code}: ${fs.readFileSync(`${FILE}.log`, 'utf8').slice(-500)}`);
    }
    if (end > i0 + n * STEP_MS) {
        die(`the import outlasted the flow: raise BENCH_IMPORT_FLOW_S above ${Math.ceil((end - i0) / 1000)}`);
    }
    await sleep(SETTLE_MS);
    const during = await lateness(rx, tenant, start, end);
    const made = Number(await psql(`SELECT count(*) FROM meetings m JOIN tenants t ON t.id = m.tenant_id
        WHERE t.name = 'bench-import'`));
    if (made !== LINES) {
        die(`the import made ${made} meetings, not ${LINES}`);
    }
    const s = (end - start) / 1000;
    console.log(`\nimport: ${LINES} meetings (one reminder each) through tocsin import --jobs ${JOBS} in ` +
        `${s.toFixed(1)} s: ${Math.round(LINES / s)} meetings/s`);
    console.log(line(`reminders due without an import (${BASELINE_S} s)`, base));
    console.log(line(`reminders due during the import (${s.toFixed(0)} s)`, during));
    console.log(`p99 ratio (during / without): ${(quantile(during.late, 0.99) / quantile(base.late, 0.99)).toFixed(2)}`);
    rx.server.closeAllConnections?.();
    rx.server.close();
    if (base.missing !== 0 || during.missing !== 0) {
        die(`not received: ${base.missing} of the baseline, ${during.missing} of the import's`);
    }
}

main().catch((e) => die(e.stack));
