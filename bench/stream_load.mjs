// bench/stream_load.mjs -- the steady API load of bench/stream.mjs's reconnect storm, in a process
// of its own so that the stream client's work never delays it. It stays up for the whole bench
// and runs one window per line read on stdin, a JSON object { "port", "path", "seconds" }: GET
// path with the API key LOAD_TOKEN at LOAD_RATE requests per second for that many seconds over at
// most LOAD_CONNECTIONS keep-alive connections to 127.0.0.1:port. The schedule is fixed in advance
// (request k at start + k / rate) and each latency is counted from the request's scheduled time,
// so a stalled server is charged for the requests that queued behind it as well. Answers each
// window with one line: { "samples": [[scheduled wall-clock ms, latency ms, status], ...] }
// (status 0: no answer). Exits when stdin ends.
//
// It is started once, before the stream client lowers its own scheduling priority (bench/stream.mjs,
// BENCH_CLIENT_SCHED): a process inherits the policy and priority of the thread that starts it,
// and an unprivileged one cannot raise them again.
import http from 'node:http';
import readline from 'node:readline';

const TOKEN = process.env.LOAD_TOKEN;
const RATE = Number(process.env.LOAD_RATE ?? '200');
const CONNECTIONS = Number(process.env.LOAD_CONNECTIONS ?? '10');
const TIMEOUT_MS = 10000; // a request without an answer by then counts as status 0

if (!TOKEN) {
    process.stderr.write('bench/stream_load.mjs: LOAD_TOKEN must be set\n');
    process.exit(2);
}

const wall = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function get(agent, port, path) {
    return new Promise((resolve) => {
        const req = http.request({ host: '127.0.0.1', port, path, agent,
            headers: { authorization: `Bearer ${TOKEN}` }, timeout: TIMEOUT_MS }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode));
            res.on('error', () => resolve(0));
        });
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve(0));
        req.end();
    });
}

async function window({ port, path, seconds }) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
    // Open the connections first: their handshakes are not part of the load.
    await Promise.all(Array.from({ length: CONNECTIONS }, () => get(agent, port, path)));
    const samples = [];
    const pending = [];
    const n = Math.round(RATE * seconds);
    const t0 = wall();
    for (let k = 0; k < n; k++) {
        const at = t0 + (k * 1000) / RATE;
        const wait = at - wall();
        if (wait > 0) {
            await sleep(wait);
        }
        pending.push(get(agent, port, path).then((status) => samples.push([at, wall() - at, status])));
    }
    await Promise.all(pending);
    agent.destroy();
    return samples;
}

async function main() {
    for await (const line of readline.createInterface({ input: process.stdin })) {
        const samples = await window(JSON.parse(line));
        process.stdout.write(`${JSON.stringify({ samples })}\n`);
    }
}

main().catch((e) => {
    process.stderr.write(`bench/stream_load.mjs: ${e.stack || e}\n`);
    process.exit(1);
});
