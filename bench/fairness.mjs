// bench/fairness.mjs -- the scenarios of bench/fairness.sh: tenant b's webhook lateness (received
// minus due) for BENCH_B reminders due one every STEP_MS, first with nothing else to deliver (the
// baseline), then while tenant a's 32 webhooks on a receiver that answers 200 after SLOW_MS hold
// what they can of the slots (BENCH_A meetings due just before, a row per webhook each), with
// TOCSIN_DELIVERY_TENANT_SHARE at BENCH_SHARE and at 100 (one tenant may take every slot: the
// behaviour before the share). Each scenario on a replica of its own, with tenants of its own.
import http from 'node:http';
import { execFileSync } from 'node:child_process';

import {
    BIN, die, fmt, freePort, log, machineNote, psql, quantile, sleep, startReplica, stopReplica, waitFor,
} from './stream_rig.mjs';

const B_N = Number(process.env.BENCH_B ?? '40');
const A_MEETINGS = Number(process.env.BENCH_A ?? '40');
const SHARE = process.env.BENCH_SHARE ?? '50';
const SLOW_HOOKS = 32;     // tenant a's webhooks (the adversary's N6)
const SLOW_MS = 9000;      // under TOCSIN_DELIVERY_TIMEOUT_MS's 10 s default
const STEP_MS = 100;       // tenant b's reminders fall due this far apart
const LEAD_MS = 8000;      // tenant a's due instant, after the set-up
const B_AFTER_MS = 1000;   // tenant b's first due instant, after tenant a's
const BOUND_MS = 120000;

async function call(port, method, path, body, key) {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
        method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) die(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
}

const newTenant = (name) => execFileSync(BIN, ['keys', 'create', '--tenant', name]).toString().trim();

// A receiver on 127.0.0.1 answering 200 after delayMs; arrivals by webhook-id.
async function receiver(delayMs) {
    const rx = { got: new Map(), count: 0 };
    rx.server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            rx.count++;
            if (!rx.got.has(req.headers['webhook-id'])) rx.got.set(req.headers['webhook-id'], Date.now());
            setTimeout(() => res.writeHead(200).end(), delayMs);
        });
    });
    await new Promise((r) => rx.server.listen(0, '127.0.0.1', r));
    rx.url = `http://127.0.0.1:${rx.server.address().port}/hook`;
    rx.close = () => { rx.server.closeAllConnections(); rx.server.close(); };
    return rx;
}

// A meeting whose one reminder falls due at dueMs; its webhook-id.
async function dueAt(port, key, title, dueMs) {
    const m = await call(port, 'POST', '/v1/meetings', { title, starts_at: new Date(dueMs + 5 * 60000).toISOString() }, key);
    const r = m.reminders[0];
    return `rem_${r.id}_${Date.parse(r.fire_at)}`;
}

async function scenario(name, share, loaded) {
    process.env.TOCSIN_DELIVERY_TENANT_SHARE = share;
    process.env.TOCSIN_WEBHOOK_ALLOW_NETS = '127.0.0.0/8';
    // One worker: the fire statement gives a round's rows to one worker, so with two the other
    // stayed free for tenant b and the starvation did not show; the adversary's 32 webhooks filled
    // both only because its fires spread over rounds.
    process.env.TOCSIN_DELIVERY_WORKERS = process.env.BENCH_WORKERS ?? '1';
    const rep = await startReplica(0, await freePort());
    const kb = newTenant(`bench-b-${name}`);
    const fast = await receiver(0);
    await call(rep.port, 'POST', '/v1/webhooks', { url: fast.url }, kb);
    const slow = await receiver(SLOW_MS);
    const t0 = Date.now() + LEAD_MS;
    if (loaded) {
        const ka = newTenant(`bench-a-${name}`);
        for (let i = 0; i < SLOW_HOOKS; i++) await call(rep.port, 'POST', '/v1/webhooks', { url: `${slow.url}${i}` }, ka);
        for (let i = 0; i < A_MEETINGS; i++) await dueAt(rep.port, ka, `slow ${i}`, t0);
    }
    const due = new Map();
    for (let i = 0; i < B_N; i++) {
        const at = t0 + B_AFTER_MS + i * STEP_MS;
        due.set(await dueAt(rep.port, kb, `fast ${i}`, at), at);
    }
    if (Date.now() > t0) die(`${name}: set-up took past the due instant (raise LEAD_MS)`);
    await waitFor(`${name}: ${B_N} deliveries of tenant b`, () => fast.got.size >= B_N, t0 - Date.now() + BOUND_MS);
    const late = [...due].map(([id, at]) => fast.got.get(id) - at).sort((x, y) => x - y);
    const slowInFlight = slow.count;
    await stopReplica(rep);
    // Tenant a's rows left pending must not reach the next scenario's replica.
    await psql("UPDATE outbox SET status = 'failed' WHERE status = 'pending'");
    fast.close();
    slow.close();
    await sleep(500);
    return { name, p50: quantile(late, 0.5), p99: quantile(late, 0.99), max: late[late.length - 1], slowInFlight };
}

const base = await scenario('idle', SHARE, false);
const fair = await scenario(`share${SHARE}`, SHARE, true);
const open = await scenario('share100', '100', true);
log(machineNote());
log(`tenant b: ${B_N} webhook reminders, one every ${STEP_MS} ms; tenant a: ${SLOW_HOOKS} webhooks answering after ${SLOW_MS} ms, ${A_MEETINGS} meetings (${SLOW_HOOKS * A_MEETINGS} rows) due ${B_AFTER_MS} ms before`);
for (const r of [base, fair, open]) {
    log(`${r.name.padEnd(9)} lateness p50 ${fmt(r.p50)} ms  p99 ${fmt(r.p99)} ms  max ${fmt(r.max)} ms` +
        (r === base ? '' : `  (p99 ${fmt(r.p99 / Math.max(base.p99, 1), 1)} x the idle baseline; tenant a's requests received ${r.slowInFlight})`));
}
