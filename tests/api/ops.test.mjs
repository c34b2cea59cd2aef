// ops.test.mjs -- what an operator relies on, against real servers: request ids (kept, made,
// echoed on every kind of reply), traceparent in the logs, access lines in text and JSON (probes at
// debug, route patterns, lines logged while handling a request carry its id), log forging through
// paths, headers and request ids in both formats, /metrics checked by Prometheus's own promtool
// after traffic, webhook targets under TOCSIN_WEBHOOK_ALLOW_NETS (registration, delivery with a
// traceparent stable per delivery, a target no longer allowed failing with a recorded error and a
// rate-limited warning), DELETE with If-Match, query errors that name the parameter, retention
// purging 60,000 old rows while writes go on, and the PostgreSQL connections of one replica.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import {
    harness, test, freePort, rawRequest, sleep, waitFor, isoIn, sharedRedisTls, MIN, HOUR,
} from './harness.mjs';
import { closeAll, mintToken, openLive } from './sse.mjs';
import { findPromtool } from './promql.mjs';

const h = await harness('ops');
const LEAD_MS = 1500;
const BOUND_MS = 20000;
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TEXT_LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (ERROR|WARN|INFO|DEBUG) /;

// Each line of a JSON log, parsed; a line that is not one JSON object fails the test.
function jsonLines(log) {
    return log.split('\n').filter((l) => l !== '').map((l) => {
        let v;
        assert.doesNotThrow(() => { v = JSON.parse(l); }, `not JSON: ${JSON.stringify(l)}`);
        assert.equal(typeof v, 'object', l);
        assert.equal(typeof v.ts, 'string', l);
        assert.match(v.level, /^(error|warn|info|debug)$/, l);
        assert.equal(typeof v.msg, 'string', l);
        assert.ok(!/[^\x20-\x7e]/.test(l), `a JSON line with bytes outside printable ASCII: ${JSON.stringify(l)}`);
        return v;
    });
}

function textLines(log) {
    const lines = log.split('\n').filter((l) => l !== '');
    for (const l of lines) {
        assert.match(l, TEXT_LINE, `not a log line: ${JSON.stringify(l)}`);
        assert.ok(!/[^\x20-\x7e]/.test(l), `raw control or non-ASCII bytes in ${JSON.stringify(l)}`);
    }
    return lines;
}

// GET /v1/stream with node:http; resolves once the head is in. close() ends it.
function openStream(srv, path, headers) {
    return new Promise((resolve, reject) => {
        const req = http.get(`${srv.base}${path}`, { headers }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d) => { text += d; });
            res.on('error', () => {});
            resolve({
                status: res.statusCode,
                headers: res.headers,
                text: () => text,
                until: (pred, ms = 10000) => waitFor(() => pred(text), ms, 20),
                close: () => req.destroy(),
            });
        });
        req.on('error', (e) => (e.code === 'ECONNRESET' ? null : reject(e)));
    });
}

async function token(srv, key, sub = 'u1') {
    const r = await srv.req('POST', '/v1/browser-tokens', { key, json: { sub, scope: 'notifications meetings:read' } });
    assert.equal(r.status, 201, r.text);
    return r.json.token;
}

async function createMeeting(srv, key, extra = {}, headers = {}) {
    const r = await srv.req('POST', '/v1/meetings', {
        key, headers, json: { title: 'ops', starts_at: isoIn(2 * HOUR), participants: [{ id: 'u1' }], ...extra },
    });
    assert.equal(r.status, 201, r.text);
    return r;
}

// ---------------------------------------------------------------- request ids

