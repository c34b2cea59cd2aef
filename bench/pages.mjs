// bench/pages.mjs -- big list pages (GET /v1/meetings) measured against one server: the bytes and
// server CPU of a page, the resident set of the server idle, while slow readers hold big pages
// (clients that send the request with a 4 KiB receive buffer and never read), and after they
// closed, and another tenant's latency meanwhile. Tenant c has BENCH_MEETINGS meetings of about
// 64 KB each (250 participants with 80-character ids and names, a 5,000-character description,
// 7 KB of metadata); tenant b one small meeting, which it lists with limit=1 every
// BENCH_PROBE_MS.
// Configured by the environment bench/pages.sh exports: TOCSIN_BIN, BENCH_DB_URL,
// BENCH_REDIS_URL, BENCH_KEY_C, BENCH_KEY_B, BENCH_DIR; BENCH_MEETINGS (200), BENCH_READERS
// ("8 17 40": a round of slow readers for each count), BENCH_NORMAL ("40": a round of clients
// that each read every meeting of tenant c at once, for each count), BENCH_HOLD_S (20),
// BENCH_AFTER_S (10), BENCH_PROBE_MS (100), BENCH_PAGE_LIMIT (200), BENCH_SERVER_ENV (extra
// "NAME=value ..." for the server).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { procStat } from './proc.mjs';
import { freePort } from './serve.mjs';

const env = (name, def) => process.env[name] ?? def;
const BIN = env('TOCSIN_BIN');
const DIR = env('BENCH_DIR', '.');
const MEETINGS = Number(env('BENCH_MEETINGS', '200'));
const READERS = env('BENCH_READERS', '8 17 40').split(/\s+/).filter(Boolean).map(Number);
const NORMAL = env('BENCH_NORMAL', '40').split(/\s+/).filter(Boolean).map(Number);
const HOLD_S = Number(env('BENCH_HOLD_S', '20'));
const AFTER_S = Number(env('BENCH_AFTER_S', '10'));
const PROBE_MS = Number(env('BENCH_PROBE_MS', '100'));
const PAGE_LIMIT = Number(env('BENCH_PAGE_LIMIT', '200'));
const PROBE_TIMEOUT_MS = 10000;
const CPU_PAGES = 5; // pages read one after another for the CPU figure
const SEED_PARALLEL = 4;
const SLOW_RCVBUF = 4096;
const RSS_SAMPLE_MS = 200;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (msg) => process.stderr.write(`==> ${msg}\n`);

async function startServer() {
    const port = await freePort();
    const extra = Object.fromEntries(env('BENCH_SERVER_ENV', '').split(/\s+/).filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    const out = fs.openSync(path.join(DIR, 'tocsin.log'), 'w');
    const child = spawn(BIN, ['serve'], {
        stdio: ['ignore', out, out],
        env: {
            ...process.env,
            TOCSIN_HTTP_ADDR: `127.0.0.1:${port}`,
            TOCSIN_DATABASE_URL: env('BENCH_DB_URL'),
            TOCSIN_REDIS_URL: env('BENCH_REDIS_URL'),
            TOCSIN_LOG_LEVEL: 'warn',
            ...extra,
        },
    });
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 200; i++) {
        try {
            if ((await fetch(`${base}/readyz`)).ok) {
                return { child, base, port };
            }
        } catch {
            // not listening yet
        }
        await sleep(100);
    }
    child.kill('SIGKILL');
    throw new Error('the server did not become ready (see tocsin.log)');
}

const pad = (s, n) => (s + 'x'.repeat(n)).slice(0, n);

function bigMeeting(i) {
    const participants = Array.from({ length: 250 }, (_, k) => ({
        id: pad(`p${i}-${k}-`, 80),
        name: pad(`Participant ${k} of meeting ${i} `, 80),
    }));
    const metadata = {};
    for (let k = 0; k < 70; k++) {
        metadata[`key${k}`] = pad(`value ${k} `, 90);
    }
    return {
        title: `big ${i}`,
        starts_at: new Date(Date.UTC(2031, 0, 1) + i * 60000).toISOString(),
        description: pad(`meeting ${i} `, 5000),
        participants,
        metadata,
        reminders: [{ minutes_before: 5 }],
    };
}

async function post(base, key, body) {
    const r = await fetch(`${base}/v1/meetings`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
    });
    if (r.status !== 201) {
        throw new Error(`POST /v1/meetings: ${r.status} ${await r.text()}`);
    }
    await r.arrayBuffer();
}

