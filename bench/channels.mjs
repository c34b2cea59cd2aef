// bench/channels.mjs -- the scenarios of bench/channels.sh. Each measures the time from the
// instant a batch of reminders is due until the last message has arrived where it goes: the
// push-service stand-in (every message decrypted and its VAPID JWT verified, after the clock
// stops: node checks slower than tocsin sends), the local SMTP
// server (every message parsed), or, for the baseline in the same run, a plain webhook receiver
// answering 204 to the same number of deliveries.
import fs from 'node:fs';
import http from 'node:http';

import { PushService } from '../tests/api/pushservice.mjs';
import { SmtpServer } from '../tests/api/smtp.mjs';
import {
    API_KEY, DIR, die, fmt, freePort, log, machineNote, sleep, startReplica, stopReplica, waitFor,
} from './stream_rig.mjs';

const SCENARIOS = (process.env.BENCH_SCENARIOS ?? 'push email').split(/\s+/).filter(Boolean);
const REPLICAS = Number(process.env.BENCH_REPLICAS ?? '3');
const PUSH_N = Number(process.env.BENCH_PUSH ?? '10000');
const EMAIL_N = Number(process.env.BENCH_EMAIL ?? '1000');
const PER_MEETING = 500; // the API's participants per meeting
const WEBHOOKS = 10; // the baseline's webhooks: N deliveries = N / WEBHOOKS reminders
const LEAD_MS = 15000; // the due instant, after the set-up
const BOUND_MS = 120000;
const TOKEN_TTL_S = 3600;

async function call(port, method, path, body, key = API_KEY) {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
}

// Runs jobs with `width` at a time.
async function pool(n, width, job) {
    let next = 0;
    await Promise.all(Array.from({ length: width }, async () => {
        while (next < n) await job(next++);
    }));
}

// A due instant LEAD_MS ahead on a whole second, and the starts_at of a 5-minute reminder then.
function dueInstant() {
    const due = Math.ceil((Date.now() + LEAD_MS) / 1000) * 1000;
    return { due, startsAt: new Date(due + 5 * 60000).toISOString() };
}

async function meetings(port, key, count, participantsOf, channels, startsAt) {
    await pool(count, 8, (i) => call(port, 'POST', '/v1/meetings', {
        title: `Bench ${i}`, starts_at: startsAt, participants: participantsOf(i),
        reminders: [{ minutes_before: 5, channels }],
    }, key));
}

// The baseline: n webhook deliveries (n / WEBHOOKS reminders x WEBHOOKS webhooks) to a plain
// receiver; ms from the due instant to the last one received.
async function webhookBaseline(ports, n, tenant) {
    const key = tenant;
    let got = 0;
    let last = 0;
    const rx = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => { got++; last = Date.now(); res.writeHead(204).end(); });
    });
    await new Promise((r) => rx.listen(0, '127.0.0.1', r));
    for (let w = 0; w < WEBHOOKS; w++) {
        await call(ports[0], 'POST', '/v1/webhooks', { url: `http://127.0.0.1:${rx.address().port}/h${w}` }, key);
    }
    const { due, startsAt } = dueInstant();
    await meetings(ports[0], key, Math.ceil(n / WEBHOOKS), () => [], ['webhook'], startsAt);
    await waitFor(`${n} webhook deliveries`, () => got >= n, due - Date.now() + BOUND_MS);
    rx.close();
    rx.closeAllConnections();
    return { ms: last - due, got };
}

async function newTenant(name) {
    const { execFileSync } = await import('node:child_process');
    return execFileSync(process.env.TOCSIN_BIN, ['keys', 'create', '--tenant', name]).toString().trim();
}

