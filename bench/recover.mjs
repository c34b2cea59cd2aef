// bench/recover.mjs -- POST /v1/webhooks/{id}/recover timed end to end over the database
// bench/deliveries.sh seeded: BENCH_RECOVER_ROWS (10,000) failed deliveries of one webhook of
// tenant bench_t1, written with SQL and pointing at a receiver on loopback (answering 204 at
// once), are recovered in one call, against two replicas sharing the database; the figure is the
// time from the call to the receiver holding every one of them, and how many it got twice
// (watched for BENCH_RECOVER_AFTER_MS more), and the CPU time per delivery of PostgreSQL, the
// replicas and the receiver (this process) from the call to the last receipt. Configured by the
// environment bench/deliveries.sh exports: TOCSIN_BIN, BENCH_DB_URL, BENCH_REDIS_URL, BENCH_KEYS
// (the first is bench_t1's), BENCH_DIR (PostgreSQL's data directory is its pg/). Each round also
// prints what the outbox's indexes did meanwhile (scans, entries read, rows fetched) and its dead
// rows. BENCH_RECOVER_ROUNDS (1) recovers that many times in turn on the same database, each
// with a new webhook, its own rows and fresh replicas; BENCH_RECOVER_VACUUM=1 vacuums the outbox
// before each round after the first (the control of the dead index entries a round leaves);
// BENCH_RECOVER_EXPLAIN_MS prints the slowest lease statement's plan of each round among those
// slower than that (auto_explain with ANALYZE and BUFFERS).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { cpuMsOf, statFields, treeCpuMs } from './proc.mjs';
import { startServer } from './serve.mjs';

const env = (name, def) => process.env[name] ?? def;
const ROWS = Number(env('BENCH_RECOVER_ROWS', '10000'));
const AFTER_MS = Number(env('BENCH_RECOVER_AFTER_MS', '2000'));
const GOAL_MS = 3000;
const KEY = env('BENCH_KEYS', '').split(/\s+/).filter(Boolean)[0];
const DB = env('BENCH_DB_URL');
const DIR = env('BENCH_DIR', '.');
const STATEMENTS = env('BENCH_PG_STATEMENTS', '') === '1'; // deliveries.sh loaded pg_stat_statements
const ROUNDS = Number(env('BENCH_RECOVER_ROUNDS', '1'));
const VACUUM = env('BENCH_RECOVER_VACUUM', '') === '1';
const EXPLAIN_MS = Number(env('BENCH_RECOVER_EXPLAIN_MS', '0'));
const PG_LOG = path.join(DIR, 'pg', 'server.log');
const STATS_FLUSH_MS = 1500; // backends publish their index counters within about a second

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const postmaster = () => fs.readFileSync(path.join(DIR, 'pg', 'postmaster.pid'), 'latin1').split('\n')[0].trim();
const selfCpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
// CPU so far, ms: PostgreSQL (the postmaster and its backends), the replicas, this process.
const cpuNow = (reps) => ({
    pg: treeCpuMs(postmaster()),
    reps: reps.reduce((ms, r) => ms + cpuMsOf(statFields(r.child.pid)), 0),
    rx: selfCpuMs(),
});
const psql = (sql) => execFileSync('psql', [DB, '-X', '-qAt', '-v', 'ON_ERROR_STOP=1', '-c', sql]).toString().trim();

// The outbox's indexes, their scans and the entries they returned (dead ones included:
// idx_tup_read counts every entry a scan stepped on, idx_tup_fetch the live rows it fetched), and
// the table's dead rows.
const indexStats = () => Object.fromEntries(psql(`SELECT indexrelname || ' ' || idx_scan || ' ' ||
        idx_tup_read || ' ' || idx_tup_fetch || ' ' || pg_relation_size(indexrelid)
    FROM pg_stat_user_indexes WHERE relname = 'outbox' UNION ALL
    SELECT 'dead_rows ' || n_dead_tup || ' 0 0 0' FROM pg_stat_user_tables WHERE relname = 'outbox'`)
    .split('\n').map((l) => { const [name, ...n] = l.split(' '); return [name, n.map(Number)]; }));

