// limits.test.mjs -- connections and deadlines on loopback, bounded in count and time: one address
// cannot take every connection (TOCSIN_HTTP_CONNECTIONS_PER_ADDR), other addresses keep room, and
// a client that trickles its request head or body is cut at TOCSIN_HTTP_HEADER_TIMEOUT_S /
// TOCSIN_HTTP_BODY_TIMEOUT_S however steadily it sends (MHD's own timeout only measures silence).
// The flood comes from 127.0.0.3 (fetch's own keep-alive connections are from 127.0.0.1), the
// other client from 127.0.0.2: Linux routes all of 127/8 to lo.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { harness, test, sleep } from './harness.mjs';
import { metric, mintToken } from './sse.mjs';

const h = await harness('limits');
const PER_ADDR = 8;
const FLOODER = '127.0.0.3';
const FLOOD = 200;
const HEAD_S = 1;
const BODY_S = 2;
const TICK_SLACK_MS = 1000; // the deadline thread's tick (250 ms) plus scheduling on a busy machine
const HTTP_THREADS = 16;    // TOCSIN_HTTP_THREADS's default, which the servers here run with
const SEQUENTIAL = 200;     // connections opened one after another to count wake-ups
const TOTAL = 16 + 1;       // TOCSIN_HTTP_CONNECTIONS_MAX's least, plus one stream
let key;
let srv;  // per-address limit, default deadlines
let slow; // short deadlines
let full; // the smallest total bound
const socks = new Set();

before(async () => {
    srv = await h.startServer({ TOCSIN_HTTP_CONNECTIONS_PER_ADDR: String(PER_ADDR) });
    slow = await h.startServer({
        TOCSIN_HTTP_HEADER_TIMEOUT_S: String(HEAD_S),
        TOCSIN_HTTP_BODY_TIMEOUT_S: String(BODY_S),
    });
    full = await h.startServer({
        TOCSIN_HTTP_CONNECTIONS_MAX: '16', TOCSIN_STREAMS_MAX: '1', TOCSIN_HTTP_CONNECTIONS_PER_ADDR: '100',
    });
    key = await srv.createKey('limits');
});

after(() => {
    for (const s of socks) {
        s.destroy();
    }
});

// A connection from localAddress with its received bytes and close time (ms after open).
function open(port, localAddress = '127.0.0.1') {
    return new Promise((resolve) => {
        const t0 = Date.now();
        const s = net.connect({ port, host: '127.0.0.1', localAddress });
        const c = { s, t0, data: '', closedAt: null };
        socks.add(s);
        s.on('data', (d) => { c.data += d.toString('latin1'); });
        s.on('error', () => {});
        s.on('close', () => {
            c.closedAt = Date.now() - t0;
            socks.delete(s);
        });
        s.on('connect', () => resolve(c));
        s.on('close', () => resolve(c));
    });
}

const HEALTHZ = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

// Sends one keep-alive GET /healthz on c and waits for its 200 (or the close).
async function healthz(c, timeoutMs = 2000) {
    const from = c.data.length;
    c.s.write(HEALTHZ);
    const end = Date.now() + timeoutMs;
    while (Date.now() < end && c.closedAt === null && !/\{"status":"ok"\}/.test(c.data.slice(from))) {
        await sleep(10);
    }
    return /^HTTP\/1\.1 200 /.test(c.data.slice(from));
}

async function closedWithin(c, ms) {
    const end = Date.now() + ms;
    while (c.closedAt === null && Date.now() < end) {
        await sleep(20);
    }
    return c.closedAt !== null;
}

