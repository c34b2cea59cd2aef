// harness.mjs -- black-box test harness for the tocsin API tests (node:test, Node 18.19 or later:
// Debian 12's own Node runs them, so no API newer than 18.19 here or in the tests).
// Each test file gets a fresh PostgreSQL database, its own `tocsin serve` child processes on free
// ports with a unique Redis key prefix, API keys from `tocsin keys create`, redis-cli helpers and
// optionally a private redis-server. Missing environment is an error, never a skip: a test run that
// silently tested nothing is worse than a red one.
import { spawn, execFile } from 'node:child_process';
import { after, test as nodeTest } from 'node:test';
import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkResponse } from './contract.mjs';

const REQUIRED_ENV = ['TOCSIN_BIN', 'TOCSIN_TEST_DATABASE_URL', 'TOCSIN_TEST_REDIS_URL', 'REDIS_SERVER_BIN'];
const START_TIMEOUT_MS = 20000;
const STOP_TIMEOUT_MS = 15000;
const EXEC_TIMEOUT_MS = 30000;
const LOG_KEEP_MAX = 64 * 1024; // bytes of each child's output kept for failure messages
const PG_LOG_TAIL_LINES = 20;   // lines of PostgreSQL's log in a failed pg_ctl's message

// Node 18 has no --test-timeout: test files take `test` from here, which gives every test this
// timeout unless it names its own, so a test that hangs fails instead of stalling the run.
export const TEST_TIMEOUT_MS = 240000;

export function test(name, opts, fn) {
    if (typeof opts === 'function') {
        return nodeTest(name, { timeout: TEST_TIMEOUT_MS }, opts);
    }
    return nodeTest(name, { timeout: TEST_TIMEOUT_MS, ...opts }, fn);
}

export function requireEnv() {
    const missing = REQUIRED_ENV.filter((n) => !process.env[n]);
    if (missing.length > 0) {
        throw new Error(`API tests need these environment variables: ${missing.join(', ')} ` +
            '(a running PostgreSQL and Redis, the tocsin binary and redis-server); refusing to skip');
    }
    for (const n of ['TOCSIN_BIN', 'REDIS_SERVER_BIN']) {
        if (!fs.existsSync(process.env[n])) {
            throw new Error(`${n}=${process.env[n]} does not exist`);
        }
    }
    return {
        bin: process.env.TOCSIN_BIN,
        dbUrl: process.env.TOCSIN_TEST_DATABASE_URL,
        // scripts/test.sh's TOCSIN_TEST_REDIS_TLS=1 run: the shared Redis's TLS port.
        // TOCSIN_TEST_REDIS_CLUSTER=1: the suite's Redis Cluster (redis-cluster://).
        redisUrl: process.env.TOCSIN_TEST_REDIS_CLUSTER_URL ?? process.env.TOCSIN_TEST_REDIS_TLS_URL ??
            process.env.TOCSIN_TEST_REDIS_URL,
        redisServerBin: process.env.REDIS_SERVER_BIN,
    };
}

export function run(file, args, opts = {}) {
    return new Promise((resolve) => {
        execFile(file, args, { timeout: EXEC_TIMEOUT_MS, maxBuffer: 16 << 20, ...opts },
            (err, stdout, stderr) => {
                const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
                resolve({ code, stdout: String(stdout), stderr: String(stderr), err });
            });
    });
}

async function runOk(file, args, opts) {
    const r = await run(file, args, opts);
    if (r.code !== 0) {
        throw new Error(`${path.basename(file)} ${args.join(' ')} failed (${r.code}): ${r.stderr || r.err}`);
    }
    return r;
}

// Ports for the servers the tests start come from between FREE_PORT_MIN and the kernel's
// ephemeral range, which is where it takes the local port of every outgoing connection: a test
// that stops a server and starts it again on the same port (PostgreSQL, Redis, tocsin) must not
// find it taken in between by a connection of a test running beside it. The scripts' fixed ports
// (scripts/test.sh, scripts/debian12.sh) sit below FREE_PORT_MIN, so a server stopped for a
// while does not lend its port either.
const FREE_PORT_MIN = 26000;
const FREE_PORT_TRIES = 64;

// The first port of the ephemeral range (0 when the kernel does not say), read once.
const EPHEMERAL_LOW = (() => {
    try {
        const low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0]);
        return Number.isInteger(low) ? low : 0;
    } catch {
        return 0;
    }
})();

function listenOnce(port) {
    return new Promise((resolve) => {
        const s = net.createServer();
        s.once('error', () => resolve(null));
        s.listen(port, '127.0.0.1', () => {
            const got = s.address().port;
            s.close(() => resolve(got));
        });
    });
}

export async function freePort() {
    const low = EPHEMERAL_LOW;
    for (let i = 0; low - FREE_PORT_MIN > FREE_PORT_TRIES && i < FREE_PORT_TRIES; i++) {
        const got = await listenOnce(FREE_PORT_MIN + Math.floor(Math.random() * (low - FREE_PORT_MIN)));
        if (got !== null) {
            return got;
        }
    }
    // No room below the ephemeral range on this machine: any port the kernel gives.
    const got = await listenOnce(0);
    if (got === null) {
        throw new Error('no free port on 127.0.0.1');
    }
    return got;
}

