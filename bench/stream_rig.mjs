// bench/stream_rig.mjs -- what bench/stream.mjs's scenarios stand on: the replicas (started and
// stopped by PID, each with its own application_name so that the database knows who fired), the
// bench's database (reminders written straight into the tables, the stream events read back),
// browser tokens from the API, /proc (bench/proc.mjs) and /metrics readings, and the figures'
// formatting.
// Configured by the environment bench/stream.sh exports.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';

import { StreamClient } from './stream_client.mjs';
import { freePort } from './serve.mjs';

export { freePort }; // bench/stream.mjs's scenarios take it from here

export { procStat, treeCpuMs } from './proc.mjs';

const env = (name, def) => process.env[name] ?? def;
export const DB_URL = env('BENCH_DB_URL');
export const REDIS_PORT = Number(env('BENCH_REDIS_PORT'));
export const BIN = env('TOCSIN_BIN');
export const API_KEY = env('BENCH_TOKEN');
export const DIR = env('BENCH_DIR', '.');
export const STREAMS = Number(env('BENCH_STREAMS', '10000'));
export const EACH = Number(env('BENCH_STREAMS_EACH', '20'));
const PSQL = env('BENCH_PSQL', 'psql');

const TOKEN_TTL_S = 3600; // no reauth during a run
const MAX_AGE_S = 3600;   // no stream ends by age during a run (the default is 900 +-20%)
const PREFIX = 'bench';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function die(msg) {
    process.stderr.write(`bench/stream.mjs: ${msg}\n`);
    process.exit(1);
}

export function log(msg) {
    process.stderr.write(`==> ${msg}\n`);
}

export function psql(sql) {
    return new Promise((resolve, reject) => {
        execFile(PSQL, [DB_URL, '-v', 'ON_ERROR_STOP=1', '-qtAc', sql], { maxBuffer: 256 << 20 },
            (err, stdout, stderr) => (err ? reject(new Error(`psql: ${stderr || err}`)) : resolve(stdout.trim())));
    });
}

export function quantile(sorted, q) {
    if (sorted.length === 0) {
        return NaN;
    }
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export function fmt(v, digits = 0) {
    return Number.isNaN(v) || v === undefined ? '-' : v.toFixed(digits);
}

// "p50/p99/max" of an array of milliseconds.
export function q3(a) {
    const s = Float64Array.from(a).sort();
    return `${fmt(quantile(s, 0.5), 1)}/${fmt(quantile(s, 0.99), 1)}/${fmt(s[s.length - 1], 1)}`;
}

// The machine's load and the client's own event-loop delay since the last call: when either is
// high the receipt times include waiting for a CPU, and the figures say more about the machine.
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();

export function machineNote() {
    const load = fs.readFileSync('/proc/loadavg', 'latin1').split(' ').slice(0, 3).join(' ');
    const note = `machine: load average ${load} on ${os.cpus().length} CPUs; the client's event loop delayed p99/max ` +
        `${fmt(loopDelay.percentile(99) / 1e6)}/${fmt(loopDelay.max / 1e6)} ms`;
    loopDelay.reset();
    return note;
}

export async function waitFor(what, pred, ms) {
    const end = Date.now() + ms;
    while (!(await pred())) {
        if (Date.now() > end) {
            throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        }
        await sleep(100);
    }
}

// ------------------------------------------------------------------ replicas

function replicaEnv(i, port) {
    return {
        ...process.env,
        TOCSIN_HTTP_ADDR: `127.0.0.1:${port}`,
        TOCSIN_DATABASE_URL: `${DB_URL}?application_name=bench-${i + 1}`,
        TOCSIN_REDIS_URL: `redis://127.0.0.1:${REDIS_PORT}/0`,
        TOCSIN_REDIS_PREFIX: PREFIX,
        TOCSIN_INSTANCE_ID: `bench-${i + 1}`,
        TOCSIN_LOG_LEVEL: 'warn',
        TOCSIN_STREAMS_MAX: String(Math.max(10000, STREAMS)),
        // 500 participants x 20 streams make 10,000 streams for a meeting of at most 500.
        TOCSIN_STREAMS_PER_PARTICIPANT: String(EACH),
        TOCSIN_STREAM_MAX_AGE_S: String(MAX_AGE_S),
        // Every bench stream comes from 127.0.0.1: the per-address bound (hardening) must allow
        // them all. Unknown settings are ignored by a build without it.
        TOCSIN_HTTP_CONNECTIONS_PER_ADDR: String(Math.max(20000, 2 * STREAMS + 1000)),
    };
}

export async function startReplica(i, port) {
    const out = fs.openSync(`${DIR}/replica-${i + 1}.log`, 'a');
    const child = spawn(BIN, ['serve'], { stdio: ['ignore', out, out], env: replicaEnv(i, port) });
    fs.closeSync(out);
    const r = { i, port, child, name: `bench-${i + 1}`, exited: null };
    child.on('exit', (code, signal) => {
        r.exited = { code, signal };
    });
    const end = Date.now() + 30000;
    for (;;) {
        const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((x) => x.ok, () => false);
        if (ok) {
            return r;
        }
        if (r.exited || Date.now() > end) {
            die(`replica ${i + 1} on ${port} not ready (see ${DIR}/replica-${i + 1}.log)`);
        }
        await sleep(100);
    }
}

// SIGTERM and wait; returns { code, signal, ms }.
export async function stopReplica(r) {
    const t = Date.now();
    if (!r.exited) {
        r.child.kill('SIGTERM');
        await new Promise((res) => (r.exited ? res() : r.child.on('exit', res)));
    }
    return { ...r.exited, ms: Date.now() - t };
}

export async function streamsOpen(r) {
    const text = await fetch(`http://127.0.0.1:${r.port}/metrics`).then((x) => x.text());
    return Number(/^tocsin_streams_open (\d+)$/m.exec(text)?.[1] ?? NaN);
}

// ------------------------------------------------------------------ data

// One API call with the bench tenant's key (or another): its JSON answer, null for none.
export async function api(port, method, path, body, key = API_KEY) {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) {
        throw new Error(`${method} ${path}: ${res.status} ${text}`);
    }
    return text ? JSON.parse(text) : null;
}

