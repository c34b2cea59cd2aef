// bench/bullmq.mjs -- the baseline of bench/engine.mjs's burst: BullMQ (bench/package.json) on
// Debian's Redis doing what tocsin does for a burst, the way its documentation shows: delayed jobs
// due at one instant, processed by workers in separate processes whose processor only records when
// it ran (no HTTP request, nothing written anywhere). Default job options.
//   node bench/bullmq.mjs burst N WORKERS CONCURRENCY   (forked by engine.mjs; answers over IPC)
//   node bench/bullmq.mjs worker CONCURRENCY            (forked by the burst process)
// BENCH_BULLMQ_REDIS_PORT names the Redis (a server of its own, emptied first).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Queue, Worker } from 'bullmq';

const QUEUE = 'bench-burst';
const LEAD_MS = 15000;   // the jobs fall due this long after the first is added (> the time to add them)
const ADD_CHUNK = 1000;  // jobs per addBulk
const WAIT_MAX_MS = 180000;
const connection = { host: '127.0.0.1', port: Number(process.env.BENCH_BULLMQ_REDIS_PORT), maxRetriesPerRequest: null };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function worker(concurrency) {
    const at = [];
    const w = new Worker(QUEUE, async () => {
        at.push(Date.now());
    }, { connection, concurrency });
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

async function burst(n, workers, concurrency) {
    const q = new Queue(QUEUE, { connection });
    await q.obliterate({ force: true });
    const self = fileURLToPath(import.meta.url);
    const kids = [];
    for (let i = 0; i < workers; i++) {
        const c = fork(self, ['worker', String(concurrency)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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
            jobs.push({ name: 'reminder', data: { j }, opts: { delay } });
        }
        await q.addBulk(jobs);
    }
    if (Date.now() > due) {
        throw new Error('adding the jobs took longer than their lead');
    }
    const end = due + WAIT_MAX_MS;
    while (kids.reduce((a, k) => a + k.count, 0) < n && Date.now() < end) {
        await sleep(50);
    }
    for (const k of kids) {
        k.c.send({ stop: true });
    }
    await Promise.all(kids.map((k) => k.exit));
    const at = kids.flatMap((k) => k.at ?? []).map((t) => t - due).sort((a, b) => a - b);
    await q.obliterate({ force: true });
    await q.close();
    const f = (v) => (Number.isFinite(v) ? String(Math.round(v)) : '-');
    return {
        n, processed: at.length, allAfterMs: at.length >= n ? at[at.length - 1] : NaN,
        lat: `${f(quantile(at, 0.5))}/${f(quantile(at, 0.99))}/${f(at[at.length - 1])}`,
    };
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'worker') {
    await worker(Number(args[0]));
} else if (mode === 'burst') {
    const r = await burst(Number(args[0]), Number(args[1]), Number(args[2]));
    process.send(r, () => process.exit(0));
} else {
    process.stderr.write('usage: node bench/bullmq.mjs burst N WORKERS CONCURRENCY\n');
    process.exit(2);
}