test('X-Request-Id: a safe one is kept, anything else replaced by a made one, on every kind of reply', async () => {
    const srv = await h.startServer({ TOCSIN_CORS_ORIGINS: 'https://app.test' });
    const key = await srv.createKey('ids');
    const made = /^[0-9a-f]{32}$/;

    const ok = await srv.req('GET', '/v1/meetings', { key, headers: { 'X-Request-Id': 'abc-123_x.y:z/1+2=3@h' } });
    assert.equal(ok.header('X-Request-Id'), 'abc-123_x.y:z/1+2=3@h');
    const none = await srv.req('GET', '/healthz');
    assert.match(none.header('X-Request-Id'), made);
    const other = await srv.req('GET', '/healthz');
    assert.notEqual(other.header('X-Request-Id'), none.header('X-Request-Id'), 'a new id per request');
    for (const bad of ['', 'has space', 'semi;colon', 'quote"', 'x'.repeat(129), 'caf\u00e9']) {
        const r = await srv.req('GET', '/healthz', { headers: { 'X-Request-Id': bad } });
        assert.match(r.header('X-Request-Id'), made, `${JSON.stringify(bad)} replaced`);
    }
    assert.equal((await srv.req('GET', '/healthz', { headers: { 'X-Request-Id': 'x'.repeat(128) } }))
        .header('X-Request-Id'), 'x'.repeat(128), '128 bytes: kept');
    // A control byte fetch would refuse to send: raw bytes. libmicrohttpd or tocsin refuses the
    // request (a control byte in a field value), and the reply still names a request.
    const raw = await rawRequest(srv.port, Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\x1bb\r\nConnection: close\r\n\r\n', 'latin1'));
    assert.equal(raw.status, 400);

    // problem+json, 304, 201 with Location, 204 preflight and a stream.
    const problem = await srv.req('GET', '/v1/nope', { key, headers: { 'X-Request-Id': 'p-1' } });
    assert.equal(problem.status, 404);
    assert.equal(problem.header('X-Request-Id'), 'p-1');
    const created = await createMeeting(srv, key, {}, { 'X-Request-Id': 'c-1' });
    assert.equal(created.header('X-Request-Id'), 'c-1');
    const etag = created.header('ETag');
    const nm = await srv.req('GET', created.header('Location'), { key, headers: { 'If-None-Match': etag, 'X-Request-Id': 'n-1' } });
    assert.equal(nm.status, 304);
    assert.equal(nm.header('X-Request-Id'), 'n-1');
    const pre = await srv.req('OPTIONS', '/v1/meetings', {
        headers: { Origin: 'https://app.test', 'Access-Control-Request-Method': 'POST', 'X-Request-Id': 'o-1' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.header('X-Request-Id'), 'o-1');
    const tok = await token(srv, key);
    const s = await openStream(srv, '/v1/stream', { Authorization: `Bearer ${tok}`, 'X-Request-Id': 's-1' });
    try {
        assert.equal(s.status, 200);
        assert.equal(s.headers['x-request-id'], 's-1');
    } finally {
        s.close();
    }
    await srv.stop();
});

// ---------------------------------------------------------------- logs

test('JSON logs: one object per line; access lines with route, request and trace ids; probes at debug; lines logged while handling carry the id', async () => {
    // Redis on a port nobody listens on: the mirror write of a POST fails and is logged inside
    // the request. rediss:// in the TLS run, where every server is given the suite's CA.
    const dead = `${sharedRedisTls() ? 'rediss' : 'redis'}://127.0.0.1:${await freePort()}/0`;
    const srv = await h.startServer({ TOCSIN_LOG_FORMAT: 'json', TOCSIN_LOG_LEVEL: 'debug', TOCSIN_REDIS_URL: dead });
    const key = await srv.createKey('jsonlogs');
    const created = await createMeeting(srv, key, {}, { 'X-Request-Id': 'create-1', traceparent: TRACEPARENT });
    const id = created.json.id;
    const patched = await srv.req('PATCH', `/v1/meetings/${id}`, {
        key, json: { title: 'moved' }, headers: { 'X-Request-Id': 'patch-1', traceparent: 'not-a-traceparent' },
    });
    assert.equal(patched.status, 200, patched.text);
    await srv.req('GET', '/healthz', { headers: { 'X-Request-Id': 'probe-1' } });
    await srv.req('GET', '/metrics', { validate: false, headers: { 'X-Request-Id': 'probe-2' } });
    await srv.req('GET', '/v1/meetings/not-a-uuid', { key, headers: { 'X-Request-Id': 'miss-1' } });
    await srv.stop();
    const lines = jsonLines(srv.log);

    const access = (rid) => lines.find((l) => l.request_id === rid && l.msg.startsWith('http '));
    const c = access('create-1');
    assert.ok(c, `access line of the create:\n${srv.log}`);
    assert.equal(c.level, 'info');
    assert.equal(c.route, '/v1/meetings');
    assert.equal(c.method, 'POST');
    assert.equal(c.status, 201);
    assert.equal(typeof c.duration_ms, 'number');
    assert.equal(c.location, `/v1/meetings/${id}`, 'the created meeting is named');
    assert.equal(c.trace_id, TRACE_ID, 'the traceparent\'s trace id');
    const p = access('patch-1');
    assert.equal(p.route, '/v1/meetings/{id}', 'the route pattern, not the path');
    assert.equal(p.path, `/v1/meetings/${id}`);
    assert.equal(p.trace_id, undefined, 'an invalid traceparent is ignored');
    assert.equal(access('probe-1').level, 'debug', '/healthz at debug');
    assert.equal(access('probe-2').level, 'debug', '/metrics at debug');
    assert.equal(access('miss-1').route, '/v1/meetings/{id}');
    // The failed mirror write was logged while handling the create: it carries the create's ids.
    const inside = lines.find((l) => l.level === 'warn' && l.msg.includes(id) && !l.msg.startsWith('http '));
    assert.ok(inside, `a warning logged while handling the create:\n${srv.log}`);
    assert.equal(inside.request_id, 'create-1');
    assert.equal(inside.trace_id, TRACE_ID);
    // Lines of no request (start-up, the engine's threads) carry no request id.
    const start = lines.find((l) => l.msg.includes('listening on'));
    assert.ok(start && start.request_id === undefined, 'the start line');
});

test('text logs at info: no access line for the probes; other requests one line with route and request id', async () => {
    const srv = await h.startServer({ TOCSIN_LOG_LEVEL: 'info' });
    await srv.req('GET', '/healthz');
    await srv.req('GET', '/readyz');
    await srv.req('GET', '/metrics', { validate: false });
    await srv.req('GET', '/v1/unknown', { headers: { 'X-Request-Id': 'text-1', traceparent: TRACEPARENT } });
    await srv.stop();
    const lines = textLines(srv.log);
    assert.ok(!lines.some((l) => / http GET \/(healthz|readyz|metrics) /.test(l)), `probes at debug only:\n${srv.log}`);
    const a = lines.find((l) => l.includes('request_id=text-1'));
    assert.ok(a, srv.log);
    assert.match(a, / INFO http GET \/v1\/unknown 404 [\d.]+ms route=unmatched request_id=text-1 trace_id=4bf92f3577b34da6a3ce929d0e0e4736$/);
});

test('log forging: paths, header values and request ids with CR, LF, ESC and invalid UTF-8 cannot add or break a line, in either format', async () => {
    const forged = '2026-01-01T00:00:00.000Z ERROR forged';
    const forgedJson = '{"ts":"2026-01-01T00:00:00.000Z","level":"error","msg":"forged"}';
    const attempts = async (srv) => {
        const paths = [
            `/v1/x%0a${encodeURIComponent(forged)}`,
            `/v1/x%0d%0a${encodeURIComponent(forgedJson)}`,
            '/v1/x%1b[2J%1b]0;title%07',
            '/v1/x%c3%28%ff%fe%ed%a0%80%f4%90%80%80', // invalid UTF-8 of several kinds
            '/v1/x%e2%80%a8%c2%85%22%5c', // U+2028, NEL, a quote and a backslash
        ];
        for (const p of paths) {
            const r = await srv.req('GET', p, { validate: false, headers: { 'X-Request-Id': 'forge-1' } });
            assert.equal(r.status, 404, p);
        }
        // Raw requests: fetch would not send these bytes. A request id with a LF cannot end the
        // header; one with other bytes is replaced; a header value with ESC or 0xff reaches the
        // server as it is (libmicrohttpd lets bytes >= 0x80 through).
        const raws = [
            'GET /v1/y%0a' + encodeURIComponent(forged) + ' HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
            'GET /v1/z HTTP/1.1\r\nHost: x\r\nX-Request-Id: \xff\xfe"}\r\nConnection: close\r\n\r\n',
            'GET /v1/z HTTP/1.1\r\nHost: x\r\nX-Request-Id: id\r\n\r\n' + forged + '\r\n\r\n',
            'GET /v1/z HTTP/1.1\r\nHost: x\r\ntraceparent: 00-\xff\r\nConnection: close\r\n\r\n',
        ];
        for (const bytes of raws) {
            const r = await rawRequest(srv.port, Buffer.from(bytes, 'latin1')).catch((e) => ({ status: 0, e }));
            assert.ok(r.status === 404 || r.status === 400, `${JSON.stringify(bytes)}: ${r.status}`);
        }
        await srv.stop();
    };

    const t = await h.startServer({ TOCSIN_LOG_LEVEL: 'info' });
    await attempts(t);
    const tl = textLines(t.log);
    assert.ok(!tl.some((l) => l.startsWith(forged) || l.startsWith('{')), 'no forged text line');
    assert.ok(tl.some((l) => l.includes('/v1/x\\x0a2026-01-01T00:00:00.000Z ERROR forged 404')), t.log);
    assert.ok(tl.some((l) => l.includes('/v1/x\\xc3(\\xff\\xfe\\xed\\xa0\\x80\\xf4\\x90\\x80\\x80 404')), t.log);

    const j = await h.startServer({ TOCSIN_LOG_LEVEL: 'info', TOCSIN_LOG_FORMAT: 'json' });
    await attempts(j);
    const jl = jsonLines(j.log);
    assert.ok(!jl.some((l) => l.msg === 'forged' || l.level === 'error'), 'no forged JSON line');
    const paths = jl.filter((l) => typeof l.path === 'string').map((l) => l.path);
    assert.ok(paths.includes(`/v1/x\n${forged}`), 'the LF is kept inside the string, escaped');
    assert.ok(paths.includes(`/v1/x\r\n${forgedJson}`), 'so is the forged JSON');
    assert.ok(paths.includes('/v1/x\u001b[2J\u001b]0;title\u0007'), 'ESC and BEL escaped, kept');
    assert.ok(paths.includes('/v1/x\ufffd(\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd'), `invalid UTF-8 as U+FFFD: ${JSON.stringify(paths)}`);
    assert.ok(paths.includes('/v1/x\u2028\u0085"\\'), 'valid UTF-8 and JSON specials survive');
    assert.ok(jl.filter((l) => l.request_id === 'forge-1').length >= 5, 'the request ids');
});

// ---------------------------------------------------------------- metrics

function check(tool, text) {
    return new Promise((resolve) => {
        const child = execFile(tool, ['check', 'metrics'], { timeout: 30000 }, (err, stdout, stderr) => {
            resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, out: `${stdout}${stderr}` });
        });
        child.stdin.end(text);
    });
}

test('/metrics passes promtool check metrics after traffic; HTTP requests by route pattern; durations in seconds', async () => {
    const tool = findPromtool();
    const srv = await h.startServer();
    const key = await srv.createKey('metrics');
    const m = await createMeeting(srv, key);
    await srv.req('GET', `/v1/meetings/${m.json.id}`, { key });
    await srv.req('GET', `/v1/meetings/${m.json.id}`, { key });
    await srv.req('GET', '/v1/nope/deeper', { key });
    await srv.req('POST', '/healthz', { validate: false });
    await srv.req('GET', '/v1/meetings?limit=0', { key });
    await srv.req('BREW', '/v1/meetings', { key, validate: false }).catch(() => null);
    const text = (await srv.req('GET', '/metrics', { validate: false })).text;
    const r = await check(tool, text);
    assert.equal(r.code, 0, `promtool check metrics:\n${r.out}\n${text}`);
    const count = (labels) => {
        const line = text.split('\n').find((l) => l.startsWith(`tocsin_http_requests_total{${labels}} `));
        return line ? Number(line.split(' ')[1]) : 0;
    };
    assert.equal(count('route="/v1/meetings/{id}",method="GET",status="200"'), 2, text);
    assert.equal(count('route="/v1/meetings",method="POST",status="201"'), 1);
    assert.equal(count('route="/v1/meetings",method="GET",status="400"'), 1);
    assert.equal(count('route="unmatched",method="GET",status="404"'), 1);
    assert.equal(count('route="/healthz",method="POST",status="405"'), 1);
    assert.match(text, /^tocsin_http_request_duration_seconds_bucket\{route="\/v1\/meetings\/\{id\}",le="\+Inf"\} 2$/m);
    assert.match(text, /^tocsin_fire_lateness_seconds_bucket\{le="0\.001"\} \d+$/m);
    assert.ok(!/milliseconds|_ms[_{ ]/.test(text), 'no metric in milliseconds');
    assert.ok(!text.includes('/v1/meetings/' + m.json.id), 'no raw path as a label');
    await srv.stop();
});

// ---------------------------------------------------------------- webhook targets

// A receiver on 127.0.0.1 answering the n-th request (from 1) with plan(n).
async function receiver(t, plan = () => 204) {
    const rx = { got: [] };
    rx.server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            rx.got.push({ headers: req.headers });
            res.writeHead(plan(rx.got.length)).end();
        });
    });
    await new Promise((r) => rx.server.listen(0, '127.0.0.1', r));
    rx.port = rx.server.address().port;
    t.after(() => new Promise((r) => {
        rx.server.closeAllConnections();
        rx.server.close(() => r());
    }));
    return rx;
}