async function pushScenario(ports) {
    const ps = await new PushService({ deferChecks: true }).start();
    const key = await newTenant('bench-push');
    const subs = Array.from({ length: PUSH_N }, (_, i) => `p${i}`);
    const t0 = Date.now();
    await pool(PUSH_N, 16, async (i) => {
        const port = ports[i % ports.length];
        const { token } = await call(port, 'POST', '/v1/browser-tokens', { sub: subs[i], scope: 'push', ttl_s: TOKEN_TTL_S }, key);
        await call(port, 'POST', '/v1/push/subscriptions', ps.subscribe().json, token);
    });
    log(`push: ${PUSH_N} subscriptions made in ${fmt((Date.now() - t0) / 1000, 1)} s`);
    const { due, startsAt } = dueInstant();
    await meetings(ports[0], key, Math.ceil(PUSH_N / PER_MEETING),
        (m) => subs.slice(m * PER_MEETING, (m + 1) * PER_MEETING).map((id) => ({ id })), ['push'], startsAt);
    await waitFor(`${PUSH_N} pushes`, () => ps.all.length >= PUSH_N, due - Date.now() + BOUND_MS);
    await sleep(1000);
    // Every message decrypted and its VAPID JWT verified, after the clock stopped.
    await ps.checkAll();
    const times = ps.all.filter((r) => r.message).map((r) => r.at);
    const bad = ps.all.filter((r) => r.error).length;
    if (times.length < PUSH_N) die(`only ${times.length} of ${PUSH_N} pushes decrypt and verify`);
    await ps.stop();
    const base = await webhookBaseline(ports, PUSH_N, await newTenant('bench-push-base'));
    return { n: PUSH_N, ms: Math.max(...times) - due, first: Math.min(...times) - due, bad, extra: ps.all.length - PUSH_N, base };
}

async function emailScenario(ports, smtp) {
    const key = await newTenant('bench-email');
    const { due, startsAt } = dueInstant();
    await meetings(ports[0], key, Math.ceil(EMAIL_N / PER_MEETING),
        (m) => Array.from({ length: Math.min(PER_MEETING, EMAIL_N - m * PER_MEETING) },
            (_, i) => ({ id: `e${m}-${i}`, email: `e${m}-${i}@bench.test` })), ['email'], startsAt);
    let msgs = [];
    await waitFor(`${EMAIL_N} emails`, () => (msgs = smtp.messages()).length >= EMAIL_N, due - Date.now() + BOUND_MS);
    const stat = fs.statSync(smtp.out);
    const bad = msgs.filter((m) => m.defects.length > 0).length;
    const base = await webhookBaseline(ports, EMAIL_N, await newTenant('bench-email-base'));
    return { n: EMAIL_N, ms: stat.mtimeMs - due, bad, base };
}

function line(name, r) {
    const ratio = r.ms / r.base.ms;
    console.log(`${name}: ${r.n} delivered ${fmt(r.ms)} ms after due (${fmt(r.n / (r.ms / 1000))}/s)` +
        `${r.first !== undefined ? `, first after ${fmt(r.first)} ms` : ''}; refused by the checker ${r.bad}` +
        `${r.extra !== undefined ? `, requests beyond one each ${r.extra}` : ''}`);
    console.log(`  baseline: ${r.base.got} webhook deliveries ${fmt(r.base.ms)} ms after due; ratio ${fmt(ratio, 2)}`);
    console.log(`  ${machineNote()}`);
}

async function main() {
    const smtp = new SmtpServer(await freePort(), fs.mkdtempSync(`${DIR}/smtp-`));
    await smtp.start();
    process.env.TOCSIN_SMTP_URL = smtp.url;
    process.env.TOCSIN_SMTP_FROM = 'bench@tocsin.test';
    process.env.TOCSIN_WEBPUSH_ALLOW_PRIVATE = '1';
    process.env.TOCSIN_WEBHOOK_ALLOW_PRIVATE = '1';
    const ports = [];
    const replicas = [];
    for (let i = 0; i < REPLICAS; i++) {
        ports.push(await freePort());
        replicas.push(await startReplica(i, ports[i]));
    }
    try {
        for (const s of SCENARIOS) {
            if (s === 'push') line('push', await pushScenario(ports));
            else if (s === 'email') line('email', await emailScenario(ports, smtp));
            else die(`unknown scenario ${s}`);
        }
    } finally {
        for (const r of replicas) await stopReplica(r);
        await smtp.stop();
    }
}

main().catch((e) => die(e.stack || String(e)));