test('one address holds at most TOCSIN_HTTP_CONNECTIONS_PER_ADDR connections; others keep room', async () => {
    const held = [];
    for (let i = 0; i < PER_ADDR; i++) {
        const c = await open(srv.port, FLOODER);
        assert.ok(await healthz(c), `keep-alive connection ${i} answered`);
        held.push(c);
    }
    // A flood from the same address: every extra connection is closed at once, unanswered.
    const t0 = Date.now();
    const flood = await Promise.all(Array.from({ length: FLOOD }, () => open(srv.port, FLOODER)));
    for (const c of flood) {
        if (c.closedAt === null) {
            c.s.write(HEALTHZ);
        }
    }
    const allClosed = await Promise.all(flood.map((c) => closedWithin(c, 2000)));
    assert.equal(allClosed.filter(Boolean).length, FLOOD, 'every connection past the limit is closed');
    assert.ok(flood.every((c) => !/HTTP\/1\.1 200/.test(c.data)), 'none of them was served');
    assert.ok(Date.now() - t0 < 3000, `the flood was turned away in ${Date.now() - t0} ms`);

    // Another address is served at once, and the connections held are still alive.
    const t1 = Date.now();
    const other = await open(srv.port, '127.0.0.2');
    assert.ok(await healthz(other, 1000), 'a client from 127.0.0.2 is answered');
    assert.ok(Date.now() - t1 < 1000, `in ${Date.now() - t1} ms`);
    for (const c of held) {
        assert.ok(await healthz(c), 'a connection within the limit still works');
    }
    // Closing one of them makes room for the same address again.
    held[0].s.destroy();
    await sleep(200);
    const again = await open(srv.port, FLOODER);
    assert.ok(await healthz(again), 'a freed slot serves the address again');
    for (const c of [...held, other, again]) {
        c.s.destroy();
    }
});

// The nice value of each thread of process pid (/proc/<pid>/task/*/stat, field 19).
function niceOfThreads(pid) {
    const out = [];
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
        try {
            const st = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'latin1');
            out.push(Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[16]));
        } catch {
            // a thread that ended meanwhile
        }
    }
    return out;
}

const STREAM_NICE = 5;          // http_server.c: the stream pool's threads run this much lower
const STREAM_THREADS = 16 / 4;  // and there are a quarter of TOCSIN_HTTP_THREADS of them

// Streams go to a pool of their own at a lower priority (http_listen.h), and the per-address bound
// is one over both pools: libmicrohttpd's own would count each pool apart, twice the bound.
test('streams are served by the lower-priority pool, and one address bound counts streams and API connections together', async () => {
    const nices = niceOfThreads(srv.pid);
    assert.equal(nices.filter((n) => n === STREAM_NICE).length, STREAM_THREADS, `thread nice values: ${nices}`);
    const tok = (await mintToken(srv, key, { sub: 'pools' })).token;
    const routed0 = await metric(srv, 'tocsin_http_stream_pool_connections_total');
    const refused0 = await metric(srv, 'tocsin_http_connections_refused_total');
    const streams = [];
    for (let i = 0; i < PER_ADDR / 2; i++) {
        const c = await open(srv.port, FLOODER);
        c.s.write(`GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${tok}\r\n\r\n`);
        const end = Date.now() + 5000;
        while (!/event: hello/.test(c.data) && c.closedAt === null && Date.now() < end) {
            await sleep(10);
        }
        assert.match(c.data, /^HTTP\/1\.1 200 [^]*event: hello/, `stream ${i} opened`);
        streams.push(c);
    }
    assert.equal(await metric(srv, 'tocsin_http_stream_pool_connections_total') - routed0, PER_ADDR / 2,
        'each stream went to the stream pool');
    const api = [];
    for (let i = 0; i < PER_ADDR / 2; i++) {
        const c = await open(srv.port, FLOODER);
        assert.ok(await healthz(c), `API connection ${i} answered`);
        api.push(c);
    }
    // The bound is full with half streams, half API connections: one more of either kind is closed.
    const extra = await open(srv.port, FLOODER);
    assert.ok(await closedWithin(extra, 2000), 'a connection past the bound was closed');
    assert.ok(!/HTTP\/1\.1 200/.test(extra.data), 'and not served');
    assert.equal(await metric(srv, 'tocsin_http_connections_refused_total') - refused0, 1, 'counted as refused');
    // A stream closed gives its place back, to either kind.
    streams[0].s.destroy();
    await closedWithin(streams[0], 1000);
    let again = null;
    const end = Date.now() + 5000;
    while (Date.now() < end) { // the server learns of the close when its thread reads it
        again = await open(srv.port, FLOODER);
        if (await healthz(again, 1000)) {
            break;
        }
        again.s.destroy();
        again = null;
        await sleep(100);
    }
    assert.ok(again !== null, 'the closed stream\'s place served an API connection');
    for (const c of [...streams, ...api, again]) {
        c.s.destroy();
    }
});