// Starts a server of a test (a webhook receiver, say; an http.Server, or a net.Server speaking
// HTTP by hand) on 127.0.0.1 and closes it when test t ends, an http.Server's open connections
// included. Returns the URL of path on it.
export async function serveLocal(t, server, path = '/hook') {
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    t.after(() => new Promise((r) => {
        server.closeAllConnections?.();
        server.close(() => r());
    }));
    return `http://127.0.0.1:${server.address().port}${path}`;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls fn until it returns a truthy value or timeoutMs passes; returns the last value.
export async function waitFor(fn, timeoutMs, stepMs = 50) {
    const end = Date.now() + timeoutMs;
    let v;
    for (;;) {
        v = await fn();
        if (v || Date.now() >= end) {
            return v;
        }
        await sleep(stepMs);
    }
}

// The deliveries of meeting id once pred(items) holds (polled every 100 ms up to boundMs); the
// last items read.
export async function deliveriesWhen(srv, key, id, pred, boundMs) {
    let last;
    await waitFor(async () => {
        last = await srv.req('GET', `/v1/meetings/${id}/deliveries`, { key });
        return last.status === 200 && pred(last.json.items);
    }, boundMs, 100);
    return last.json.items;
}

function keepTail(buf, chunk) {
    const s = buf + chunk.toString();
    return s.length > LOG_KEEP_MAX ? s.slice(s.length - LOG_KEEP_MAX) : s;
}

// A tracked child process: output kept for diagnostics, exit awaited.
function track(h, child, what) {
    const c = { child, what, log: '', exited: null };
    child.stdout?.on('data', (d) => { c.log = keepTail(c.log, d); });
    child.stderr?.on('data', (d) => { c.log = keepTail(c.log, d); });
    c.exit = new Promise((resolve) => {
        child.on('exit', (code, signal) => {
            c.exited = { code, signal };
            h.children.delete(c);
            resolve(c.exited);
        });
    });
    h.children.add(c);
    return c;
}

async function stopChild(c, signal, timeoutMs) {
    if (c.exited) {
        return c.exited;
    }
    c.child.kill(signal);
    // The timer is cleared once the child exited: left pending, it kept the test file's process
    // alive for the whole timeout after its last test.
    let timer;
    const t = new Promise((resolve) => {
        timer = setTimeout(() => resolve(null), timeoutMs);
    });
    const r = await Promise.race([c.exit, t]);
    clearTimeout(timer);
    if (r === null) {
        c.child.kill('SIGKILL');
        await c.exit;
        throw new Error(`${c.what} did not exit within ${timeoutMs} ms of ${signal}; killed`);
    }
    return r;
}

function dbUrlWithName(base, name) {
    const u = new URL(base);
    u.pathname = '/' + name;
    return u.toString();
}

// ---------------------------------------------------------------- responses and requests

function wrapResponse(status, headersGet, text) {
    let parsed;
    let parseErr = null;
    try {
        parsed = text.length > 0 ? JSON.parse(text) : undefined;
    } catch (e) {
        parseErr = e;
    }
    return {
        status,
        header: (n) => headersGet(n.toLowerCase()),
        get contentType() { return headersGet('content-type'); },
        text,
        get json() {
            if (parseErr) {
                throw new Error(`response body is not JSON (${parseErr.message}): ${text.slice(0, 200)}`);
            }
            return parsed;
        },
    };
}

// Sends raw bytes on a fresh connection and reads one response (the connection is closed by us
// after the response is complete, or by the server). Returns the wrapped response, or throws on
// timeout. For what fetch cannot send: invalid UTF-8 is fine in fetch, but lying Content-Length,
// partial requests and malformed request lines are not.
export function rawRequest(port, bytes, { timeoutMs = 5000 } = {}) {
    return new Promise((resolve, reject) => {
        const sock = net.connect(port, '127.0.0.1');
        let buf = Buffer.alloc(0);
        let done = false;
        const finish = (err, res) => {
            if (done) {
                return;
            }
            done = true;
            clearTimeout(timer);
            sock.destroy();
            if (err) {
                reject(err);
            } else {
                resolve(res);
            }
        };
        const timer = setTimeout(() => finish(new Error(`no complete response within ${timeoutMs} ms`)),
            timeoutMs);
        const tryParse = (closed) => {
            const end = buf.indexOf('\r\n\r\n');
            if (end < 0) {
                if (closed) {
                    finish(new Error(`connection closed without a response: ${JSON.stringify(buf.toString())}`));
                }
                return;
            }
            const head = buf.subarray(0, end).toString('latin1').split('\r\n');
            const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0]);
            if (!m) {
                finish(new Error(`bad status line: ${head[0]}`));
                return;
            }
            const headers = new Map();
            for (const line of head.slice(1)) {
                const i = line.indexOf(':');
                const k = line.slice(0, i).trim().toLowerCase();
                const v = line.slice(i + 1).trim();
                headers.set(k, headers.has(k) ? `${headers.get(k)}, ${v}` : v);
            }
            const body = buf.subarray(end + 4);
            const status = Number(m[1]);
            let text = null;
            if (headers.has('content-length')) {
                const n = Number(headers.get('content-length'));
                if (body.length >= n) {
                    text = body.subarray(0, n).toString();
                }
            } else if (/chunked/i.test(headers.get('transfer-encoding') || '')) {
                text = dechunk(body);
            } else if (status === 204 || status === 304) {
                text = '';
            } else if (closed) {
                text = body.toString();
            }
            if (text !== null) {
                finish(null, wrapResponse(status, (n) => headers.get(n) ?? null, text));
            } else if (closed) {
                finish(new Error('connection closed in the middle of the response body'));
            }
        };
        sock.on('data', (d) => {
            buf = Buffer.concat([buf, d]);
            tryParse(false);
        });
        sock.on('end', () => tryParse(true));
        sock.on('close', () => tryParse(true));
        sock.on('error', (e) => {
            if (buf.length > 0) {
                tryParse(true);
            } else {
                finish(e);
            }
        });
        sock.write(bytes);
    });
}

