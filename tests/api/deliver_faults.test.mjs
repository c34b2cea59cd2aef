// deliver_faults.test.mjs -- delivery through the faults that come from its own side, against
// real replicas, PostgreSQL and Redis: a replica stopped while a slow receiver holds one of its
// requests records the answers that come meanwhile and keeps its lease, so the other replica sends
// none of them again; a worker whose database connection is replaced while a request is out
// does not take that row over from itself and send it twice; a replica killed after a fire
// handed its rows to its worker in memory, before it sent them, leaves them to the other replica,
// which sends each once; while PostgreSQL is down a replica
// waits between its tries instead of spinning on them; a receiver's Retry-After holds back its
// other queued rows too, not only the one it answered, for as long as it asked (a success to an
// earlier request does not end it, nor does the circuit its failure opens); rows fired to a
// worker whose circuit for their receiver is open go to another replica's worker once due, not
// after that circuit; and a 2xx whose body is cut off is a delivery, not a failure to retry.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { harness, serveLocal, test, waitFor, sleep, MIN } from './harness.mjs';
import { cpuMsOf, statFields } from '../../bench/proc.mjs';

const LEAD_MS = 2000;      // reminders fall due this long after they are created
const HANG_MS = 5000;      // the receiver holds its first request this long (< the request timeout)
const ANSWER_MS = 300;     // and answers every other first arrival after this long
const BOUND_MS = 30000;    // generous: everything arrives within this under ASan on a shared machine
const SETTLE_MS = 2500;    // after the last answer, a (wrong) repeat would show within this
const OUTAGE_MS = 3000;    // PostgreSQL down this long in the spin test
// CPU a replica may spend while PostgreSQL is down over OUTAGE_MS: the threads retry a few times
// a second; a worker that retries with no pause burns a whole core.
const OUTAGE_CPU_MS_MAX = 600;

// A webhook receiver: the first request it ever gets is answered after HANG_MS, every other first
// arrival of a webhook-id after ANSWER_MS, a repeat at once. Counts arrivals per webhook-id.
async function receiver(t) {
    const rx = { seen: new Map(), total: 0, hung: null };
    rx.server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            const id = req.headers['webhook-id'] ?? '';
            rx.total++;
            const count = (rx.seen.get(id) ?? 0) + 1;
            rx.seen.set(id, count);
            let delay = count > 1 ? 0 : ANSWER_MS;
            if (rx.hung === null) {
                rx.hung = id;
                delay = HANG_MS;
            }
            setTimeout(() => res.writeHead(204).end(), delay);
        });
    });
    rx.server.keepAliveTimeout = 60000;
    rx.url = await serveLocal(t, rx.server);
    return rx;
}

const repeats = (rx) => [...rx.seen.entries()].filter(([, n]) => n > 1);

// A receiver that answers its nth request (from 1) as answer(n, res) does; rx.arrivals holds when
// each came (ms).
async function scripted(t, answer) {
    const rx = { arrivals: [] };
    const server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => answer(rx.arrivals.push(Date.now()), res));
    });
    rx.url = await serveLocal(t, server);
    return rx;
}

// n meetings of one reminder each, all due LEAD_MS from now; returns their reminder ids.
async function dueSoon(srv, key, n) {
    const starts = new Date(Date.now() + LEAD_MS + 5 * MIN).toISOString();
    const ids = [];
    for (let i = 0; i < n; i++) {
        const r = await srv.req('POST', '/v1/meetings', {
            key, json: { title: `fault ${i}`, starts_at: starts, reminders: [{ minutes_before: 5 }] },
        });
        assert.equal(r.status, 201, r.text);
        ids.push(r.json.reminders[0].id);
    }
    return ids;
}

async function delivered(hh, ids) {
    return Number(await hh.sql(`SELECT count(*) FROM outbox WHERE reminder_id IN (${ids.join(',')})
        AND status = 'delivered'`));
}

async function replica(hh, t, name, env = {}) {
    const srv = await hh.startServer({
        TOCSIN_INSTANCE_ID: name,
        TOCSIN_REDIS_PREFIX: hh.prefix,
        TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
        TOCSIN_DELIVERY_WORKERS: '1',
        ...env,
    });
    t.after(() => srv.kill());
    return srv;
}