async function seed(base, keyC, keyB) {
    const have = await (await fetch(`${base}/v1/meetings?limit=1`, {
        headers: { Authorization: `Bearer ${keyC}` },
    })).json();
    if (have.items.length > 0) {
        log('tenant c has meetings already: not seeding');
        return;
    }
    const t0 = Date.now();
    let next = 0;
    await Promise.all(Array.from({ length: SEED_PARALLEL }, async () => {
        while (next < MEETINGS) {
            await post(base, keyC, bigMeeting(next++));
        }
    }));
    await post(base, keyB, { title: 'small', starts_at: '2031-01-01T00:00:00Z', reminders: [] });
    log(`seeded ${MEETINGS} meetings of ${JSON.stringify(bigMeeting(0)).length} bytes in ${Date.now() - t0} ms`);
}

// fetch, tried again once when the connection failed: a keep-alive connection left idle past
// TOCSIN_HTTP_HEADER_TIMEOUT_S (during a round of slow readers, say) is closed by the server,
// and fetch may pick it just then.
async function fetchAgain(url, opts) {
    try {
        return await fetch(url, opts);
    } catch (e) {
        log(`fetch failed (${e.cause?.code || e.cause?.message || e.message}): trying once more`);
        return fetch(url, opts);
    }
}

// One page and its cost: bytes of the body, items, whether a cursor came, wall time.
async function page(base, key, query) {
    const t0 = performance.now();
    const r = await fetchAgain(`${base}/v1/meetings?${query}`, { headers: { Authorization: `Bearer ${key}` } });
    const text = await r.text();
    const ms = performance.now() - t0;
    if (r.status !== 200) {
        throw new Error(`GET /v1/meetings?${query}: ${r.status} ${text.slice(0, 200)}`);
    }
    const j = JSON.parse(text);
    return { bytes: Buffer.byteLength(text), items: j.items.length, cursor: j.next_cursor, ms };
}

async function pageFigures(srv, keyC) {
    const one = await page(srv.base, keyC, `limit=${PAGE_LIMIT}`);
    const before = procStat(srv.child.pid).cpuMs;
    for (let i = 0; i < CPU_PAGES; i++) {
        await page(srv.base, keyC, `limit=${PAGE_LIMIT}`);
    }
    const cpu = (procStat(srv.child.pid).cpuMs - before) / CPU_PAGES;
    let pages = 0;
    let items = 0;
    let cursor = null;
    do {
        const p = await page(srv.base, keyC, `limit=${PAGE_LIMIT}${cursor ? `&cursor=${cursor}` : ''}`);
        pages++;
        items += p.items;
        cursor = p.cursor;
    } while (cursor);
    log(`page limit=${PAGE_LIMIT}: ${one.bytes} bytes, ${one.items} items, ${one.ms.toFixed(0)} ms wall, ` +
        `${cpu.toFixed(0)} ms server CPU; all ${items} meetings in ${pages} pages`);
}

// Slow readers: a Python child opens n connections with a 4 KiB receive buffer (Node cannot set
// SO_RCVBUF), sends the page request on each, reads nothing, and closes them all on a line on its
// standard input.
const SLOW_PY = `
import socket, sys
port, n, path, key = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
socks = []
for _ in range(n):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, ${SLOW_RCVBUF})
    s.connect(("127.0.0.1", port))
    s.sendall(("GET %s HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer %s\\r\\n\\r\\n" % (path, key)).encode())
    socks.append(s)
print("open", flush=True)
sys.stdin.readline()
for s in socks:
    s.close()
print("closed", flush=True)
`;