function dechunk(body) {
    const parts = [];
    let off = 0;
    for (;;) {
        const eol = body.indexOf('\r\n', off);
        if (eol < 0) {
            return null;
        }
        const n = parseInt(body.subarray(off, eol).toString(), 16);
        if (Number.isNaN(n)) {
            return null;
        }
        if (n === 0) {
            return Buffer.concat(parts).toString();
        }
        if (body.length < eol + 2 + n + 2) {
            return null;
        }
        parts.push(body.subarray(eol + 2, eol + 2 + n));
        off = eol + 2 + n + 2;
    }
}

// ---------------------------------------------------------------- the tocsin server

class Server {
    constructor(h, env, port) {
        this.h = h;
        this.env = env;
        this.port = port;
        this.base = `http://127.0.0.1:${port}`;
        this.proc = null;
    }

    get prefix() { return this.env.TOCSIN_REDIS_PREFIX; }
    get pid() { return this.proc?.child.pid; }
    get log() { return this.proc?.log ?? ''; }

    async start() {
        if (this.proc && !this.proc.exited) {
            throw new Error('server already running');
        }
        const child = spawn(this.h.env.bin, ['serve'], { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
        this.proc = track(this.h, child, `tocsin serve :${this.port}`);
        const ok = await waitFor(async () => {
            if (this.proc.exited) {
                return 'exited';
            }
            try {
                const r = await fetch(`${this.base}/healthz`, { signal: AbortSignal.timeout(1000) });
                await r.arrayBuffer();
                return r.status === 200 ? 'up' : null;
            } catch {
                return null;
            }
        }, START_TIMEOUT_MS, 50);
        if (ok !== 'up') {
            const why = ok === 'exited' ? `exited ${JSON.stringify(this.proc.exited)}` : 'no 200 from /healthz';
            await this.kill();
            throw new Error(`tocsin serve did not come up (${why}). Output:\n${this.proc.log}`);
        }
        return this;
    }

    // Graceful stop (SIGTERM); returns {code, signal}.
    async stop() {
        if (!this.proc) {
            return null;
        }
        return stopChild(this.proc, 'SIGTERM', STOP_TIMEOUT_MS);
    }

    async kill() {
        if (!this.proc || this.proc.exited) {
            return this.proc?.exited ?? null;
        }
        this.proc.child.kill('SIGKILL');
        return this.proc.exit;
    }

    async restart() {
        await this.stop();
        return this.start();
    }

    // `tocsin keys ...` with this server's environment.
    keys(args) {
        return run(this.h.env.bin, ['keys', ...args], { env: this.env });
    }

    async createKey(tenant) {
        const r = await this.keys(['create', '--tenant', tenant]);
        if (r.code !== 0) {
            throw new Error(`tocsin keys create --tenant ${tenant} failed (${r.code}): ${r.stderr}`);
        }
        const key = r.stdout.trim();
        if (!/^tsk_[0-9a-f]{8}_[A-Za-z0-9_-]{43}$/.test(key) || r.stdout !== key + '\n') {
            throw new Error(`tocsin keys create printed something else than one key: ${JSON.stringify(r.stdout)}`);
        }
        return key;
    }

    // One HTTP request through fetch. opts: key (bearer), json (object -> JSON body with
    // application/json), body (string|Buffer), headers, validate (default true: the response must
    // match api/openapi.yaml). Returns a wrapped response (status, header(), text, json).
    async req(method, urlPath, opts = {}) {
        const headers = { ...(opts.headers || {}) };
        if (opts.key) {
            headers.Authorization = `Bearer ${opts.key}`;
        }
        let body = opts.body;
        if (opts.json !== undefined) {
            body = JSON.stringify(opts.json);
            if (!Object.keys(headers).some((k) => k.toLowerCase() === 'content-type')) {
                headers['Content-Type'] = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
            }
        }
        const r = await fetch(this.base + urlPath, {
            method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(opts.timeoutMs ?? 15000),
        });
        const text = Buffer.from(await r.arrayBuffer()).toString();
        const res = wrapResponse(r.status, (n) => r.headers.get(n), text);
        if (opts.validate !== false) {
            checkResponse(method, urlPath, res);
        }
        return res;
    }

    raw(bytes, opts) {
        return rawRequest(this.port, bytes, opts);
    }
}

// ---------------------------------------------------------------- a PostgreSQL in the way

// A TCP forwarder on 127.0.0.1 to the PostgreSQL of dbUrl that can slow or stop its replies,
// for every connection through it: delay(ms) holds each reply chunk that long (a database read
// that takes ms more), hold() keeps every reply from then on (a PostgreSQL that hangs: libpq's
// connects and statements block), release() sends what was held and forwards again. Replies keep
// their order. Resolves with {url (dbUrl through it), delay, hold, release, close}.
async function postgresProxy(dbUrl) {
    const target = new URL(dbUrl);
    const socks = new Set();
    const queues = new Set();
    let delayMs = 0;
    let held = false;
    // Writes out the chunks that are due, in order; a later one never overtakes an earlier one.
    const pump = (q) => {
        clearTimeout(q.timer);
        q.timer = null;
        while (!held && q.chunks.length > 0 && q.chunks[0].due <= Date.now()) {
            q.to.write(q.chunks.shift().data);
        }
        if (!held && q.chunks.length > 0) {
            q.timer = setTimeout(() => pump(q), q.chunks[0].due - Date.now());
        }
    };
    const server = net.createServer((down) => {
        const up = net.connect(Number(target.port), target.hostname);
        const q = { to: down, chunks: [], timer: null };
        queues.add(q);
        for (const s of [down, up]) {
            socks.add(s);
            s.on('error', () => {});
            s.on('close', () => {
                socks.delete(s);
                queues.delete(q);
                clearTimeout(q.timer);
                down.destroy();
                up.destroy();
            });
        }
        down.pipe(up);
        up.on('data', (data) => {
            q.chunks.push({ data, due: Date.now() + delayMs });
            if (q.timer === null) {
                pump(q);
            }
        });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = new URL(dbUrl);
    url.port = String(server.address().port);
    return {
        url: url.toString(),
        delay: (ms) => { delayMs = ms; },
        hold: () => { held = true; },
        release: () => {
            held = false;
            for (const q of queues) {
                pump(q);
            }
        },
        close: () => {
            for (const s of socks) {
                s.destroy();
            }
            return new Promise((resolve) => server.close(resolve));
        },
    };
}

// Servers a test file starts itself (redis-server, redis-sentinel): start(bin, args, what) spawns
// one and keeps its last output; stop(p, signal) signals it by PID and waits; whatever still runs
// is killed when the file ends.
export function ownProcesses() {
    const procs = [];
    const start = (bin, args, what) => {
        const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        const p = { child, what, log: '', exited: null };
        for (const s of [child.stdout, child.stderr]) {
            s.on('data', (d) => { p.log = (p.log + d).slice(-32768); });
        }
        p.exit = new Promise((r) => child.on('exit', (code, signal) => r((p.exited = { code, signal }))));
        procs.push(p);
        return p;
    };
    const stop = async (p, signal = 'SIGTERM') => {
        if (!p.exited) {
            process.kill(p.child.pid, signal);
            await p.exit;
        }
    };
    after(async () => {
        for (const p of procs) {
            await stop(p, 'SIGKILL');
        }
    });
    return { start, stop };
}

// A webhook receiver answering 204 that keeps a ledger: each webhook-id (rem_<reminder>_<fire_at
// ms>) with its first arrival and how often it came.
export async function ledgerReceiver(t) {
    const rx = { seen: new Map() };
    rx.server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            const id = req.headers['webhook-id'] ?? '';
            const m = /^rem_(\d+)_(\d+)$/.exec(id);
            const s = rx.seen.get(id);
            if (s) {
                s.count++;
            } else if (m) {
                rx.seen.set(id, { reminder: Number(m[1]), fireAt: Number(m[2]), at: Date.now(), count: 1 });
            }
            res.writeHead(204).end();
        });
    });
    rx.url = await serveLocal(t, rx.server);
    return rx;
}