function printIndexDeltas(before, after) {
    const lines = Object.keys(after).filter((k) => k !== 'dead_rows' && after[k][0] > (before[k]?.[0] ?? 0))
        .map((k) => `${k}: ${after[k][0] - before[k][0]} scans, ${after[k][1] - before[k][1]} entries read, ` +
            `${after[k][2] - before[k][2]} rows fetched, ${(after[k][3] / 1024).toFixed(0)} KiB`);
    console.log(`  outbox indexes during the round (pg_stat_user_indexes):\n    ${lines.join('\n    ')}`);
    console.log(`  outbox dead rows (pg_stat_user_tables.n_dead_tup): ${before.dead_rows[0]} before, ` +
        `${after.dead_rows[0]} after`);
}

// EXPLAIN_MS: the plans of the lease statements slower than this, from PostgreSQL's log
// (auto_explain with ANALYZE and BUFFERS in the replicas' sessions).
function explainOn() {
    psql(`ALTER DATABASE tocsin SET session_preload_libraries = 'auto_explain'`);
    psql(`ALTER DATABASE tocsin SET auto_explain.log_min_duration = ${EXPLAIN_MS}`);
    psql('ALTER DATABASE tocsin SET auto_explain.log_analyze = on');
    psql('ALTER DATABASE tocsin SET auto_explain.log_buffers = on');
}

function printSlowestLease(logFrom) {
    const text = fs.readFileSync(PG_LOG, 'latin1').slice(logFrom);
    const plans = text.split(/\n(?=\S.*LOG: {2}duration: )/).filter((b) => b.includes('WITH RECURSIVE holders'));
    if (plans.length === 0) {
        console.log(`  no lease statement took over ${EXPLAIN_MS} ms`);
        return;
    }
    const ms = (b) => Number(/duration: ([0-9.]+) ms/.exec(b)?.[1] ?? 0);
    plans.sort((x, y) => ms(y) - ms(x));
    const plan = plans[0].slice(plans[0].indexOf('Query Text:'));
    console.log(`  ${plans.length} lease statements over ${EXPLAIN_MS} ms; the slowest (${ms(plans[0])} ms):`);
    console.log(plan.slice(plan.indexOf('\n') + 1).replace(/^.*?LOG: {2}/gm, ''));
}