// A replica (as replica does) with tenant `tenant`, whose one webhook goes to url: { srv, key }.
async function withWebhook(hh, t, name, tenant, url, env = {}) {
    const srv = await replica(hh, t, name, env);
    const key = await srv.createKey(tenant);
    const hook = await srv.req('POST', '/v1/webhooks', { key, json: { url } });
    assert.equal(hook.status, 201, hook.text);
    return { srv, key };
}

// CPU time of a process so far, ms (bench/proc.mjs reads /proc/<pid>/stat).
const cpuMs = (pid) => cpuMsOf(statFields(pid));

const hStop = await harness('faults_stop');
const hConn = await harness('faults_conn');
const hDown = await harness('faults_down');
const hWait = await harness('faults_wait');
const hCut = await harness('faults_cut');
const hHold = await harness('faults_hold');
const hKill = await harness('faults_kill');
const hPass = await harness('faults_pass');

test('a replica stopped while a receiver holds one of its requests records the other answers and keeps its lease: the other replica sends none again', async (t) => {
    const N = 8;
    const rx = await receiver(t);
    const one = await replica(hStop, t, 'stop-1');
    const two = await replica(hStop, t, 'stop-2');
    const key = await one.createKey('faults-stop');
    const hook = await one.req('POST', '/v1/webhooks', { key, json: { url: rx.url } });
    assert.equal(hook.status, 201, hook.text);
    const ids = await dueSoon(one, key, N);
    assert.ok(await waitFor(() => rx.seen.size === N, BOUND_MS), `${rx.seen.size} of ${N} arrived`);

    // The replica whose worker holds the request the receiver keeps: it stops while that request
    // is out, and the answers to its others come while it waits for it.
    const [, reminder] = /^rem_(\d+)_/.exec(rx.hung);
    const owner = await hStop.sql(`SELECT lease_owner FROM outbox WHERE reminder_id = ${reminder}`);
    const holder = owner.startsWith('stop-1/') ? one : two;
    assert.ok(owner.startsWith('stop-1/') || owner.startsWith('stop-2/'), `the hung row's owner: ${owner}`);
    const stopped = await holder.stop();
    assert.deepEqual(stopped, { code: 0, signal: null }, 'a clean exit once its last request was answered');

    assert.ok(await waitFor(async () => await delivered(hStop, ids) === N, BOUND_MS), 'every row recorded delivered');
    await sleep(SETTLE_MS);
    assert.deepEqual(repeats(rx), [], 'no request sent twice');
    assert.equal(rx.total, N);
});

test('a worker whose connection is replaced while a request is out does not take that row from itself and send it again', async (t) => {
    const rx = await receiver(t);
    const { srv, key } = await withWebhook(hConn, t, 'conn-1', 'faults-conn', rx.url);
    const ids = await dueSoon(srv, key, 1);
    assert.ok(await waitFor(() => rx.total === 1, BOUND_MS), 'the request arrived');

    // Its lease names its backend: ended, the lease is void, and the worker registers again under
    // a new name while the receiver still holds the request.
    const ended = await hConn.sql(`SELECT count(pg_terminate_backend(backend_pid)) FROM delivery_owners
        WHERE owner LIKE 'conn-1/%' AND lease_until > now()`);
    assert.equal(Number(ended), 1, 'the worker\'s backend ended');

    assert.ok(await waitFor(async () => await delivered(hConn, ids) === 1, BOUND_MS), 'the row recorded delivered');
    await sleep(SETTLE_MS);
    assert.deepEqual(repeats(rx), [], 'the request was not sent twice');
    assert.ok(/the lease of conn-1\/\S+ lapsed or its connection was replaced/.test(srv.proc.log),
        'the worker saw its lease go');
});

