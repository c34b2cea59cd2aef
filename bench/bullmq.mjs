// bench/bullmq.mjs -- the peers of bench/engine.mjs's burst: BullMQ (bench/package.json) on
// Debian's Redis doing what tocsin does for a burst, the way its documentation shows: delayed jobs
// due at one instant, processed by workers in separate processes. Default job options. Two modes:
//   no hop:  the processor only records when it ran (no HTTP request, nothing written anywhere);
//            a lower bound, the queue alone;
//   webhook: the fair peer, "BullMQ + webhook": each job carries its reminder's body (the shape
//            and about the size of tocsin's) and its processor makes one signed webhook POST
//            (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature) on keep-alive
//            connections to HOOK_URL; a job is done when the receiver answered 2xx. The
//            webhook-id is rem_<job>_<due ms>, as tocsin's is rem_<reminder>_<fire_at ms>, so
//            the receiver measures both alike.
//   node bench/bullmq.mjs burst N WORKERS CONCURRENCY [HOOK_URL]  (forked by engine.mjs; IPC)
//   node bench/bullmq.mjs worker CONCURRENCY [HOOK_URL]           (forked by the burst process)
// BENCH_BULLMQ_REDIS_PORT names the Redis (a server of its own, emptied first). The burst process
// tells its parent { open: true } when the CPU window opens (CPU_LEAD_MS before the due instant)
// and answers { n, due, processed, allAfterMs, lat, cpu: { workers, redis } }: the jobs done, when
// the last was done and the lateness p50/p99/max of being done (ms after the due instant), and the
// CPU seconds of the worker processes and of Redis from the window's opening until all were done.
import { fork } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { Queue, Worker } from 'bullmq';

import { cpuSecondsOf as cpuS } from './proc.mjs';

const QUEUE = 'bench-burst';
const LEAD_MS = 15000;   // the jobs fall due this long after the first is added (> the time to add them)
const ADD_CHUNK = 1000;  // jobs per addBulk
const WAIT_MAX_MS = 180000;
const CPU_LEAD_MS = 200; // as engine.mjs's burst: the CPU is counted from this long before the due instant
const SECRET_ENV = 'BENCH_BULLMQ_WEBHOOK_SECRET'; // whsec_<base64 key>, made by the burst process
const connection = { host: '127.0.0.1', port: Number(process.env.BENCH_BULLMQ_REDIS_PORT), maxRetriesPerRequest: null };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// One signed POST of the job's body to url; resolves on a 2xx answer, rejects otherwise (the job
// fails: with the default options it is not tried again and never counts as done).
function webhook(url, agent, key, job) {
    const id = job.data.id;
    const ts = String(Math.floor(Date.now() / 1000));
    const body = JSON.stringify({ type: 'meeting.reminder', id, timestamp: new Date().toISOString(), data: job.data.body });
    const sig = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
    return new Promise((resolve, reject) => {
        const req = http.request(url, {
            method: 'POST', agent,
            headers: {
                'content-type': 'application/json', 'content-length': Buffer.byteLength(body),
                'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig}`,
            },
        }, (res) => {
            res.resume();
            res.on('end', () => (res.statusCode >= 200 && res.statusCode < 300 ? resolve() : reject(new Error(`webhook answered ${res.statusCode}`))));
        });
        req.on('error', reject);
        req.end(body);
    });
}

async function worker(concurrency, hookUrl) {
    const at = []; // when each job was done: processed, or (webhook) answered 2xx
    let processor = async () => {
        at.push(Date.now());
    };
    if (hookUrl) {
        const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
        const key = Buffer.from(process.env[SECRET_ENV].slice('whsec_'.length), 'base64');
        processor = async (job) => {
            await webhook(hookUrl, agent, key, job);
            at.push(Date.now());
        };
    }
    const w = new Worker(QUEUE, processor, { connection, concurrency });
    await w.waitUntilReady();
    process.send({ ready: true });
    const progress = setInterval(() => process.send({ count: at.length }), 100);
    process.on('message', async (m) => {
        if (m.stop) {
            clearInterval(progress);
            await w.close();
            process.send({ done: at }, () => process.exit(0));
        }
    });
}

