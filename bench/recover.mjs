// bench/recover.mjs -- POST /v1/webhooks/{id}/recover timed end to end over the database
// bench/deliveries.sh seeded: BENCH_RECOVER_ROWS (10,000) failed deliveries of one webhook of
// tenant bench_t1, written with SQL and pointing at a receiver on loopback (answering 204 at
// once), are recovered in one call, against two replicas sharing the database; the figure is the
// time from the call to the receiver holding every one of them, and how many it got twice
// (watched for BENCH_RECOVER_AFTER_MS more), and the CPU time per delivery of PostgreSQL, the
// replicas and the receiver (this process) from the call to the last receipt. Configured by the
// environment bench/deliveries.sh exports: TOCSIN_BIN, BENCH_DB_URL, BENCH_REDIS_URL, BENCH_KEYS
// (the first is bench_t1's), BENCH_DIR (PostgreSQL's data directory is its pg/).
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

async function main() {
    const got = new Map(); // webhook-id -> requests
    let last = 0;
    const rx = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            const id = req.headers['webhook-id'];
            got.set(id, (got.get(id) ?? 0) + 1);
            last = performance.now();
            res.writeHead(204).end();
        });
    });
    await new Promise((r) => rx.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${rx.address().port}/hook`;

    // The webhook and its failed rows: the newest ROWS reminders of bench_t1, one row each, fired
    // a second apart an hour ago (distinct from the seeded rows' times).
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
        const allMs = last - t0;
        const cpu1 = cpuNow([a, b]);
        await sleep(AFTER_MS);
        const twice = [...got.values()].filter((n) => n > 1).length;
        const states = psql(`SELECT status || ' ' || n FROM (SELECT status, count(*) AS n FROM outbox
            WHERE webhook_id = '${hook}' GROUP BY status) x ORDER BY 1`);
        const byReplica = psql(`SELECT instance || ' ' || n FROM (SELECT a.instance, count(*) AS n
            FROM delivery_attempts a JOIN outbox o ON o.id = a.outbox_id WHERE o.webhook_id = '${hook}'
            GROUP BY a.instance) x ORDER BY 1`);
        console.log(`recover of ${ROWS} failed deliveries, two replicas: the 202 (queued ${body.queued}) in ` +
            `${answered.toFixed(0)} ms; ${got.size} of ${ROWS} received, the last ${allMs.toFixed(0)} ms after ` +
            `the call (goal <= ${GOAL_MS} ms); received twice: ${twice} (watched ${AFTER_MS} ms more)`);
        console.log(`rows now: ${states.replace(/\n/g, ', ')}; attempts by replica: ${byReplica.replace(/\n/g, ', ')}`);
        const per = (k) => ((cpu1[k] - cpu0[k]) * 1000 / ROWS).toFixed(0);
        console.log(`CPU per delivery until the last receipt, us (10 ms ticks, idle included): ` +
            `PostgreSQL ${per('pg')}, replicas ${per('reps')}, receiver ${per('rx')}`);
        if (STATEMENTS) {
            // Until now: the AFTER_MS watch adds only the replicas' idle statements.
            console.log(`statements per delivery, by time:\n  ${psql(`SELECT concat_ws(' | ',
                to_char(calls::numeric / ${ROWS}, 'FM990.000') || ' calls', to_char(rows::numeric / calls, 'FM9990.0') || ' rows/call',
                to_char(total_exec_time * 1000 / ${ROWS}, 'FM9990.0') || ' us', left(regexp_replace(query, '\\s+', ' ', 'g'), 90))
                FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%' AND calls > 0
                ORDER BY total_exec_time DESC LIMIT 8`).split('\n').join('\n  ')}`);
        }
    } finally {
        await Promise.all([a.stop(), b.stop()]);
        rx.close();
    }
}

main().catch((e) => {
    process.stderr.write(`${e.stack || e}\n`);
    process.exit(1);
});
