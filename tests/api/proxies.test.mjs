// proxies.test.mjs -- TOCSIN_TRUSTED_PROXIES on loopback: connections from 127.0.0.2 play the
// trusted load balancer, those from 127.0.0.3 an untrusted client (Linux routes all of 127/8 to
// lo). Through the trusted peer, X-Forwarded-For names the client and each client is held to
// TOCSIN_HTTP_CONNECTIONS_PER_ADDR requests in flight (429 too_many_connections past it, others
// unaffected), what a client wrote to the left of the proxy's address is not read, and an
// unreadable header counts as the proxy's own; from the untrusted peer the header changes nothing
// (its connections are counted and cut as its own). No header makes a 5xx.
import { before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { harness, test, sleep, waitFor } from './harness.mjs';
import { openLive, openStream, closeAll, mintToken, metric } from './sse.mjs';

const h = await harness('proxies');
const PER_ADDR = 4;
const PROXY = '127.0.0.2';
const STRANGER = '127.0.0.3';
const CLIENT_A = '203.0.113.7';
const CLIENT_B = '203.0.113.8';
const CLOSE_WAIT_MS = 5000; // until a closed stream's place is given back (the hub looks every
                            // second), on a busy machine
const SETTLE_MS = 200;      // from the hub's close to the request's end, where the place comes back
const MALFORMED = ['junk', '', ' ', 'unknown', '203.0.113.9:4711', '[2001:db8::1]', '203.0.113.9,',
    '203.0.113.9 203.0.113.10', '1.2.3', `${'9'.repeat(300)}`, '203.0.113.9, junk'];
let srv;
let token;

before(async () => {
    srv = await h.startServer({
        TOCSIN_TRUSTED_PROXIES: `${PROXY}/32, fd00::/8`,
        TOCSIN_HTTP_CONNECTIONS_PER_ADDR: String(PER_ADDR),
        TOCSIN_STREAMS_PER_PARTICIPANT: '100',
        TOCSIN_STREAM_HEARTBEAT_MS: '500',
    });
    const key = await srv.createKey('proxies');
    token = (await mintToken(srv, key, { sub: 'u1', ttl_s: 600 })).token;
});

// Every stream closed and its place given back, so that each test starts from empty bounds.
afterEach(async () => {
    closeAll();
    const open = await waitFor(async () => await metric(srv, 'tocsin_streams_open') === 0, CLOSE_WAIT_MS, 100);
    assert.ok(open, 'streams still open after the test');
    await sleep(SETTLE_MS);
});

after(async () => {
    await srv.stop();
});

// A stream from localAddress with X-Forwarded-For xff (an array: one header line each; null:
// none).
function stream(localAddress, xff) {
    const headers = xff === null ? {} : { 'X-Forwarded-For': xff };
    return openStream(srv.base, { token, localAddress, headers });
}

// A live stream from localAddress with X-Forwarded-For xff.
function live(localAddress, xff) {
    return openLive(srv.base, { token, localAddress, headers: { 'X-Forwarded-For': xff } });
}

// PER_ADDR live streams from localAddress, the i-th with X-Forwarded-For xffOf(i).
async function fill(localAddress, xffOf) {
    const held = [];
    for (let i = 0; i < PER_ADDR; i++) {
        held.push(await live(localAddress, xffOf(i)));
    }
    return held;
}

// A refusal that must be 429 too_many_connections with Retry-After.
async function mustBeBusy(localAddress, xff, what) {
    const s = await stream(localAddress, xff);
    if (s.status === 200) {
        s.close();
        assert.fail(`${what}: the stream opened`);
    }
    await s.ended;
    assert.equal(s.status, 429, `${what}: ${s.body}`);
    assert.equal(s.json.code, 'too_many_connections', what);
    assert.ok(Number(s.headers['retry-after']) > 0, `${what}: Retry-After`);
}

test('through a trusted proxy each client named in X-Forwarded-For has its own per-address bound', async () => {
    const refused0 = await metric(srv, 'tocsin_http_connections_refused_total');
    const held = await fill(PROXY, () => CLIENT_A);
    await mustBeBusy(PROXY, CLIENT_A, `client ${CLIENT_A} past ${PER_ADDR}`);
    // What a client wrote itself is left of the proxy's address: the proxy's word stands.
    await mustBeBusy(PROXY, `${CLIENT_B}, ${CLIENT_A}`, 'a client naming another before the proxy did');
    await mustBeBusy(PROXY, [CLIENT_B, CLIENT_A], 'the same over two header lines');
    // Another client behind the same proxy, and the proxy's hops walked over, are served.
    const b = await live(PROXY, CLIENT_B);
    const c = await live(PROXY, '203.0.113.9, fd00::1');
    assert.equal(await metric(srv, 'tocsin_http_connections_refused_total') - refused0, 3, 'the refusals are counted');
    // A stream that ends gives its client's place back.
    held[0].close();
    const again = await waitFor(async () => {
        const s = await stream(PROXY, CLIENT_A);
        s.close();
        return s.status === 200;
    }, CLOSE_WAIT_MS, 100);
    assert.ok(again, `${CLIENT_A} got no place back within ${CLOSE_WAIT_MS} ms of closing a stream`);
});

test('an untrusted peer is counted by its own address, whatever X-Forwarded-For it sends', async () => {
    await fill(STRANGER, (i) => `198.51.100.${i + 1}`);
    // The next connection is closed by the acceptor before any byte is read: no answer at all.
    const cut = await new Promise((resolve) => {
        const s = net.connect({ port: srv.port, host: '127.0.0.1', localAddress: STRANGER });
        let data = '';
        s.on('data', (d) => { data += d; });
        s.on('connect', () => s.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: ${CLIENT_B}\r\n\r\n`));
        s.on('error', () => {});
        s.on('close', () => resolve(data));
        setTimeout(() => { s.destroy(); resolve('still open'); }, CLOSE_WAIT_MS);
    });
    assert.equal(cut, '', 'the stranger\'s connection past its bound was answered');
    // Its header named nobody: the trusted proxy's clients are untouched by it.
    await live(PROXY, '198.51.100.1');
});

test('an unreadable X-Forwarded-For from a trusted proxy counts as the proxy\'s own request', async () => {
    await fill(PROXY, (i) => MALFORMED[i]);
    for (const bad of [...MALFORMED.slice(PER_ADDR), null]) {
        await mustBeBusy(PROXY, bad, `X-Forwarded-For ${JSON.stringify(bad)}, counted as the proxy's`);
    }
    // A readable header still names its client.
    await live(PROXY, CLIENT_A);
});

// Header shapes sent raw from the trusted peer: each is answered, and none with a 5xx.
test('no X-Forwarded-For shape makes a 5xx', async () => {
    const shapes = [
        ...MALFORMED.map((v) => [`X-Forwarded-For: ${v}`]),
        Array.from({ length: 12 }, (_, i) => `X-Forwarded-For: 10.0.0.${i}`),
        [`X-Forwarded-For: ${Array.from({ length: 40 }, () => 'fd00::1').join(', ')}`],
        [`X-Forwarded-For: ${'203.0.113.9, '.repeat(600)}203.0.113.9`],
        ['x-forwarded-for: 203.0.113.9', 'X-FORWARDED-FOR: fd00::2'],
        ['X-Forwarded-For: \t203.0.113.9\t'],
    ];
    for (const lines of shapes) {
        const reply = await new Promise((resolve) => {
            const s = net.connect({ port: srv.port, host: '127.0.0.1', localAddress: PROXY });
            let data = '';
            s.on('data', (d) => { data += d; });
            s.on('connect', () => s.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n${lines.join('\r\n')}\r\nConnection: close\r\n\r\n`));
            s.on('error', () => {});
            s.on('close', () => resolve(data));
        });
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1]);
        assert.ok(status >= 200 && status < 500, `${lines[0].slice(0, 60)}... (${lines.length} lines): ${reply.slice(0, 80)}`);
    }
});