function quantile(sorted, q) {
    return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

const CHANNELS = ['webhook', 'stream', 'push']; // tocsin's default channels of a reminder

// What tocsin's webhook carries for one of the bench's meetings (codec_notification.c: the
// reminder and the meeting as GET shows them), with this job's ids and times.
function reminderBody(j, due) {
    const at = (ms) => new Date(ms).toISOString();
    const meeting = randomBytes(16).toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-');
    return {
        reminder: { id: String(j + 1), minutes_before: 5, channels: CHANNELS, fire_at: at(due), status: 'fired', fired_at: at(due) },
        meeting: {
            id: meeting, title: 'bench', description: null, starts_at: at(due + 300000), ends_at: null, time_zone: null, starts_at_local: null, ends_at_local: null,
            location: null, participants: [], reminders: [{ id: String(j + 1), minutes_before: 5, channels: CHANNELS, fire_at: at(due), status: 'pending', fired_at: null }],
            organizer_id: null, metadata: null, recurrence: null, version: 1, created_at: at(due - 25000), updated_at: at(due - 25000),
        },
    };
}

async function burst(n, workers, concurrency, hookUrl) {
    process.env[SECRET_ENV] = `whsec_${randomBytes(32).toString('base64')}`;
    const q = new Queue(QUEUE, { connection });
    await q.obliterate({ force: true });
    const redisPid = Number(/^process_id:(\d+)/m.exec(await (await q.client).info('server'))?.[1]);
    const self = fileURLToPath(import.meta.url);
    const kids = [];
    for (let i = 0; i < workers; i++) {
        const c = fork(self, ['worker', String(concurrency), ...(hookUrl ? [hookUrl] : [])], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
        const k = { c, count: 0, at: null };
        k.ready = new Promise((r) => c.on('message', (m) => {
            if (m.ready) {
                r();
            } else if (m.count !== undefined) {
                k.count = m.count;
            } else if (m.done) {
                k.at = m.done;
            }
        }));
        k.exit = new Promise((r) => c.on('exit', r));
        kids.push(k);
    }
    await Promise.all(kids.map((k) => k.ready));
    const due = Date.now() + LEAD_MS;
    for (let i = 0; i < n; i += ADD_CHUNK) {
        const delay = due - Date.now();
        const jobs = [];
        for (let j = i; j < Math.min(n, i + ADD_CHUNK); j++) {
            const data = hookUrl ? { id: `rem_${j + 1}_${due}`, body: reminderBody(j, due) } : { j };
            jobs.push({ name: 'reminder', data, opts: { delay } });
        }
        await q.addBulk(jobs);
    }
    if (Date.now() > due - CPU_LEAD_MS) {
        throw new Error('adding the jobs took longer than their lead');
    }
    await sleep(due - CPU_LEAD_MS - Date.now());
    const pids = [...kids.map((k) => k.c.pid), redisPid];
    const cpu0 = pids.map(cpuS);
    process.send({ open: true });
    const end = due + WAIT_MAX_MS;
    while (kids.reduce((a, k) => a + k.count, 0) < n && Date.now() < end) {
        await sleep(50);
    }
    const cpu = pids.map((p, i) => cpuS(p) - cpu0[i]);
    for (const k of kids) {
        k.c.send({ stop: true });
    }
    await Promise.all(kids.map((k) => k.exit));
    await q.obliterate({ force: true });
    await q.close();
    const at = kids.flatMap((k) => k.at ?? []).map((t) => t - due).sort((a, b) => a - b);
    const f = (v) => (Number.isFinite(v) ? String(Math.round(v)) : '-');
    return {
        n, due, processed: at.length, allAfterMs: at.length >= n ? at[at.length - 1] : NaN,
        lat: `${f(quantile(at, 0.5))}/${f(quantile(at, 0.99))}/${f(at[at.length - 1])}`,
        cpu: { workers: cpu.slice(0, workers).reduce((a, v) => a + v, 0), redis: cpu[workers] },
    };
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'worker') {
    await worker(Number(args[0]), args[1]);
} else if (mode === 'burst') {
    const r = await burst(Number(args[0]), Number(args[1]), Number(args[2]), args[3]);
    process.send(r, () => process.exit(0));
} else {
    process.stderr.write('usage: node bench/bullmq.mjs burst N WORKERS CONCURRENCY [HOOK_URL]\n');
    process.exit(2);
}