async function round(n, rx) {
    const { got, url } = rx;
    got.clear();
    // The webhook and its failed rows: the newest ROWS reminders of bench_t1, one row each, fired
    // a millisecond apart an hour ago (distinct from the seeded rows' times).
    const hook = psql(`INSERT INTO webhooks (id, tenant_id, url, secret)
        SELECT gen_random_uuid(), id, '${url}', 'whsec_YmVuY2hiZW5jaGJlbmNoYmVuY2g=' FROM tenants
        WHERE name = 'bench_t1' RETURNING id`).split('\n')[0];
    const inserted = psql(`WITH r AS (SELECT r.id, r.meeting_id, r.tenant_id,
            row_number() OVER (ORDER BY r.id) AS k FROM reminders r JOIN tenants t ON t.id = r.tenant_id
            WHERE t.name = 'bench_t1')
        INSERT INTO outbox (tenant_id, meeting_id, reminder_id, fire_at, channel, webhook_id, target,
            receiver, status, attempts, next_attempt_at, last_error, last_status)
        SELECT r.tenant_id, r.meeting_id, r.id, now() - interval '1 hour' + g * interval '1 ms',
            'webhook', '${hook}', '${hook}', '${hook}', 'failed', 8, now(), 'HTTP 500', 500
        FROM generate_series(1, ${ROWS}) g JOIN r ON r.k = 1 + (g - 1) % (SELECT count(*) FROM r)
        RETURNING 1`).split('\n').length;
    if (inserted !== ROWS) {
        throw new Error(`inserted ${inserted} rows, not ${ROWS}`);
    }
    if (VACUUM && n > 1) {
        psql('VACUUM outbox');
        console.log('  VACUUM outbox before this round (the control)');
    }
    const logFrom = EXPLAIN_MS ? fs.statSync(PG_LOG).size : 0;
    const serve = (name) => startServer(env('TOCSIN_BIN'), {
        TOCSIN_DATABASE_URL: DB, TOCSIN_REDIS_URL: env('BENCH_REDIS_URL'), TOCSIN_LOG_LEVEL: 'warn',
        TOCSIN_INSTANCE_ID: name, TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
    }, path.join(DIR, `tocsin-${name}.log`));
    const a = await serve('recover-a');
    const b = await serve('recover-b');
    try {
        if (STATEMENTS) {
            psql('SELECT pg_stat_statements_reset()');
        }
        await sleep(STATS_FLUSH_MS);
        const idx0 = indexStats();
        const cpu0 = cpuNow([a, b]);
        const t0 = performance.now();
        const r = await fetch(`http://127.0.0.1:${a.port}/v1/webhooks/${hook}/recover`, {
            method: 'POST', headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ since: new Date(Date.now() - 2 * 3600 * 1000).toISOString() }),
        });
        const answered = performance.now() - t0;
        const body = await r.json();
        if (r.status !== 202 || body.queued !== ROWS) {
            throw new Error(`recover: ${r.status} ${JSON.stringify(body)}`);
        }
        while (got.size < ROWS && performance.now() - t0 < 30000) {
            await sleep(5);
        }
        const allMs = rx.last - t0;
        const cpu1 = cpuNow([a, b]);
        await sleep(AFTER_MS);
        const twice = [...got.values()].filter((k) => k > 1).length;
        const states = psql(`SELECT status || ' ' || n FROM (SELECT status, count(*) AS n FROM outbox
            WHERE webhook_id = '${hook}' GROUP BY status) x ORDER BY 1`);
        const byReplica = psql(`SELECT instance || ' ' || n FROM (SELECT a.instance, count(*) AS n
            FROM delivery_attempts a JOIN outbox o ON o.id = a.outbox_id WHERE o.webhook_id = '${hook}'
            GROUP BY a.instance) x ORDER BY 1`);
        console.log(`round ${n}: recover of ${ROWS} failed deliveries, two replicas: the 202 (queued ${body.queued}) in ` +
            `${answered.toFixed(0)} ms; ${got.size} of ${ROWS} received, the last ${allMs.toFixed(0)} ms after ` +
            `the call (goal <= ${GOAL_MS} ms); received twice: ${twice} (watched ${AFTER_MS} ms more)`);
        console.log(`  rows now: ${states.replace(/\n/g, ', ')}; attempts by replica: ${byReplica.replace(/\n/g, ', ')}`);
        const per = (k) => ((cpu1[k] - cpu0[k]) * 1000 / ROWS).toFixed(0);
        console.log(`  CPU per delivery until the last receipt, us (10 ms ticks, idle included): ` +
            `PostgreSQL ${per('pg')}, replicas ${per('reps')}, receiver ${per('rx')}`);
        if (STATEMENTS) {
            // Until now: the AFTER_MS watch adds only the replicas' idle statements.
            console.log(`  statements per delivery, by time:\n    ${psql(`SELECT concat_ws(' | ',
                to_char(calls::numeric / ${ROWS}, 'FM990.000') || ' calls', to_char(rows::numeric / calls, 'FM9990.0') || ' rows/call',
                to_char(total_exec_time * 1000 / ${ROWS}, 'FM9990.0') || ' us', left(regexp_replace(query, '\\s+', ' ', 'g'), 90))
                FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%' AND calls > 0
                ORDER BY total_exec_time DESC LIMIT 8`).split('\n').join('\n    ')}`);
        }
        printIndexDeltas(idx0, indexStats());
        if (twice > 0 || got.size < ROWS) {
            process.exitCode = 1;
        }
    } finally {
        await Promise.all([a.stop(), b.stop()]);
    }
    if (EXPLAIN_MS) {
        printSlowestLease(logFrom);
    }
}

async function main() {
    const rx = { got: new Map(), last: 0 }; // webhook-id -> requests of this round
    const server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            const id = req.headers['webhook-id'];
            rx.got.set(id, (rx.got.get(id) ?? 0) + 1);
            rx.last = performance.now();
            res.writeHead(204).end();
        });
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    rx.url = `http://127.0.0.1:${server.address().port}/hook`;
    if (EXPLAIN_MS) {
        explainOn();
    }
    try {
        for (let n = 1; n <= ROUNDS; n++) {
            await round(n, rx);
        }
    } finally {
        if (EXPLAIN_MS) {
            psql('ALTER DATABASE tocsin RESET ALL');
        }
        server.close();
    }
}

main().catch((e) => {
    process.stderr.write(`${e.stack || e}\n`);
    process.exit(1);
});