// Runs job(0..n-1) with `width` at a time.
export async function pool(n, width, job) {
    let next = 0;
    await Promise.all(Array.from({ length: width }, async () => {
        while (next < n) await job(next++);
    }));
}

// One browser token (scope notifications) per participant, minted by the API.
export async function tokensFor(port, subs) {
    const out = new Array(subs.length);
    let next = 0;
    const worker = async () => {
        while (next < subs.length) {
            const k = next++;
            out[k] = (await api(port, 'POST', '/v1/browser-tokens', { sub: subs[k], scope: 'notifications', ttl_s: TOKEN_TTL_S })).token;
        }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    return out;
}

export async function headSeq(tenant) {
    return Number(await psql(`SELECT coalesce((SELECT seq FROM stream_heads WHERE tenant_id = ${tenant}), 0)`));
}

// n meetings of the given participants (ids of [A-Za-z0-9-] only), one reminder each (5 minutes
// before), due at t0Ms + i * stepUs microseconds: written straight into the tables as
// bench/engine.mjs does, the replicas' scheduler finds them.
export async function insertDue(tenant, subs, n, t0Ms, stepUs) {
    const participants = JSON.stringify(subs.map((id) => ({ id })));
    await psql(`
        WITH m AS (
            INSERT INTO meetings (id, tenant_id, title, starts_at, participants, version, created_at, updated_at)
            SELECT gen_random_uuid(), ${tenant}, 'bench stream',
                   to_timestamp(${t0Ms} / 1000.0) + (i::bigint * ${stepUs}) * interval '1 microsecond' + interval '5 minutes',
                   '${participants}'::json, 1, now(), now()
            FROM generate_series(0, ${n - 1}) AS i
            RETURNING id, tenant_id, starts_at)
        INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status)
        SELECT id, tenant_id, 5, starts_at - interval '5 minutes', 'pending' FROM m`);
}

// The stream events after seq `after` whose audience holds sub: { seq, rid, fired, fire, by }.
export async function eventsAfter(tenant, after, sub) {
    const text = await psql(`SELECT seq, reminder_id, extract(epoch FROM fired_at) * 1000,
            extract(epoch FROM fire_at) * 1000, bench_fired_by
        FROM stream_events WHERE tenant_id = ${tenant} AND seq > ${after} AND audience @> ARRAY['${sub}']
        ORDER BY seq`);
    return text === '' ? [] : text.split('\n').map((line) => {
        const [seq, rid, fired, fire, by] = line.split('|');
        return { seq: Number(seq), rid: Number(rid), fired: Number(fired), fire: Number(fire), by };
    });
}

export function subsOf(prefix, n) {
    return Array.from({ length: n }, (_, k) => `${prefix}-${String(k + 1).padStart(4, '0')}`);
}

// EACH clients per participant, `count` in all.
export function clientsFor(subs, tokens, count, portOf) {
    const clients = [];
    for (let k = 0; k < count; k++) {
        const p = Math.floor(k / EACH);
        clients.push(new StreamClient({ port: portOf(k), token: tokens[p], sub: subs[p], tag: k }));
    }
    return clients;
}

export function closeAll(clients) {
    for (const c of clients) {
        c.keep = false;
        c.cut();
    }
}

export function sumOf(clients, f) {
    return clients.reduce((a, c) => a + f(c), 0);
}