test('a replica killed after a fire handed its worker the rows in memory, before it sent them, leaves them to the other replica: each sent once', async (t) => {
    const N = 6;
    const rx = await receiver(t);
    // One request at a time to the receiver: the first hangs, the other handed rows wait queued.
    const env = { TOCSIN_DELIVERY_RECEIVER_CONCURRENCY: '1' };
    const { srv: one, key } = await withWebhook(hKill, t, 'kill-1', 'faults-kill', rx.url, env);
    const ids = await dueSoon(one, key, N);
    assert.ok(await waitFor(() => rx.total === 1, BOUND_MS), 'the first request arrived');
    const m = await one.req('GET', '/metrics', { validate: false });
    const handed = Number(/^tocsin_delivery_handed_total (\d+)$/m.exec(m.text)[1]);
    assert.equal(handed, N, 'every row was handed over in memory, none leased');
    await one.kill();
    await sleep(ANSWER_MS);
    assert.equal(rx.total, 1, 'the queued rows were never sent');
    assert.equal(await delivered(hKill, ids), 0);

    await replica(hKill, t, 'kill-2', env);
    assert.ok(await waitFor(async () => await delivered(hKill, ids) === N, BOUND_MS), 'every row recorded delivered');
    await sleep(SETTLE_MS);
    // The request that was out when the replica died is sent again (a kill repeats what was on
    // the wire); the rows it held queued, never.
    assert.deepEqual(repeats(rx).map(([id]) => id), [rx.hung]);
    assert.equal(rx.total, N + 1);
    const attempts = await hKill.sql(`SELECT string_agg(attempts::text, ',') FROM outbox
        WHERE reminder_id IN (${ids.join(',')})`);
    assert.equal(attempts, Array(N).fill('1').join(','), 'one attempt recorded each');
});

test('while PostgreSQL is down a replica waits between its tries instead of spinning', async (t) => {
    const srv = await replica(hDown, t, 'down-1', { TOCSIN_DELIVERY_WORKERS: '2' });
    await sleep(1000);
    await hDown.stopPostgres();
    try {
        await sleep(500); // the threads notice
        const before = cpuMs(srv.proc.child.pid);
        await sleep(OUTAGE_MS);
        const spent = cpuMs(srv.proc.child.pid) - before;
        assert.ok(spent <= OUTAGE_CPU_MS_MAX, `${spent} ms of CPU in ${OUTAGE_MS} ms with PostgreSQL down`);
    } finally {
        await hDown.startPostgres();
    }
    const up = await waitFor(async () => (await srv.req('GET', '/readyz', { validate: false })).status === 200, BOUND_MS, 200);
    assert.ok(up, 'ready again once PostgreSQL is back');
});

test('a receiver\'s Retry-After holds back the rest of its queue, not only the row it answered', async (t) => {
    // One request at a time to the receiver, so the other rows wait queued in the worker when the
    // first answer says 503, Retry-After: 2. Before, only that row waited: the next went at once.
    const N = 4, WAIT_S = 2;
    const rx = await scripted(t, (n, res) =>
        res.writeHead(n === 1 ? 503 : 204, n === 1 ? { 'retry-after': String(WAIT_S) } : {}).end());
    const { arrivals } = rx;
    const { srv, key } = await withWebhook(hWait, t, 'wait-1', 'faults-wait', rx.url,
        { TOCSIN_DELIVERY_RECEIVER_CONCURRENCY: '1' });
    const ids = await dueSoon(srv, key, N);
    assert.ok(await waitFor(async () => await delivered(hWait, ids) === N, BOUND_MS), 'every row delivered');
    const quiet = arrivals[1] - arrivals[0];
    t.diagnostic(`requests at ${arrivals.map((a) => a - arrivals[0]).join(', ')} ms`);
    // A lower bound only: our side enforces it, so a slow machine cannot make it fail.
    assert.ok(quiet >= WAIT_S * 1000 - 100, `the next request came ${quiet} ms after the 503`);
    assert.equal(arrivals.length, N + 1, 'the 503-ed row once more, the others once');
    assert.match(srv.proc.log, /asked to wait \d+ ms \(Retry-After\)/);
});