// The load of the failover files: a tenant whose webhook points at rx (its API key), and n
// reminders of meetings due from t0 on over spreadMs (minutes_before 5), created in turn through
// servers (their ids).
export async function webhookTenant(srv, rx, tenant) {
    const key = await srv.createKey(tenant);
    const wh = await srv.req('POST', '/v1/webhooks', { key, json: { url: rx.url } });
    if (wh.status !== 201) {
        throw new Error(`POST /v1/webhooks: ${wh.status} ${wh.text}`);
    }
    return key;
}

export async function remindersDue(servers, key, n, t0, spreadMs) {
    const due = [];
    for (let i = 0; i < n; i++) {
        const fireMs = t0 + Math.floor((i * spreadMs) / n);
        const c = await servers[i % servers.length].req('POST', '/v1/meetings', { key, json: { title: `due${i}`,
            starts_at: new Date(fireMs + 5 * MIN).toISOString(), reminders: [{ minutes_before: 5 }] } });
        if (c.status !== 201) {
            throw new Error(`POST /v1/meetings: ${c.status} ${c.text}`);
        }
        due.push(Number(c.json.reminders[0].id));
    }
    return due;
}

// Waits until rx (ledgerReceiver) got every reminder of due or untilMs (epoch ms) passed, then
// settleMs more for a wrong repeat. { got, missing, late (sorted, ms), repeats }.
export async function arrivals(rx, due, untilMs, settleMs) {
    const mine = () => [...rx.seen.values()].filter((s) => due.includes(s.reminder));
    await waitFor(() => mine().length >= due.length, untilMs - Date.now(), 100);
    await sleep(settleMs);
    const got = mine();
    return { got, missing: due.filter((id) => !got.some((s) => s.reminder === id)),
        late: got.map((s) => s.at - s.fireAt).sort((a, b) => a - b),
        repeats: got.reduce((a, s) => a + s.count - 1, 0) };
}