// Voluntary context switches (a thread going to sleep: a woken HTTP thread that finds nothing to
// do does) of every thread of process pid so far (/proc/<pid>/task/*/status); the involuntary
// ones depend on how busy the machine is.
function switches(pid) {
    let n = 0;
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
        try {
            const st = fs.readFileSync(`/proc/${pid}/task/${tid}/status`, 'latin1');
            n += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(st)[1]);
        } catch {
            // a thread that ended meanwhile
        }
    }
    return n;
}

// libmicrohttpd accepting by itself had every HTTP thread poll the listening socket: each new
// connection woke all 16, and all but one went back to sleep (13 switches a connection in a
// reconnect storm). The acceptor hands each to one thread (http_listen.c).
test('a new connection wakes one HTTP thread, not the whole pool', async () => {
    const idle0 = switches(srv.pid);
    await sleep(1000);
    const idlePerMs = (switches(srv.pid) - idle0) / 1000; // the other threads' own rounds
    const t0 = Date.now();
    const s0 = switches(srv.pid);
    for (let i = 0; i < SEQUENTIAL; i++) {
        const c = await open(srv.port, '127.0.0.4');
        assert.ok(await healthz(c), `connection ${i} answered`);
        c.s.destroy();
        assert.ok(await closedWithin(c, 1000), `connection ${i} closed`);
    }
    const perConnection = (switches(srv.pid) - s0 - idlePerMs * (Date.now() - t0)) / SEQUENTIAL;
    console.log(`${perConnection.toFixed(1)} voluntary context switches a connection`);
    assert.ok(perConnection < HTTP_THREADS / 2,
        `${perConnection.toFixed(1)} context switches a connection with ${HTTP_THREADS} HTTP threads`);
});

test('at its connection bound a replica leaves new connections waiting, one or a burst, and serves them as others close', async () => {
    // The harness's own keep-alive connections (from 127.0.0.1) may hold a place or two.
    const held = [];
    let waiting = null;
    for (let i = 0; i <= TOTAL && waiting === null; i++) {
        const c = await open(full.port, '127.0.0.5');
        if (await healthz(c, 1000)) {
            held.push(c);
        } else {
            waiting = c; // the kernel's backlog took it
        }
    }
    assert.ok(waiting !== null, `${held.length} connections served: the bound of ${TOTAL} was not kept`);
    assert.ok(held.length >= TOTAL - 3, `only ${held.length} of ${TOTAL} served before the bound`);
    assert.equal(waiting.closedAt, null, 'the connection past the bound waits: not closed');
    held[0].s.destroy();
    assert.ok(await healthz(waiting, 3000), 'served once a connection closed');
    for (const c of [...held, waiting]) {
        c.s.destroy();
    }
    await sleep(200);

    // A burst past the bound: those over it wait too, none is closed unanswered (a connection
    // handed to an HTTP thread counts before that thread has started it).
    const burst = await Promise.all(Array.from({ length: 2 * TOTAL }, () => open(full.port, '127.0.0.6')));
    for (const c of burst) {
        c.s.write(HEALTHZ);
    }
    await sleep(1000);
    const served = burst.filter((c) => /^HTTP\/1\.1 200 /.test(c.data));
    assert.equal(burst.filter((c) => c.closedAt !== null).length, 0, 'no connection of the burst was closed');
    assert.ok(served.length <= TOTAL && served.length >= TOTAL - 3, `${served.length} of ${2 * TOTAL} served at once`);
    for (const c of served) {
        c.s.destroy();
    }
    // Each one served is closed in turn, making room for the next.
    const rest = burst.filter((c) => !served.includes(c));
    const answered = (c) => /^HTTP\/1\.1 200 /.test(c.data);
    const end = Date.now() + 5000;
    while (Date.now() < end && !rest.every(answered)) {
        for (const c of rest.filter(answered)) {
            c.s.destroy();
        }
        await sleep(20);
    }
    assert.equal(rest.filter(answered).length, rest.length, 'the rest served as others closed');
    assert.equal(rest.filter((c) => !answered(c) && c.closedAt !== null).length, 0, 'none of the rest closed unanswered');
    for (const c of rest) {
        c.s.destroy();
    }
});