test('a Retry-After is not cut short by a success to an earlier request, nor by the circuit its failure opens', async (t) => {
    // Two requests out at once: the first answered 503, Retry-After: 5 at once, the second 204
    // after 300 ms (the receiver took it before it started refusing). Rows fired 2 s later wait
    // for the 5 s: that success used to close the circuit, and they went out at once.
    const WAIT_S = 5;
    const rx = await scripted(t, (n, res) => {
        if (n === 1)
            res.writeHead(503, { 'retry-after': String(WAIT_S) }).end();
        else
            setTimeout(() => res.writeHead(204).end(), n === 2 ? 300 : 0);
    });
    const { arrivals } = rx;
    const { srv, key } = await withWebhook(hHold, t, 'hold-1', 'faults-hold', rx.url,
        { TOCSIN_DELIVERY_RECEIVER_CONCURRENCY: '2' });
    const first = await dueSoon(srv, key, 2);
    assert.ok(await waitFor(() => arrivals.length >= 2, BOUND_MS), 'the first two requests');
    const later = await dueSoon(srv, key, 2);
    assert.ok(await waitFor(async () => await delivered(hHold, [...first, ...later]) === 4, BOUND_MS),
        'every row delivered');
    t.diagnostic(`requests at ${arrivals.map((a) => a - arrivals[0]).join(', ')} ms`);
    const next = Math.min(...arrivals.slice(2));
    assert.ok(next - arrivals[0] >= WAIT_S * 1000 - 100, `a request ${next - arrivals[0]} ms after the 503`);

    // Four failures without Retry-After, then a 503 with one: that fifth failure also opens the
    // circuit (DELIVER_CIRCUIT_OPEN_MS, 5 s), which gave the queued rows back due then, not at
    // the 30 s asked for. One request at a time; failed rows come back after a minute at least.
    const HOLD_S = 30;
    const refusing = await scripted(t, (n, res) =>
        res.writeHead(n < 5 ? 500 : 503, n === 5 ? { 'retry-after': String(HOLD_S) } : {}).end());
    const answers = () => refusing.arrivals.length;
    const two = await withWebhook(hHold, t, 'hold-2', 'faults-hold-2', refusing.url,
        { TOCSIN_DELIVERY_RECEIVER_CONCURRENCY: '1', TOCSIN_DELIVERY_RETRY_BASE_MS: '60000' });
    const ids = await dueSoon(two.srv, two.key, 10);
    assert.ok(await waitFor(() => answers() >= 5, BOUND_MS), 'five requests');
    // The rows queued in the worker at the 503 go back; rows still given to it in the database
    // (if they fired in a later batch) stay its own until the hold ends.
    const back = `FROM outbox WHERE reminder_id IN (${ids.join(',')}) AND attempts = 0 AND lease_owner IS NULL`;
    assert.ok(await waitFor(async () => Number(await hHold.sql(`SELECT count(*) ${back}`)) >= 1, BOUND_MS, 50),
        'the queued rows were given back');
    const dueIn = Number(await hHold.sql(`SELECT extract(epoch FROM min(next_attempt_at) - now()) ${back}`));
    assert.ok(dueIn >= HOLD_S - 3, `a queued row is due again in ${dueIn.toFixed(1)} s (Retry-After: ${HOLD_S})`);
    assert.equal(answers(), 5, 'nothing more was sent');
});

// The circuit test: a receiver that fails until the one worker of a replica has its circuit for
// it open this long (DELIVER_CIRCUIT_OPEN_MS, 5 s, doubled by each of three failed probes), then
// answers. Its failing rows retry after RETRY_FAST_MS, so a probe is at hand at each half-open.
const OPEN_LONG_MS = 40000;
const OPEN_WAIT_MS = 90000;   // the 5 + 10 + 20 s of failing and the probes, generously
const RETRY_FAST_MS = 200;
const PASS_N = 4;
// Rows fired meanwhile must be delivered within this of the circuit's opening: generous (a
// replica started and the rows fired in it), yet 10 s short of the 40 s they waited for that
// circuit (they were its worker's until it half-opened, which no machine's load can make sooner).
const PASS_BOUND_MS = OPEN_LONG_MS * 3 / 4;