// "fired|outbox rows|delivered" of the reminders due: "N|N|N" when each was recorded once.
export async function recordedOnce(h, due) {
    const ids = `ARRAY[${due.join(',')}]::bigint[]`;
    return h.sql(`SELECT count(*) FILTER (WHERE r.status = 'fired'),
        (SELECT count(*) FROM outbox o WHERE o.reminder_id = ANY(${ids})),
        (SELECT count(*) FROM outbox o WHERE o.reminder_id = ANY(${ids}) AND o.status = 'delivered')
        FROM reminders r WHERE r.id = ANY(${ids})`);
}

// ---------------------------------------------------------------- redis

// The files of a TLS Redis for the shared one (scripts/test.sh with TOCSIN_TEST_REDIS_TLS=1), or
// null: its CA, the server's certificate and key (for private servers) and, when Redis asks for
// one, a client certificate and key.
export function sharedRedisTls() {
    const ca = process.env.TOCSIN_TEST_REDIS_TLS_CA;
    return ca ? {
        ca,
        serverCert: process.env.TOCSIN_TEST_REDIS_TLS_SERVER_CERT,
        serverKey: process.env.TOCSIN_TEST_REDIS_TLS_SERVER_KEY,
    } : null;
}

// redis-cli's TLS arguments for a rediss:// URL: the CA, and the client certificate when given.
function cliTlsArgs(url, tls) {
    if (!url.startsWith('rediss://')) {
        return [];
    }
    const files = tls ?? sharedRedisTls();
    return ['--tls', '--cacert', files.ca, ...(files.cert ? ['--cert', files.cert, '--key', files.key] : [])];
}