function slowReaders(port, n, key) {
    const child = spawn('python3', ['-c', SLOW_PY, String(port), String(n), `/v1/meetings?limit=${PAGE_LIMIT}`, key],
        { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = [];
    child.stdout.on('data', (d) => lines.push(...d.toString().split('\n').filter(Boolean)));
    const waitLine = async (want) => {
        while (!lines.includes(want)) {
            if (child.exitCode !== null) {
                throw new Error('the slow readers exited');
            }
            await sleep(20);
        }
    };
    return {
        opened: () => waitLine('open'),
        close: async () => {
            child.stdin.write('\n');
            await waitLine('closed');
        },
    };
}

const quantile = (s, q) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];

// Tenant b's probes until stop() is called: latencies in ms (timeouts count as PROBE_TIMEOUT_MS).
// They run in a process of their own, so that the readers' JSON parsing in this one does not
// delay them.
const PROBE_JS = `
const [base, key, every, timeoutMs] = process.argv.slice(1);
const lat = [];
let timeouts = 0;
let running = true;
process.stdin.on('data', () => { running = false; });
while (running) {
    const t0 = performance.now();
    try {
        const r = await fetch(base + '/v1/meetings?limit=1', {
            headers: { Authorization: 'Bearer ' + key }, signal: AbortSignal.timeout(Number(timeoutMs)),
        });
        await r.text();
        lat.push(performance.now() - t0);
    } catch {
        timeouts++;
        lat.push(Number(timeoutMs));
    }
    await new Promise((r) => setTimeout(r, Number(every)));
}
process.stdout.write(JSON.stringify({ lat, timeouts }));
process.exit(0);
`;

function probes(base, key) {
    const child = spawn(process.execPath, ['--input-type=module', '-e', PROBE_JS, base, key, String(PROBE_MS),
        String(PROBE_TIMEOUT_MS)], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    const exited = new Promise((r) => child.on('exit', r));
    return async () => {
        child.stdin.end('stop\n');
        await exited;
        const { lat, timeouts } = JSON.parse(out);
        const s = Float64Array.from(lat).sort();
        return `${s.length} probes, p50 ${quantile(s, 0.5).toFixed(1)} ms, p99 ${quantile(s, 0.99).toFixed(1)} ms, ` +
            `max ${s[s.length - 1].toFixed(1)} ms, ${timeouts} timed out`;
    };
}

const mb = (kib) => (kib / 1024).toFixed(1);

// n clients that each read the whole tenant at once, following next_cursor, reading as fast as
// they can; tenant b probes meanwhile.
async function readersRound(srv, n, keyC, keyB) {
    const idle = procStat(srv.child.pid);
    const stop = probes(srv.base, keyB);
    let peak = idle.rss;
    let reading = true;
    const sampler = (async () => {
        while (reading) {
            peak = Math.max(peak, procStat(srv.child.pid).rss);
            await sleep(RSS_SAMPLE_MS);
        }
    })();
    const t0 = performance.now();
    await Promise.all(Array.from({ length: n }, async () => {
        let cursor = null;
        do {
            cursor = (await page(srv.base, keyC, `limit=${PAGE_LIMIT}${cursor ? `&cursor=${cursor}` : ''}`)).cursor;
        } while (cursor);
    }));
    const wall = performance.now() - t0;
    const cpu = procStat(srv.child.pid).cpuMs - idle.cpuMs;
    reading = false;
    await sampler;
    const during = await stop();
    await sleep(AFTER_S * 1000);
    const after = procStat(srv.child.pid).rss;
    log(`${n} clients reading every meeting: done in ${(wall / 1000).toFixed(1)} s, server CPU ` +
        `${(cpu / 1000).toFixed(1)} s; RSS idle ${mb(idle.rss)} MiB, peak ${mb(peak)} MiB, ${AFTER_S} s after ` +
        `${mb(after)} MiB; tenant b: ${during}`);
}

async function round(srv, n, keyC, keyB) {
    const idle = procStat(srv.child.pid);
    const stop = probes(srv.base, keyB);
    const slow = slowReaders(srv.port, n, keyC);
    await slow.opened();
    let peak = 0;
    const cpu0 = procStat(srv.child.pid).cpuMs;
    for (let t = 0; t < HOLD_S * 1000; t += RSS_SAMPLE_MS) {
        peak = Math.max(peak, procStat(srv.child.pid).rss);
        await sleep(RSS_SAMPLE_MS);
    }
    const cpu = procStat(srv.child.pid).cpuMs - cpu0;
    const during = await stop();
    await slow.close();
    await sleep(AFTER_S * 1000);
    const after = procStat(srv.child.pid).rss;
    log(`${n} slow readers for ${HOLD_S} s: RSS idle ${mb(idle.rss)} MiB, peak ${mb(peak)} MiB, ` +
        `${AFTER_S} s after ${mb(after)} MiB; server CPU ${(cpu / 1000).toFixed(1)} s; tenant b: ${during}`);
}

async function main() {
    const srv = await startServer();
    try {
        const keyC = env('BENCH_KEY_C');
        const keyB = env('BENCH_KEY_B');
        await seed(srv.base, keyC, keyB);
        await sleep(2000);
        log(`server RSS idle after seeding: ${mb(procStat(srv.child.pid).rss)} MiB`);
        await pageFigures(srv, keyC);
        await sleep(AFTER_S * 1000);
        for (const n of READERS) {
            await round(srv, n, keyC, keyB);
        }
        for (const n of NORMAL) {
            await readersRound(srv, n, keyC, keyB);
        }
    } finally {
        srv.child.kill('SIGTERM');
    }
}

main().catch((e) => {
    process.stderr.write(`bench/pages.mjs: ${e.stack || e}\n`);
    process.exit(1);
});