async function dueSoon(srv, key) {
    const starts = new Date(Date.now() + LEAD_MS + 5 * MIN).toISOString();
    const r = await srv.req('POST', '/v1/meetings', { key, json: { title: 'hook', starts_at: starts } });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

test('TOCSIN_WEBHOOK_ALLOW_NETS: listed networks and names pass registration, others are refused naming the address', async () => {
    const srv = await h.startServer({ TOCSIN_WEBHOOK_ALLOW_NETS: '127.0.0.0/8' });
    const key = await srv.createKey('allow');
    const ok = await srv.req('POST', '/v1/webhooks', { key, json: { url: 'http://127.0.0.1:9/hook' } });
    assert.equal(ok.status, 201, ok.text);
    for (const [url, addr] of [['http://[::1]:9/', '::1'], ['http://10.1.2.3/', '10.1.2.3'],
        ['http://169.254.169.254/latest', '169.254.169.254'], ['http://[::ffff:10.0.0.1]/', '::ffff:10.0.0.1']]) {
        const r = await srv.req('POST', '/v1/webhooks', { key, json: { url } });
        assert.equal(r.status, 400, `${url}: ${r.text}`);
        assert.equal(r.json.errors[0].field, 'url');
        assert.ok(r.json.errors[0].message.includes(addr) && r.json.errors[0].message.includes('TOCSIN_WEBHOOK_ALLOW_NETS'),
            r.json.errors[0].message);
    }
    await srv.stop();
    const named = await h.startServer({ TOCSIN_WEBHOOK_ALLOW_NETS: 'localhost' });
    const k2 = await named.createKey('allow-named');
    assert.equal((await named.req('POST', '/v1/webhooks', { key: k2, json: { url: 'http://localhost:9/x' } })).status, 201);
    assert.equal((await named.req('POST', '/v1/webhooks', { key: k2, json: { url: 'http://127.0.0.1:9/x' } })).status, 400,
        'a name allows that host, not its addresses under another name');
    await named.stop();
    const bad = await h.newServer({ TOCSIN_WEBHOOK_ALLOW_NETS: '10.0.0.0/33' });
    await assert.rejects(bad.start(), /TOCSIN_WEBHOOK_ALLOW_NETS: '10\.0\.0\.0\/33'/);
});

test('delivery under the allow-list: traceparent stable per delivery; once the target is no longer allowed, attempts fail with a recorded reason and one warning a minute', async (t) => {
    const hd = await harness('ops_allow_delivery');
    const env = {
        TOCSIN_WEBHOOK_ALLOW_NETS: '127.0.0.0/8',
        TOCSIN_DELIVERY_RETRY_BASE_MS: '200',
        TOCSIN_DELIVERY_MAX_ATTEMPTS: '3',
        TOCSIN_DELIVERY_WORKERS: '1',
        TOCSIN_LOG_LEVEL: 'warn',
    };
    let srv = await hd.startServer(env);
    const key = await srv.createKey('allow-delivery');
    const rx = await receiver(t, (n) => (n === 1 ? 503 : 204));
    assert.equal((await srv.req('POST', '/v1/webhooks', { key, json: { url: `http://127.0.0.1:${rx.port}/h` } })).status, 201);
    const m1 = await dueSoon(srv, key);
    assert.ok(await waitFor(() => rx.got.length >= 2, BOUND_MS), `two attempts, got ${rx.got.length}`);
    const [a, b] = rx.got.map((g) => g.headers.traceparent);
    const tp = /^00-([0-9a-f]{32})-([0-9a-f]{16})-00$/;
    assert.match(a, tp);
    assert.match(b, tp);
    assert.equal(tp.exec(a)[1], tp.exec(b)[1], 'one trace id for the delivery');
    assert.notEqual(tp.exec(a)[2], tp.exec(b)[2], 'a span per attempt');
    assert.equal(rx.got[0].headers['webhook-id'], rx.got[1].headers['webhook-id']);
    // The failed first attempt was logged, with that trace id.
    const warn = srv.log.split('\n').find((l) => l.includes(' WARN deliver: webhook '));
    assert.ok(warn && warn.includes(m1.reminders[0].id.toString()) && warn.includes(`trace_id=${tp.exec(a)[1]}`), srv.log);

    // Restarted without 127/8 allowed: the webhook stays registered, its deliveries are refused.
    await srv.stop();
    srv = await hd.startServer({ ...env, TOCSIN_WEBHOOK_ALLOW_NETS: '10.0.0.0/8' });
    const before = rx.got.length;
    const m2 = await dueSoon(srv, key);
    let d;
    assert.ok(await waitFor(async () => {
        d = await srv.req('GET', `/v1/meetings/${m2.id}/deliveries`, { key });
        return d.json.items[0]?.status === 'failed';
    }, BOUND_MS, 100), `recorded failed: ${d?.text}`);
    const item = d.json.items[0];
    assert.equal(item.attempts, 3);
    assert.match(item.last_error, /^refused: the host resolves to 127\.0\.0\.1, .* not allowed by TOCSIN_WEBHOOK_ALLOW_NETS$/);
    assert.equal(rx.got.length, before, 'nothing reached the receiver');
    const warns = srv.log.split('\n').filter((l) => l.includes(' WARN deliver: webhook ') && l.includes('refused'));
    assert.equal(warns.length, 1, `three failures, one line a minute:\n${srv.log}`);
    await srv.stop();
});

// ---------------------------------------------------------------- API details

test('DELETE honours If-Match: 412 on a stale ETag (nothing deleted), 204 on the current one or *', async () => {
    const srv = await h.startServer();
    const key = await srv.createKey('ifmatch');
    const m = await createMeeting(srv, key);
    const id = m.json.id;
    const old = m.header('ETag');
    const p = await srv.req('PATCH', `/v1/meetings/${id}`, { key, json: { title: 'changed' } });
    const cur = p.header('ETag');
    const stale = await srv.req('DELETE', `/v1/meetings/${id}`, { key, headers: { 'If-Match': old } });
    assert.equal(stale.status, 412, stale.text);
    assert.equal(stale.json.code, 'precondition_failed');
    assert.equal((await srv.req('GET', `/v1/meetings/${id}`, { key })).status, 200, 'still there');
    assert.equal((await srv.req('DELETE', `/v1/meetings/${id}`, { key, headers: { 'If-Match': `W/${cur}` } })).status, 412,
        'a weak tag never matches If-Match');
    assert.equal((await srv.req('DELETE', `/v1/meetings/${id}`, { key, headers: { 'If-Match': `"x", ${cur}` } })).status, 204);
    assert.equal((await srv.req('GET', `/v1/meetings/${id}`, { key })).status, 404);
    const m2 = await createMeeting(srv, key);
    assert.equal((await srv.req('DELETE', `/v1/meetings/${m2.json.id}`, { key, headers: { 'If-Match': '*' } })).status, 204);
    const gone = await srv.req('DELETE', `/v1/meetings/${m2.json.id}`, { key, headers: { 'If-Match': '*' } });
    assert.equal(gone.status, 404, 'no meeting: 404, not 412');
    // The pending reminder of the deleted meeting was cancelled.
    assert.equal(await h.sql(`SELECT string_agg(status, ',') FROM reminders WHERE meeting_id = '${id}'`), 'cancelled');
    await srv.stop();
});

test('query errors name the parameter and the form it needs, in detail and errors[]', async () => {
    const srv = await h.startServer();
    const key = await srv.createKey('query');
    const tok = await token(srv, key);
    const cases = [
        ['/v1/meetings?limit=0', key, 'limit', /integer from 1 to 200/],
        ['/v1/meetings?limit=5&limit=6', key, 'limit', /at most once/],
        ['/v1/meetings?from=yesterday', key, 'from', /RFC 3339 date-time with an offset/],
        ['/v1/meetings?to=2026-11-23T09:00:00', key, 'to', /RFC 3339/],
        ['/v1/meetings?cursor=zz', key, 'cursor', /next_cursor/],
        ['/v1/meetings?color=red', key, 'color', /from, to, q, limit, cursor and expand/],
        ['/v1/meetings?from=2030-01-02T00:00:00Z&to=2030-01-01T00:00:00Z', key, 'from', /after 'to'/],
        ['/v1/webhooks?x=1', key, 'x', /no query parameters/],
        ['/v1/me/notifications?after=-1', tok, 'after', /sequence number/],
        ['/v1/me/notifications?limit=201', tok, 'limit', /1 to 200/],
        ['/v1/stream?cursor=5', tok, 'cursor', /access_token and last_event_id/],
        ['/v1/meetings?%0a%1b=1', key, '\\x0a\\x1b', /from, to, q, limit, cursor and expand/],
    ];
    for (const [path, k, field, why] of cases) {
        const r = await srv.req('GET', path, { key: k });
        assert.equal(r.status, 400, `${path}: ${r.text}`);
        assert.equal(r.json.code, 'bad_query', path);
        assert.equal(r.json.errors.length, 1, path);
        assert.equal(r.json.errors[0].field, field, path);
        assert.match(r.json.errors[0].message, why, path);
        assert.ok(r.json.detail.includes(`'${field}'`) && why.test(r.json.detail), `${path}: ${r.json.detail}`);
    }
    await srv.stop();
});

test('a bad TOCSIN_DATABASE_URL stops the start with one line naming the variable', async () => {
    const srv = await h.newServer({ TOCSIN_DATABASE_URL: 'postgresql://x:y@[::1' });
    await assert.rejects(srv.start(), /tocsin: TOCSIN_DATABASE_URL: /);
    assert.equal(srv.proc.exited.code, 2);
    assert.equal(srv.log.trim().split('\n').length, 1, srv.log);
});

// ---------------------------------------------------------------- retention

const OLD_EVENTS = 50000;
const OLD_IDEM = 5000;
const OLD_OUTBOX = 5000;
const OLD_MEETINGS = 30;

function percentile(xs, p) {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

test('retention: 60,000 old rows purged in batches while writes go on with bounded latency; nothing young purged; a stream cursor below the purge gets reset', async () => {
    const hr = await harness('ops_retention');
    const srv = await hr.startServer({ TOCSIN_RETENTION_INTERVAL_S: '1', TOCSIN_LOG_LEVEL: 'info' });
    const key = await srv.createKey('retention');
    const tenant = await hr.sql("SELECT id FROM tenants WHERE name = 'retention'");
    // Meetings: some to delete long ago, one deleted just now, one live.
    const olds = [];
    for (let i = 0; i < OLD_MEETINGS; i++) {
        olds.push((await createMeeting(srv, key)).json);
    }
    const recent = (await createMeeting(srv, key)).json;
    const live = (await createMeeting(srv, key)).json;
    for (const m of [...olds, recent]) {
        assert.equal((await srv.req('DELETE', `/v1/meetings/${m.id}`, { key })).status, 204);
    }
    const rem = live.reminders[0].id;

    // Baseline write latency before any old row exists.
    const post = async () => {
        const t0 = performance.now();
        const r = await srv.req('POST', '/v1/meetings', {
            key, validate: false, json: { title: 'load', starts_at: isoIn(3 * HOUR), participants: [{ id: 'u2' }] },
        });
        assert.equal(r.status, 201, r.text);
        return performance.now() - t0;
    };
    const base = [];
    for (let i = 0; i < 60; i++) {
        base.push(await post());
    }

    // Old and young rows of every kind.
    const ids = olds.map((m) => `'${m.id}'`).join(',');
    await hr.sql(`
        UPDATE meetings SET deleted_at = now() - interval '8 days' WHERE id IN (${ids});
        -- Young records of the old meetings' reminders: they go with their meetings, not by age.
        INSERT INTO outbox (tenant_id, meeting_id, reminder_id, fire_at, channel, target, receiver, status)
          SELECT ${tenant}, r.meeting_id, r.id, r.fire_at, 'stream', 'gone-' || r.id, 'r', 'delivered'
          FROM reminders r WHERE r.meeting_id IN (${ids});
        INSERT INTO idempotency_keys (tenant_id, key, request_hash, status, body, created_at)
          SELECT ${tenant}, 'old-' || g, repeat('a', 64), 201, '{}', now() - interval '25 hours'
          FROM generate_series(1, ${OLD_IDEM}) g;
        INSERT INTO idempotency_keys (tenant_id, key, request_hash, status, body, created_at)
          SELECT ${tenant}, 'young-' || g, repeat('a', 64), 201, '{}', now() - interval '23 hours'
          FROM generate_series(1, 10) g;
        INSERT INTO outbox (tenant_id, meeting_id, reminder_id, fire_at, channel, target, receiver, status, created_at)
          SELECT ${tenant}, '${live.id}', ${rem}, now(), 'stream', 'old-' || g, 'r',
                 CASE WHEN g % 2 = 0 THEN 'delivered' ELSE 'failed' END, now() - interval '8 days'
          FROM generate_series(1, ${OLD_OUTBOX}) g;
        -- Old but pending (not due for a day, so no delivery worker takes it), and young done.
        INSERT INTO outbox (tenant_id, meeting_id, reminder_id, fire_at, channel, target, receiver, status,
                            created_at, next_attempt_at)
          SELECT ${tenant}, '${live.id}', ${rem}, now(), 'stream', 'keep-' || g, 'r',
                 CASE WHEN g <= 5 THEN 'pending' ELSE 'delivered' END,
                 CASE WHEN g <= 5 THEN now() - interval '8 days' ELSE now() - interval '6 days' END,
                 now() + interval '1 day'
          FROM generate_series(1, 10) g;
        INSERT INTO stream_heads (tenant_id, seq) VALUES (${tenant}, 0) ON CONFLICT (tenant_id) DO NOTHING;
        INSERT INTO stream_events (tenant_id, seq, reminder_id, fire_at, fired_at, meeting_id, audience)
          SELECT ${tenant}, g, ${rem}, now(), now() - interval '8 days' + g * interval '1 millisecond',
                 '${live.id}', ARRAY['u1']
          FROM generate_series(1, ${OLD_EVENTS}) g;
        INSERT INTO stream_events (tenant_id, seq, reminder_id, fire_at, fired_at, meeting_id, audience)
          SELECT ${tenant}, ${OLD_EVENTS} + g, ${rem}, now(), now() - interval '6 days', '${live.id}', ARRAY['u1']
          FROM generate_series(1, 10) g;
        UPDATE stream_heads SET seq = ${OLD_EVENTS + 10} WHERE tenant_id = ${tenant};`);

    // Writes while the purge runs, until every old row is gone.
    const oldLeft = async () => Number(await hr.sql(`SELECT
        (SELECT count(*) FROM stream_events WHERE fired_at < now() - interval '7 days') +
        (SELECT count(*) FROM idempotency_keys WHERE key LIKE 'old-%') +
        (SELECT count(*) FROM outbox WHERE target LIKE 'old-%') +
        (SELECT count(*) FROM meetings WHERE id IN (${ids}))`));
    assert.ok(await oldLeft() > 0, 'old rows in place when the load starts');
    assert.ok(Number(await hr.sql("SELECT count(*) FROM outbox WHERE target LIKE 'gone-%'")) >= OLD_MEETINGS,
        'the old meetings have reminders with outbox rows');
    const during = [];
    let done = false;
    const watcher = (async () => {
        const end = Date.now() + 120000;
        while (Date.now() < end && (await oldLeft()) > 0) {
            await sleep(100);
        }
        done = true;
    })();
    while (!done) {
        during.push(await post());
    }
    await watcher;
    assert.equal(await oldLeft(), 0, 'every old row purged within two minutes');
    const b99 = percentile(base, 99);
    const d50 = percentile(during, 50);
    const d99 = percentile(during, 99);
    const dmax = Math.max(...during);
    console.log(`# retention: ${during.length} writes during the purge: p50 ${d50.toFixed(1)} ms, p99 ${d99.toFixed(1)} ms, max ${dmax.toFixed(1)} ms; before it: p50 ${percentile(base, 50).toFixed(1)} ms, p99 ${b99.toFixed(1)} ms`);
    assert.ok(during.length >= 20, `the writes overlapped the purge (${during.length})`);
    // Blocked writes would wait for a purge transaction (seconds); bounded means close to normal.
    assert.ok(dmax < 2000, `max write latency during the purge ${dmax} ms`);
    assert.ok(d99 < Math.max(10 * b99, 500), `p99 during ${d99} ms vs ${b99} ms before`);

    // Nothing young went, and what stays was never a candidate.
    assert.equal(await hr.sql("SELECT count(*) FROM idempotency_keys WHERE key LIKE 'young-%'"), '10');
    assert.equal(await hr.sql("SELECT count(*) FROM outbox WHERE target LIKE 'keep-%'"), '10', 'pending and young deliveries stay');
    assert.equal(await hr.sql(`SELECT count(*) FROM stream_events WHERE tenant_id = ${tenant}`), '10');
    assert.equal(await hr.sql(`SELECT purged_through FROM stream_heads WHERE tenant_id = ${tenant}`), String(OLD_EVENTS));
    assert.equal(await hr.sql(`SELECT count(*) FROM meetings WHERE id IN ('${recent.id}', '${live.id}')`), '2');
    assert.equal(await hr.sql(`SELECT count(*) FROM reminders WHERE meeting_id IN (${ids})`), '0', 'reminders went with their meetings');
    assert.equal(await hr.sql("SELECT count(*) FROM outbox WHERE target LIKE 'gone-%'"), '0', 'and their outbox rows with them');
    const metrics = (await srv.req('GET', '/metrics', { validate: false })).text;
    assert.match(metrics, new RegExp(`^tocsin_retention_purged_rows_total\\{kind="stream_events"\\} ${OLD_EVENTS}$`, 'm'));
    assert.match(metrics, new RegExp(`^tocsin_retention_purged_rows_total\\{kind="idempotency_keys"\\} ${OLD_IDEM}$`, 'm'));
    assert.match(metrics, new RegExp(`^tocsin_retention_purged_rows_total\\{kind="deliveries"\\} ${OLD_OUTBOX}$`, 'm'));
    assert.match(metrics, new RegExp(`^tocsin_retention_purged_rows_total\\{kind="deleted_meetings"\\} ${OLD_MEETINGS}$`, 'm'));
    assert.match(srv.log, /INFO retention: purged \d+ idempotency keys, \d+ deliveries, \d+ deleted meetings, \d+ stream events in \d+ ms/);

    // A resume from below the purge is told to reset (cursor_expired); from its edge it resumes.
    const tok = await token(srv, key, 'u1');
    const s = await openStream(srv, '/v1/stream', { Authorization: `Bearer ${tok}`, 'Last-Event-ID': '100' });
    try {
        assert.ok(await s.until((t) => t.includes('event: reset')), s.text());
        assert.match(s.text(), /id: \d+\nevent: reset\ndata: \{"reason":"cursor_expired"/);
    } finally {
        s.close();
    }
    const edge = await openStream(srv, '/v1/stream', { Authorization: `Bearer ${tok}`, 'Last-Event-ID': String(OLD_EVENTS) });
    try {
        assert.ok(await edge.until((t) => t.includes('event: reminder')), edge.text());
        assert.ok(!edge.text().includes('event: reset'), edge.text());
    } finally {
        edge.close();
    }
    await srv.stop();
});

// ---------------------------------------------------------------- connections

// The stream pool has a quarter of TOCSIN_HTTP_THREADS, at least 2 (http_server.c); its threads
// open a connection when a stream's token needs its signing key read.
test('PostgreSQL connections of one replica stay within TOCSIN_HTTP_THREADS + its stream threads + TOCSIN_DELIVERY_WORKERS + 6', async () => {
    const hc = await harness('ops_connections');
    const srv = await hc.startServer({ TOCSIN_HTTP_THREADS: '3', TOCSIN_DELIVERY_WORKERS: '2', TOCSIN_RETENTION_INTERVAL_S: '1' });
    const key = await srv.createKey('conns');
    // Enough parallel requests that every HTTP thread serves some, streams on every stream thread,
    // and time for retention's pass.
    await Promise.all(Array.from({ length: 60 }, () => srv.req('GET', '/v1/meetings', { key })));
    const tokens = await Promise.all(Array.from({ length: 8 }, (_, i) => mintToken(srv, key, { sub: `c${i}` })));
    await Promise.all(tokens.map((t) => openLive(srv.base, { token: t.token })));
    await sleep(2000);
    const count = async () => Number(await hc.sql(
        'SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()'));
    const n = await count();
    assert.ok(n <= 3 + 2 + 2 + 6, `${n} connections`);
    closeAll();
    // The fixed ones (dispatch, scheduler, reconciler, membership, retention) and the delivery
    // workers are there whatever the traffic.
    assert.ok(n >= 2 + 5, `${n} connections`);
    await srv.stop();
    assert.ok(await waitFor(async () => (await count()) === 0, 5000), 'all closed at stop');
});