test('a request head trickled a byte at a time is cut at TOCSIN_HTTP_HEADER_TIMEOUT_S', async () => {
    const c = await open(slow.port);
    const head = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + 'a'.repeat(200);
    let i = 0;
    const trickle = setInterval(() => {
        if (c.closedAt === null && i < head.length) {
            c.s.write(head[i++]);
        }
    }, 100);
    try {
        assert.ok(await closedWithin(c, HEAD_S * 1000 + TICK_SLACK_MS), `open after ${Date.now() - c.t0} ms`);
        assert.ok(c.closedAt >= HEAD_S * 1000 - 50, `not before the deadline (${c.closedAt} ms)`);
        assert.ok(i > 5, 'the client was sending all along');
    } finally {
        clearInterval(trickle);
    }
    // Silence is cut the same way, and so is an idle keep-alive connection after its response.
    const idle = await open(slow.port);
    assert.ok(await closedWithin(idle, HEAD_S * 1000 + TICK_SLACK_MS), 'a silent connection is cut');
    const kept = await open(slow.port);
    assert.ok(await healthz(kept), 'served');
    const served = Date.now();
    assert.ok(await closedWithin(kept, HEAD_S * 1000 + TICK_SLACK_MS), 'an idle keep-alive connection is cut');
    assert.ok(Date.now() - served >= HEAD_S * 1000 - 300, 'counted from its response');
});

test('a request body trickled a byte at a time is cut at TOCSIN_HTTP_BODY_TIMEOUT_S', async () => {
    const k = await slow.createKey('limits-slow');
    const body = JSON.stringify({ title: 'slow', starts_at: new Date(Date.now() + 86400000).toISOString() });
    const c = await open(slow.port);
    c.s.write(`POST /v1/meetings HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${k}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    const headAt = Date.now();
    let i = 0;
    const trickle = setInterval(() => {
        if (c.closedAt === null && i < body.length - 1) {
            c.s.write(body[i++]);
        }
    }, 100);
    try {
        assert.ok(await closedWithin(c, BODY_S * 1000 + TICK_SLACK_MS), `open after ${Date.now() - headAt} ms`);
        assert.ok(Date.now() - headAt >= BODY_S * 1000 - 300, 'not before the body deadline');
        assert.ok(!/HTTP\/1\.1 201/.test(c.data), 'nothing was created');
    } finally {
        clearInterval(trickle);
    }
    // A body that arrives within the deadline, in pieces, is served.
    const ok = await open(slow.port);
    ok.s.write(`POST /v1/meetings HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${k}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    for (let j = 0; j < body.length; j += 16) {
        ok.s.write(body.slice(j, j + 16));
        await sleep(10);
    }
    const end = Date.now() + 3000;
    while (!/HTTP\/1\.1 201/.test(ok.data) && Date.now() < end) {
        await sleep(20);
    }
    assert.match(ok.data, /^HTTP\/1\.1 201 /, 'a body sent in pieces within the deadline is served');
    ok.s.destroy();
    const list = await slow.req('GET', '/v1/meetings', { key: k });
    assert.equal(list.json.items.length, 1, 'only the complete request created a meeting');
});

test('deadlines and limits leave the servers healthy', async () => {
    for (const s of [srv, slow, full]) {
        const r = await s.req('GET', '/healthz');
        assert.equal(r.status, 200);
        assert.equal(s.proc.exited, null);
    }
    const p = await srv.req('POST', '/v1/meetings', { key, json: { title: 'after', starts_at: new Date(Date.now() + 86400000).toISOString() } });
    assert.equal(p.status, 201, p.text);
});