// On a Cluster, tocsin's keys carry their shard's hash tag ("<prefix>:{s<id % 256>}:rem:..."):
// the names the tests use are written with it, and the names read back are without it.
const TAG_SHARDS = 256;
const tagged = (k) => String(k).replace(/^([^:{]+):(rem|claim):(\d+):(\d+)$/,
    (m, p, kind, id, at) => `${p}:{s${BigInt(id) % BigInt(TAG_SHARDS)}}:${kind}:${id}:${at}`);
const untagged = (k) => k.replace(/:\{[a-z]\d+\}:/, ':');

// redis-cli for a redis[s]-cluster:// URL: commands follow redirects (-c), KEYS and FLUSHALL go to
// every master; rediss-cluster:// with tls's CA (default: the suite's).
function clusterCli(url, tls) {
    const seed = new URL(url.replace(/^rediss?-cluster:/, 'http:').split(',')[0]);
    const tlsArgs = url.startsWith('rediss-cluster://') ? ['--tls', '--cacert', (tls ?? sharedRedisTls()).ca] : [];
    const at = (port, args) => run('redis-cli', [...tlsArgs, '-h', '127.0.0.1', '-p', String(port), '-c', ...args.map(String)]);
    const cmd = async (...args) => {
        const r = await at(seed.port, args.map(tagged));
        if (r.code !== 0 || /^(ERR|WRONGTYPE|Could not connect)/m.test(r.stdout + r.stderr)) {
            throw new Error(`redis-cli ${args.join(' ')}: ${r.stdout}${r.stderr}`);
        }
        return r.stdout.replace(/\n$/, '');
    };
    const masters = async () => (await cmd('CLUSTER', 'NODES')).split('\n').map((l) => l.split(' '))
        .filter((f) => f.length > 2 && /master/.test(f[2]) && !/fail/.test(f[2]))
        .map((f) => Number(/:(\d+)@/.exec(f[1])[1]));
    const onEach = async (...args) => Promise.all((await masters()).map((p) => at(p, args)));
    return {
        url,
        cmd,
        ping: async () => (await at(seed.port, ['PING'])).stdout.trim() === 'PONG',
        pexpiretime: async (key) => Number(await cmd('PEXPIRETIME', key)),
        keys: async (pattern) => {
            const glob = pattern.replace(/^([^:*]+):/, '$1:*');
            const outs = await onEach('KEYS', glob);
            return outs.flatMap((r) => (r.stdout.trim() === '' ? [] : r.stdout.trim().split('\n')))
                .map(untagged).sort();
        },
        flushall: async () => { await onEach('FLUSHALL'); },
    };
}

export function redisCli(url, tls = null) {
    if (/^rediss?-cluster:\/\//.test(url)) {
        return clusterCli(url, tls);
    }
    const tlsArgs = cliTlsArgs(url, tls);
    const cmd = async (...args) => {
        const r = await run('redis-cli', [...tlsArgs, '-u', url, ...args.map(String)]);
        if (r.code !== 0 || /^(ERR|WRONGTYPE|Could not connect)/m.test(r.stdout + r.stderr)) {
            throw new Error(`redis-cli ${args.join(' ')}: ${r.stdout}${r.stderr}`);
        }
        return r.stdout.replace(/\n$/, '');
    };
    return {
        url,
        cmd,
        ping: async () => (await run('redis-cli', [...tlsArgs, '-u', url, 'PING'])).stdout.trim() === 'PONG',
        pexpiretime: async (key) => Number(await cmd('PEXPIRETIME', key)),
        keys: async (pattern) => {
            const out = await cmd('KEYS', pattern);
            return out === '' ? [] : out.split('\n').sort();
        },
        flushall: () => cmd('FLUSHALL'),
    };
}

// A redis-server of the test's own. With tls ({ ca, serverCert, serverKey, authClients, and cert
// and key for redis-cli when authClients }), it listens on TLS only (--port 0 --tls-port).
class PrivateRedis {
    constructor(h, port, tls) {
        this.h = h;
        this.port = port;
        this.tls = tls;
        this.url = `${tls ? 'rediss' : 'redis'}://127.0.0.1:${port}/0`;
        this.cli = redisCli(this.url, tls);
        this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-api-redis-'));
        this.proc = null;
    }

    get pid() { return this.proc?.child.pid; }

    listenArgs() {
        const t = this.tls;
        return t ? ['--port', '0', '--tls-port', String(this.port), '--tls-cert-file', t.serverCert,
            '--tls-key-file', t.serverKey, '--tls-ca-cert-file', t.ca,
            '--tls-auth-clients', t.authClients ? 'yes' : 'no'] : ['--port', String(this.port)];
    }

    async start() {
        const args = [...this.listenArgs(), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
            '--dir', this.dir, '--daemonize', 'no'];
        const child = spawn(this.h.env.redisServerBin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        this.proc = track(this.h, child, `redis-server :${this.port}`);
        const ok = await waitFor(async () => this.proc.exited || (await this.cli.ping()), 10000, 50);
        if (ok !== true) {
            throw new Error(`redis-server on ${this.port} did not start:\n${this.proc.log}`);
        }
        return this;
    }

    async stop() {
        if (this.proc) {
            await stopChild(this.proc, 'SIGTERM', STOP_TIMEOUT_MS);
        }
    }
}

// ---------------------------------------------------------------- certificates

// A folder of certificates made with the openssl CLI: ca(name) makes a self-signed CA, leaf(ca,
// name, san, usage) a key and a certificate it signs for subjectAltName san (e.g.
// 'DNS:localhost,IP:127.0.0.1') and extendedKeyUsage usage; f(name) is a file's path in it.
export function certificates(dir) {
    const f = (name) => path.join(dir, name);
    const openssl = async (...args) => runOk('openssl', args);
    return {
        dir,
        f,
        ca: (name) => openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${name}`,
            '-keyout', f(`${name}.key`), '-out', f(`${name}.pem`)),
        leaf: async (ca, name, san, usage) => {
            fs.writeFileSync(f(`${name}.ext`), `subjectAltName=${san}\nextendedKeyUsage=${usage}\n`);
            await openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', f(`${name}.key`),
                '-out', f(`${name}.csr`));
            await openssl('x509', '-req', '-in', f(`${name}.csr`), '-CA', f(`${ca}.pem`), '-CAkey', f(`${ca}.key`),
                '-CAcreateserial', '-days', '2', '-extfile', f(`${name}.ext`), '-out', f(`${name}.pem`));
        },
    };
}

// ---------------------------------------------------------------- a PostgreSQL of the test's own

const PG_START_TIMEOUT_S = 60;

// The PostgreSQL binaries (scripts/test.sh's PG_BIN_DIR) run as TOCSIN_TEST_PG_USER when we are
// root: the server refuses to run as root.
function pgEnv() {
    const { PG_BIN_DIR: bin, TOCSIN_TEST_PG_USER: user } = process.env;
    if (!bin || !user) {
        throw new Error('PG_BIN_DIR and TOCSIN_TEST_PG_USER are needed to run a PostgreSQL of a test');
    }
    return { bin, user };
}

function asPg(tool, args) {
    const { bin, user } = pgEnv();
    return process.getuid() === 0 ? runOk('runuser', ['-u', user, '--', `${bin}/${tool}`, ...args])
        : runOk(`${bin}/${tool}`, args);
}

// A folder the PostgreSQL user owns, for the data directories of a test's servers.
async function pgFolder() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-api-pg-'));
    if (process.getuid() === 0) {
        const uid = Number((await runOk('id', ['-u', pgEnv().user])).stdout.trim());
        const gid = Number((await runOk('id', ['-g', pgEnv().user])).stdout.trim());
        fs.chownSync(dir, uid, gid);
    }
    return dir;
}

// One PostgreSQL server on 127.0.0.1:port with its data in dir, trust authentication for
// loopback (replication included), wal_level replica. settings: extra "name = value" lines,
// rewritten at each start (a standby copied from a primary keeps the primary's otherwise).
class PrivatePostgres {
    constructor(dir, port, settings = []) {
        this.dir = dir;
        this.port = port;
        this.settings = settings;
        this.url = (db = 'postgres') => `postgresql://postgres@127.0.0.1:${port}/${db}`;
    }

    async init() {
        await asPg('initdb', ['-D', this.dir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale',
            '--no-instructions']);
        this.writeFile('pg_hba.conf', 'local all all trust\nhost all all 127.0.0.1/32 trust\n' +
            'host replication all 127.0.0.1/32 trust\n');
        fs.appendFileSync(path.join(this.dir, 'postgresql.conf'), "include_if_exists = 'tocsin.conf'\n");
        return this;
    }

    // A streaming standby of primary (pg_basebackup -R: standby.signal and primary_conninfo).
    async initStandbyOf(primary) {
        await asPg('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', this.dir,
            '-R', '-X', 'stream', '-c', 'fast']);
        return this;
    }

    writeFile(name, text, mode = 0o600) {
        const file = path.join(this.dir, name);
        fs.writeFileSync(file, text, { mode });
        if (process.getuid() === 0) {
            const st = fs.statSync(this.dir);
            fs.chownSync(file, st.uid, st.gid);
        }
        return file;
    }

    writeConf() {
        this.writeFile('tocsin.conf', [`listen_addresses = '127.0.0.1'`, `port = ${this.port}`,
            `unix_socket_directories = '${this.dir}'`, 'logging_collector = off', 'wal_level = replica',
            'max_wal_senders = 4', 'fsync = off', ...this.settings, ''].join('\n'));
    }

    async start() {
        this.writeConf();
        await this.ctl('start', ['-l', path.join(this.dir, 'server.log')]);
        return this;
    }

    // Applies this.settings to the running server (those a reload can change).
    async reload() {
        this.writeConf();
        await asPg('pg_ctl', ['reload', '-D', this.dir]);
    }

    stop() { return this.ctl('stop', ['-m', 'fast']); }

    promote() { return this.ctl('promote', []); }

    async ctl(action, args) {
        try {
            return await asPg('pg_ctl', [action, '-D', this.dir, '-w', '-t', String(PG_START_TIMEOUT_S), ...args]);
        } catch (e) {
            let log;
            try {
                log = fs.readFileSync(path.join(this.dir, 'server.log'), 'utf8').split('\n').slice(-PG_LOG_TAIL_LINES).join('\n');
            } catch (r) {
                log = `(not readable: ${r.message})`;
            }
            throw new Error(`${e.message}\n--- end of its server.log ---\n${log}`);
        }
    }

    // One query on database db; its unaligned, tuples-only output.
    async sql(sql, db = 'postgres') {
        return (await runOk('psql', [this.url(db), '-X', '-v', 'ON_ERROR_STOP=1', '-qAt', '-c', sql])).stdout.trim();
    }

    // Stops the server if it runs (cleanup: a server already stopped is fine).
    async stopIfRunning() {
        if (fs.existsSync(path.join(this.dir, 'postmaster.pid'))) {
            await this.stop().catch(() => {});
        }
    }
}

// ---------------------------------------------------------------- the per-file harness

// Creates the per-file harness: a fresh database named api_<name>_<pid> (dropped in after()),
// child tracking, and cleanup. Call once at the top of a test file with top-level await.
export async function harness(name) {
    const env = requireEnv();
    const h = {
        env,
        children: new Set(),
        dbName: `api_${name.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${process.pid}`,
        serial: 0,
    };
    h.dbUrl = dbUrlWithName(env.dbUrl, h.dbName);
    h.redis = redisCli(env.redisUrl);
    const psql = (sql) => runOk('psql', [env.dbUrl, '-v', 'ON_ERROR_STOP=1', '-qAt', '-c', sql]);
    await psql(`DROP DATABASE IF EXISTS "${h.dbName}" WITH (FORCE)`);
    await psql(`CREATE DATABASE "${h.dbName}"`);
    // Through a pooler in transaction mode (scripts/test.sh's PgBouncer run): the servers connect
    // through it with TOCSIN_DB_POOLED=1 and do not migrate (a session lock cannot live in a
    // pooled connection), so the database is migrated here, directly, first.
    const pooler = process.env.TOCSIN_TEST_POOLER_URL;
    h.pooled = pooler ? {
        TOCSIN_DATABASE_URL: dbUrlWithName(pooler, h.dbName),
        TOCSIN_DB_POOLED: '1',
        TOCSIN_MIGRATE_ON_START: '0',
    } : {};
    if (pooler) {
        await runOk(env.bin, ['migrate'], { env: { PATH: process.env.PATH, TOCSIN_DATABASE_URL: h.dbUrl,
            TOCSIN_LOG_LEVEL: 'warn', ASAN_OPTIONS: process.env.ASAN_OPTIONS ?? '' } });
    }
    // One query on this file's database; its unaligned, tuples-only output.
    h.sql = async (sql) => (await runOk('psql', [h.dbUrl, '-v', 'ON_ERROR_STOP=1', '-qAt', '-c', sql])).stdout.trim();
    // A second connection to this file's database that stays open between statements (a psql
    // child), for holding a lock while the server works: query(sql) runs sql and resolves with
    // its unaligned output once psql has finished it; close() ends the session (and so its
    // transaction).
    h.session = () => {
        const child = spawn('psql', [h.dbUrl, '-X', '-qAt', '-v', 'ON_ERROR_STOP=1'],
            { stdio: ['pipe', 'pipe', 'pipe'] });
        const c = track(h, child, 'psql session');
        let out = '';
        let serial = 0;
        child.stdout.on('data', (d) => { out += d.toString(); });
        const query = async (sql, timeoutMs = 10000) => {
            const mark = `--tocsin-session-${++serial}--`;
            const from = out.length;
            // psql runs a statement at its semicolon; a backslash command runs at once.
            child.stdin.write(`${sql.replace(/;?\s*$/, ';')}\n\\echo ${mark}\n`);
            const ok = await waitFor(() => c.exited || out.indexOf(mark, from) >= 0, timeoutMs, 10);
            if (ok !== true) {
                throw new Error(`psql session: no answer to ${sql}: ${c.log}`);
            }
            return out.slice(from, out.indexOf(mark, from)).trim();
        };
        const close = async () => {
            child.stdin.end();
            await c.exit;
        };
        return { query, close };
    };
    // Restarts, stops or starts the shared PostgreSQL (scripts/test.sh says where its data and
    // binaries are); each waits until the server is up or down. A test that stops it starts it
    // again before it ends.
    const pgCtl = async (action) => {
        const { PG_BIN_DIR: bin, TOCSIN_TEST_PG_DATA: data, TOCSIN_TEST_PG_USER: user } = process.env;
        if (!bin || !data || !user) {
            throw new Error(`PG_BIN_DIR, TOCSIN_TEST_PG_DATA and TOCSIN_TEST_PG_USER are needed to ${action} PostgreSQL`);
        }
        const args = [`${bin}/pg_ctl`, action, '-D', data, '-m', 'fast', '-w', '-t', '60', '-l', `${data}/server.log`];
        try {
            return await (process.getuid() === 0 ? runOk('runuser', ['-u', user, '--', ...args]) : runOk(args[0], args.slice(1)));
        } catch (e) {
            // pg_ctl only says "examine the log output": the failure message carries its end.
            let log;
            try {
                log = fs.readFileSync(`${data}/server.log`, 'utf8').split('\n').slice(-PG_LOG_TAIL_LINES).join('\n');
            } catch (r) {
                log = `(not readable: ${r.message})`;
            }
            throw new Error(`${e.message}\n--- end of ${data}/server.log ---\n${log}`);
        }
    };
    h.restartPostgres = () => pgCtl('restart');
    h.proxies = [];
    h.postgresProxy = async () => {
        const p = await postgresProxy(h.dbUrl);
        h.proxies.push(p);
        return p;
    };
    h.stopPostgres = () => pgCtl('stop');
    h.startPostgres = () => pgCtl('start');

    // Environment for a server: the caller's extras win. Prefix unique per server.
    h.serverEnv = (extra = {}) => {
        h.serial += 1;
        return {
            PATH: process.env.PATH,
            HOME: process.env.HOME ?? '/tmp',
            LANG: 'C',
            TOCSIN_DATABASE_URL: h.dbUrl,
            TOCSIN_REDIS_URL: env.redisUrl,
            ...(sharedRedisTls() ? { TOCSIN_REDIS_TLS_CA: sharedRedisTls().ca } : {}),
            TOCSIN_REDIS_PREFIX: `t${process.pid}_${h.serial}_${Math.random().toString(36).slice(2, 8)}`,
            TOCSIN_LOG_LEVEL: 'warn',
            // A test that names its own database (start-up tests) does not go through the pooler.
            ...(extra.TOCSIN_DATABASE_URL ? {} : h.pooled),
            ...extra,
        };
    };
    // A server not started yet (for tests that watch its start-up); start() it.
    h.newServer = async (extra = {}) => {
        const port = await freePort();
        const s = new Server(h, h.serverEnv({ TOCSIN_HTTP_ADDR: `127.0.0.1:${port}`, ...extra }), port);
        h.servers.push(s);
        return s;
    };
    h.startServer = async (extra = {}) => (await h.newServer(extra)).start();
    h.servers = [];
    // A private Redis: TLS when asked (tls as for PrivateRedis), or when the shared one is.
    h.startRedis = async (tls = sharedRedisTls()) => {
        const r = new PrivateRedis(h, await freePort(), tls);
        h.redises.push(r);
        return r.start();
    };
    h.redises = [];
    // A PostgreSQL of the test's own (initdb'd, not started: start() it), on a free port, with
    // extra settings; stopped and removed in cleanup. standbyOf: a streaming standby of that one.
    h.newPostgres = async ({ settings = [], standbyOf = null } = {}) => {
        h.pgFolder ??= await pgFolder();
        const pg = new PrivatePostgres(path.join(h.pgFolder, `pg${h.postgreses.length}`), await freePort(), settings);
        h.postgreses.push(pg);
        return standbyOf ? pg.initStandbyOf(standbyOf) : pg.init();
    };
    h.postgreses = [];
    h.cleanup = async () => {
        for (const c of [...h.children]) {
            c.child.kill('SIGKILL');
            await c.exit;
        }
        for (const p of h.proxies) {
            await p.close();
        }
        for (const r of h.redises) {
            fs.rmSync(r.dir, { recursive: true, force: true });
        }
        for (const pg of h.postgreses) {
            await pg.stopIfRunning();
        }
        if (h.pgFolder) {
            fs.rmSync(h.pgFolder, { recursive: true, force: true });
        }
        await psql(`DROP DATABASE IF EXISTS "${h.dbName}" WITH (FORCE)`);
    };
    after(async () => {
        // A failing test is easier to read with the server's own words next to it.
        if (process.env.TOCSIN_TEST_VERBOSE) {
            for (const s of h.servers) {
                process.stderr.write(`--- ${s.base} output ---\n${s.log}\n`);
            }
        }
        await h.cleanup();
    });
    return h;
}

// ---------------------------------------------------------------- small test data helpers

// An RFC 3339 UTC instant rounded down to the minute, offset from now.
export function isoIn(ms) {
    const t = Math.floor((Date.now() + ms) / 60000) * 60000;
    return new Date(t).toISOString();
}

// The API's output form of an instant: UTC with milliseconds.
export const utc = (msOrIso) => new Date(typeof msOrIso === 'number' ? msOrIso : Date.parse(msOrIso)).toISOString();

export const MIN = 60 * 1000;
export const HOUR = 60 * MIN;
export const DAY = 24 * HOUR;
