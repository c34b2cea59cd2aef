// bench/stream_load.mjs -- the steady API load of bench/stream.mjs's reconnect storm, in a process
// of its own so that the stream client's work never delays it: GET LOAD_PATH with the API key
// LOAD_TOKEN at LOAD_RATE requests per second for LOAD_SECONDS over at most LOAD_CONNECTIONS
// keep-alive connections to 127.0.0.1:LOAD_PORT. The schedule is fixed in advance (request k at
// start + k / rate) and each latency is counted from the request's scheduled time, so a stalled
// server is charged for the requests that queued behind it as well. Prints one JSON document:
// { "samples": [[scheduled wall-clock ms, latency ms, status], ...] } (status 0: no answer).
import http from 'node:http';

const PORT = Number(process.env.LOAD_PORT);
const PATH = process.env.LOAD_PATH;
const TOKEN = process.env.LOAD_TOKEN;
const RATE = Number(process.env.LOAD_RATE ?? '200');
const CONNECTIONS = Number(process.env.LOAD_CONNECTIONS ?? '10');
const SECONDS = Number(process.env.LOAD_SECONDS ?? '10');
const TIMEOUT_MS = 10000; // a request without an answer by then counts as status 0

if (!PORT || !PATH || !TOKEN) {
    process.stderr.write('bench/stream_load.mjs: LOAD_PORT, LOAD_PATH and LOAD_TOKEN must be set\n');
    process.exit(2);
}

const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
const wall = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function get() {
    return new Promise((resolve) => {
        const req = http.request({ host: '127.0.0.1', port: PORT, path: PATH, agent,
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

async function main() {
    // Open the connections first: their handshakes are not part of the load.
    await Promise.all(Array.from({ length: CONNECTIONS }, get));
    const samples = [];
    const pending = [];
    const n = Math.round(RATE * SECONDS);
    const t0 = wall();
    for (let k = 0; k < n; k++) {
        const at = t0 + (k * 1000) / RATE;
        const wait = at - wall();
        if (wait > 0) {
            await sleep(wait);
        }
        pending.push(get().then((status) => samples.push([at, wall() - at, status])));
    }
    await Promise.all(pending);
    agent.destroy();
    process.stdout.write(JSON.stringify({ samples }));
}

main();