test('rows fired to a worker whose circuit for their receiver is open go to another replica\'s worker once due, each sent once', async (t) => {
    let failing = true;
    const rx = { seen: new Map() };
    const server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            const id = req.headers['webhook-id'] ?? '';
            rx.seen.set(id, (rx.seen.get(id) ?? 0) + 1);
            res.writeHead(failing ? 500 : 204).end();
        });
    });
    const url = await serveLocal(t, server);
    const env = { TOCSIN_DELIVERY_RETRY_BASE_MS: String(RETRY_FAST_MS), TOCSIN_DELIVERY_MAX_ATTEMPTS: '50' };
    const { srv: one, key } = await withWebhook(hPass, t, 'pass-1', 'faults-pass', url, env);
    await dueSoon(one, key, 6);
    const opened = new RegExp(`circuit open for ${OPEN_LONG_MS} ms`);
    assert.ok(await waitFor(() => opened.test(one.proc.log), OPEN_WAIT_MS, 100),
        `no circuit open for ${OPEN_LONG_MS} ms:\n${one.proc.log}`);
    const openedAt = Date.now();
    failing = false;

    // Fired by pass-1 alone, so written owned by (and handed to) its worker, whose circuit is open.
    const ids = await dueSoon(one, key, PASS_N);
    const fired = `FROM outbox WHERE reminder_id IN (${ids.join(',')})`;
    assert.ok(await waitFor(async () => Number(await hPass.sql(`SELECT count(*) ${fired}`)) === PASS_N, BOUND_MS),
        'the rows fired');
    await replica(hPass, t, 'pass-2', env);
    const done = await waitFor(async () => await delivered(hPass, ids) === PASS_N, PASS_BOUND_MS - (Date.now() - openedAt));
    const took = Date.now() - openedAt;
    t.diagnostic(`delivered ${await delivered(hPass, ids)} of ${PASS_N} within ${took} ms of the circuit's opening`);
    assert.ok(done, `${await delivered(hPass, ids)} of ${PASS_N} delivered ${took} ms after the circuit opened for ${OPEN_LONG_MS} ms`);
    const senders = await hPass.sql(`SELECT string_agg(DISTINCT a.instance, ',') FROM delivery_attempts a
        JOIN outbox o ON o.id = a.outbox_id WHERE o.reminder_id IN (${ids.join(',')})`);
    assert.equal(senders, 'pass-2', 'the other replica sent them');
    await sleep(SETTLE_MS);
    const sent = [...rx.seen.entries()].filter(([id]) => ids.some((r) => id.startsWith(`rem_${r}_`)));
    assert.deepEqual(sent.map(([, n]) => n), Array(PASS_N).fill(1), 'each sent once');
});

test('a 2xx whose body is cut off is a delivery, not a failure to retry', async (t) => {
    // The receiver answers 200 with a Content-Length it never fills and closes the connection.
    let requests = 0;
    const server = net.createServer((sock) => {
        let got = '';
        sock.on('data', (b) => {
            got += b.toString('latin1');
            const head = got.indexOf('\r\n\r\n');
            const len = /content-length: *(\d+)/i.exec(got);
            if (head < 0 || len === null || got.length < head + 4 + Number(len[1]))
                return;
            requests++;
            got = '';
            sock.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\ncut short');
        });
        sock.on('error', () => {});
    });
    const url = await serveLocal(t, server);
    const { srv, key } = await withWebhook(hCut, t, 'cut-1', 'faults-cut', url,
        { TOCSIN_DELIVERY_RETRY_BASE_MS: '100' });
    const ids = await dueSoon(srv, key, 1);
    assert.ok(await waitFor(() => requests >= 1, BOUND_MS), 'the request arrived');
    assert.ok(await waitFor(async () => await delivered(hCut, ids) === 1, BOUND_MS, 100),
        await hCut.sql(`SELECT status || ' ' || attempts || ' ' || coalesce(last_error, '') FROM outbox
            WHERE reminder_id = ${ids[0]}`));
    await sleep(SETTLE_MS); // a retry after a 100 ms base would come within this
    assert.equal(requests, 1, 'sent once');
    assert.equal(await hCut.sql(`SELECT attempts || ' ' || last_status FROM outbox WHERE reminder_id = ${ids[0]}`), '1 200');
});
