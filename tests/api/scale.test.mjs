// scale.test.mjs -- delivery and the engine's shared work at scale, against real replicas on one
// PostgreSQL and one Redis: a tenant whose receivers are dead (one never answers, one answers 500)
// does not delay another tenant, nor does a slow receiver's backlog given to one worker; a replica
// killed with kill -9 in a burst loses nothing and repeats on the wire at most what it could have
// had in flight; replicas joining and leaving under a steady load lose nothing and fire nothing
// twice, and settle on owning the 256 shards between them; a replica whose clock runs ahead
// (libfaketime) never fires early and reports its skew; a scheduler whose heap fills says so once
// when it starts and once when it ends, not at every poll.
// Reminders are written straight into PostgreSQL with exact fire times (the engine reads what any
// writer committed); webhooks are registered through the API, and receipts are timed at local
// receivers by the same clock as the database's.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';
import { harness, run, serveLocal, test, waitFor, sleep } from './harness.mjs';

const LEAD_MS = 3000;     // a batch's first reminder falls due this long after it is written
const SETTLE_MS = 1500;   // after the last arrival, wait this long for a (wrong) repeat
const ARRIVE_MS = 60000;  // everything must have arrived this long after its batch's last due time
// What a replica can have sent without its answer recorded, to one receiver: its workers times
// the share of each (the defaults, set explicitly below so that the bound follows them). A worker
// starts new requests only after it recorded the answers it took, so this also bounds the answers
// received but not yet written down.
const WORKERS = 2, PER_RECEIVER = 16;
const IN_FLIGHT_MAX = WORKERS * PER_RECEIVER;
const SHARDS = 256;
const SCHED_WINDOW_MS = 2000; // < LEAD_MS
const FAKETIME_LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';

// ---------------------------------------------------------------- receivers

// A receiver answering 204 after delayMs; records each webhook-id's first arrival, its fire time
// (from the id, rem_<reminder id>_<fire_at ms>) and how often it came. Closed when t ends.
async function receiver(t, { delayMs = 0 } = {}) {
    const rx = { seen: new Map(), total: 0 };
    rx.server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            const now = Date.now();
            const id = req.headers['webhook-id'] ?? '';
            const m = /^rem_(\d+)_(\d+)$/.exec(id);
            rx.total++;
            const s = rx.seen.get(id);
            if (s) {
                s.count++;
            } else {
                rx.seen.set(id, { reminder: m ? Number(m[1]) : NaN, fireAt: m ? Number(m[2]) : NaN, at: now, count: 1 });
            }
            const answer = () => res.writeHead(204).end();
            if (delayMs > 0) {
                setTimeout(answer, delayMs);
            } else {
                answer();
            }
        });
    });
    rx.server.keepAliveTimeout = 60000;
    rx.url = await serveLocal(t, rx.server);
    return rx;
}

// Accepts TCP connections and never answers (requests are read and ignored).
async function blackHole(t) {
    const bh = { sockets: new Set(), connections: 0 };
    bh.server = net.createServer((s) => {
        bh.connections++;
        bh.sockets.add(s);
        s.on('data', () => {});
        s.on('error', () => {});
        s.on('close', () => bh.sockets.delete(s));
    });
    await new Promise((r) => bh.server.listen(0, '127.0.0.1', r));
    bh.url = `http://127.0.0.1:${bh.server.address().port}/hook`;
    t.after(() => new Promise((r) => {
        for (const s of bh.sockets) {
            s.destroy();
        }
        bh.server.close(() => r());
    }));
    return bh;
}

// Answers every request 500 at once.
async function failing(t) {
    const f = { requests: 0 };
    f.server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            f.requests++;
            res.writeHead(500).end();
        });
    });
    f.url = await serveLocal(t, f.server);
    return f;
}

// ---------------------------------------------------------------- data and figures

async function tenant(hh, srv, name) {
    const key = await srv.createKey(name);
    const id = Number(await hh.sql(`SELECT id FROM tenants WHERE name = '${name}'`));
    return { key, id, name };
}

async function register(srv, tn, url) {
    const r = await srv.req('POST', '/v1/webhooks', { key: tn.key, json: { url } });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

// n meetings of tenant tn, one reminder each, due at t0Ms + floor(i * spreadMs / n); all of them
// titled `tag`, which names the batch. Returns the batch: its tag, n and last due time.
async function insertDue(hh, tn, tag, n, t0Ms, spreadMs) {
    await hh.sql(`
        WITH m AS (
            INSERT INTO meetings (id, tenant_id, title, starts_at, participants, version, created_at, updated_at)
            SELECT gen_random_uuid(), ${tn.id}, '${tag}',
                   to_timestamp(${t0Ms} / 1000.0) + (floor(i * ${spreadMs}::float8 / ${n}) || ' ms')::interval
                       + interval '5 minutes',
                   '[]'::json, 1, now(), now()
            FROM generate_series(0, ${n - 1}) AS i
            RETURNING id, tenant_id, starts_at)
        INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status)
        SELECT id, tenant_id, 5, starts_at - interval '5 minutes', 'pending' FROM m`);
    return { tag, n, t0: t0Ms, last: t0Ms + Math.floor(((n - 1) * spreadMs) / n) };
}

const batchIds = async (hh, b) => (await hh.sql(`SELECT r.id FROM reminders r JOIN meetings m ON m.id = r.meeting_id
    WHERE m.title = '${b.tag}' ORDER BY r.id`)).split('\n').filter(Boolean).map(Number);

// Waits until the receiver got every reminder of batch b (ARRIVE_MS after its last due time at
// most), then SETTLE_MS more. Returns the batch's receipts: lateness (sorted), early, wire repeats,
// missing reminder ids.
async function arrivals(hh, rx, b) {
    const ids = new Set(await batchIds(hh, b));
    assert.equal(ids.size, b.n, `batch ${b.tag} written`);
    const got = () => [...rx.seen.values()].filter((s) => ids.has(s.reminder));
    await waitFor(() => got().length >= b.n, b.last + ARRIVE_MS - Date.now(), 100);
    await sleep(SETTLE_MS);
    const mine = got();
    const seenIds = new Set(mine.map((s) => s.reminder));
    const late = mine.map((s) => s.at - s.fireAt).sort((x, y) => x - y);
    return {
        n: b.n,
        got: mine.length,
        missing: [...ids].filter((id) => !seenIds.has(id)),
        late,
        early: late.filter((l) => l < 0).length,
        repeats: mine.reduce((a, s) => a + s.count - 1, 0),
        p50: quantile(late, 0.5),
        p99: quantile(late, 0.99),
        max: late[late.length - 1],
    };
}

function quantile(sorted, q) {
    return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

const fmt = (r) => `${r.got}/${r.n} received, lateness p50 ${r.p50} p99 ${r.p99} max ${r.max} ms, ${r.repeats} repeated`;

// The record of batch b: every reminder fired once, never before its time, with exactly one
// outbox row per webhook of its tenant, delivered.
async function assertRecordedOnce(hh, b, webhooks = 1) {
    const rows = (await hh.sql(`SELECT r.status, count(*), sum((r.fired_at >= r.fire_at)::int),
            sum((SELECT count(*) FROM outbox o WHERE o.reminder_id = r.id AND o.fire_at = r.fire_at)),
            sum((SELECT count(*) FROM outbox o WHERE o.reminder_id = r.id AND o.status = 'delivered'))
        FROM reminders r JOIN meetings m ON m.id = r.meeting_id WHERE m.title = '${b.tag}'
        GROUP BY r.status`)).split('\n').map((l) => l.split('|'));
    assert.deepEqual(rows.map((r) => r[0]), ['fired'], `every reminder of ${b.tag} fired: ${JSON.stringify(rows)}`);
    const [, n, notEarly, outbox, delivered] = rows[0].map(Number);
    assert.equal(n, b.n);
    assert.equal(notEarly, b.n, 'fired_at is never before fire_at');
    assert.equal(outbox, b.n * webhooks, 'one outbox row per reminder and webhook: nothing recorded twice');
    assert.equal(delivered, b.n * webhooks, 'every outbox row delivered');
}

async function metrics(srv) {
    const r = await srv.req('GET', '/metrics', { validate: false });
    assert.equal(r.status, 200);
    return (name) => {
        const m = new RegExp(`^${name} (-?[0-9.e+]+)$`, 'm').exec(r.text);
        assert.ok(m, `${name} in /metrics`);
        return Number(m[1]);
    };
}

// Starts n replicas of harness hh on its Redis, with the delivery guard off and env on top.
async function replicas(hh, n, env = {}, first = 1) {
    const out = [];
    for (let i = 0; i < n; i++) {
        out.push(await hh.startServer({
            TOCSIN_INSTANCE_ID: `replica-${first + i}`,
            TOCSIN_REDIS_PREFIX: hh.prefix,
            TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
            // Reminders written by SQL notify no scheduler: with a window shorter than LEAD_MS the
            // next poll reads them, as it reads reminders created long before they fall due.
            TOCSIN_SCHED_WINDOW_MS: String(SCHED_WINDOW_MS),
            TOCSIN_DELIVERY_WORKERS: String(WORKERS),
            TOCSIN_DELIVERY_RECEIVER_CONCURRENCY: String(PER_RECEIVER),
            ...env,
        }));
    }
    return out;
}

// Shards owned across live replicas, once the heartbeats agree.
async function shardsSettle(live) {
    let last = [];
    const ok = await waitFor(async () => {
        last = [];
        for (const s of live) {
            const m = await metrics(s);
            last.push({ owned: m('tocsin_shards_owned'), live: m('tocsin_replicas_live') });
        }
        return last.every((x) => x.live === live.length) && last.reduce((a, x) => a + x.owned, 0) === SHARDS;
    }, 10000, 200);
    assert.ok(ok, `shards owned / replicas seen per live replica: ${JSON.stringify(last)}`);
    assert.ok(last.every((x) => x.owned > 0), 'every live replica owns some shards');
}

// ---------------------------------------------------------------- tests

// Replicas on one database share its outbox and its shards: each test has a database of its own.
const hIso = await harness('scale_isolation');
const hKill = await harness('scale_kill');
const hChurn = await harness('scale_churn');
const hSkew = await harness('scale_skew');
const hHeap = await harness('scale_heap');
const hBacklog = await harness('scale_backlog');

test('a tenant with a black-hole and a 500-ing receiver delays no other tenant; their circuits open', async (t) => {
    const hh = hIso;
    hh.prefix = `iso${process.pid}`;
    // One replica with two workers: every worker meets the bad receivers.
    const [srv] = await replicas(hh, 1, { TOCSIN_DELIVERY_TIMEOUT_MS: '3000' });
    t.after(() => srv.stop());
    const good = await tenant(hh, srv, 'healthy');
    const bad = await tenant(hh, srv, 'broken');
    const rx = await receiver(t);
    await register(srv, good, rx.url);

    // Baseline: the healthy tenant alone.
    const GOOD_N = 150, GOOD_SPREAD_MS = 5000;
    const base = await arrivals(hh, rx, await insertDue(hh, good, 'iso-base', GOOD_N, Date.now() + LEAD_MS, GOOD_SPREAD_MS));
    assert.equal(base.missing.length, 0, `baseline: ${fmt(base)}`);

    // The broken tenant: a receiver that never answers and one that answers 500, BAD_N reminders
    // of theirs due now (two outbox rows each), while the healthy tenant's fall due over 5 s.
    const bh = await blackHole(t);
    const f = await failing(t);
    const hole = await register(srv, bad, bh.url);
    const err = await register(srv, bad, f.url);
    const BAD_N = 1000;
    const now = Date.now();
    const badBatch = await insertDue(hh, bad, 'iso-bad', BAD_N, now + 500, 0);
    const loaded = await arrivals(hh, rx, await insertDue(hh, good, 'iso-load', GOOD_N, now + LEAD_MS, GOOD_SPREAD_MS));
    t.diagnostic(`healthy tenant alone: ${fmt(base)}`);
    t.diagnostic(`next to the broken tenant: ${fmt(loaded)}`);
    assert.equal(loaded.missing.length, 0, `every healthy reminder arrives: ${fmt(loaded)}`);
    assert.equal(loaded.early + base.early, 0, 'none early');
    assert.equal(loaded.repeats, 0, 'none twice');
    // Generous for a shared machine and ASan builds; a dead receiver holding the workers (the
    // failure this guards against) made these seconds late.
    assert.ok(loaded.p50 <= base.p50 + 250, `p50 ${loaded.p50} ms against ${base.p50} ms alone`);
    assert.ok(loaded.max <= base.max + 1000, `max ${loaded.max} ms against ${base.max} ms alone`);
    await assertRecordedOnce(hh, { ...loaded, tag: 'iso-load' });

    // The broken tenant's rows: fired, pending, and few attempts spent: each worker opens each
    // circuit after at most its share of requests, and an open circuit gives its rows back
    // without spending attempts.
    assert.equal(Number(await hh.sql(`SELECT count(*) FROM reminders r JOIN meetings m ON m.id = r.meeting_id
        WHERE m.title = '${badBatch.tag}' AND r.status = 'fired'`)), BAD_N, 'the broken tenant\'s reminders fired');
    const spent = async (w) => (await hh.sql(`SELECT count(*), coalesce(sum(attempts), 0), coalesce(max(attempts), 0),
        count(*) FILTER (WHERE status = 'pending') FROM outbox WHERE webhook_id = '${w.id}'`)).split('|').map(Number);
    const [holeRows, holeAttempts, holeMax, holePending] = await spent(hole);
    const [errRows, errAttempts, errMax, errPending] = await spent(err);
    t.diagnostic(`black hole: ${holeRows} rows, ${holeAttempts} attempts (max ${holeMax} a row), ${holePending} pending, ${bh.connections} connections`);
    t.diagnostic(`500: ${errRows} rows, ${errAttempts} attempts (max ${errMax} a row), ${errPending} pending, ${f.requests} requests`);
    assert.equal(holeRows, BAD_N);
    assert.equal(errRows, BAD_N);
    // Each worker has up to its share of requests out per receiver before its circuit opens, then
    // sends half-open probes while this test runs: far below one attempt per row.
    const ATTEMPTS_MAX = WORKERS * (PER_RECEIVER + 16);
    assert.ok(holeAttempts <= ATTEMPTS_MAX, `black-hole attempts ${holeAttempts} <= ${ATTEMPTS_MAX}`);
    assert.ok(errAttempts <= ATTEMPTS_MAX, `500 attempts ${errAttempts} <= ${ATTEMPTS_MAX}`);
    assert.ok(f.requests <= ATTEMPTS_MAX, `the 500-ing receiver got ${f.requests} requests`);
    assert.equal(holePending, BAD_N, 'black-hole rows stay pending');
    assert.equal(errPending, BAD_N, '500 rows stay pending');
    for (const w of [hole, err]) {
        assert.match(srv.log, new RegExp(`receiver ${w.id} failed \\d+ times in a row; circuit open`), `circuit of ${w.url}`);
    }
});

test('a slow receiver\'s backlog given to one worker leaves its other slots to other receivers', async (t) => {
    const hh = hBacklog;
    hh.prefix = `backlog${process.pid}`;
    // One worker of 32 slots, 8 a receiver: one lease takes 32 of the slow receiver's 40 rows
    // (given in id order), but they take 8 slots (its hold cap, a quarter of them), and the next
    // lease leaves the slow receiver out. When they took all 32 slots the other receiver's
    // reminder waited for the slow answers.
    const SLOTS = 32, SHARE = 8, SLOW_MS = 1000, BACKLOG = 40;
    const [srv] = await replicas(hh, 1, {
        TOCSIN_DELIVERY_WORKERS: '1',
        TOCSIN_DELIVERY_CONCURRENCY: String(SLOTS),
        TOCSIN_DELIVERY_RECEIVER_CONCURRENCY: String(SHARE),
        TOCSIN_DELIVERY_TIMEOUT_MS: '20000',
    });
    t.after(() => srv.stop());
    const slowTenant = await tenant(hh, srv, 'slow');
    const quickTenant = await tenant(hh, srv, 'quick');
    const slow = await receiver(t, { delayMs: SLOW_MS });
    const quick = await receiver(t);
    await register(srv, slowTenant, slow.url);
    await register(srv, quickTenant, quick.url);
    const t0 = Date.now() + LEAD_MS;
    const backlog = await insertDue(hh, slowTenant, 'backlog-slow', BACKLOG, t0, 0);
    const one = await insertDue(hh, quickTenant, 'backlog-quick', 1, t0 + 20, 0);
    const got = await arrivals(hh, quick, one);
    t.diagnostic(`the other receiver's reminder: ${fmt(got)}`);
    assert.equal(got.missing.length, 0);
    // Generous for ASan on a shared machine; waiting behind the slow receiver's answers made it
    // SLOW_MS late.
    assert.ok(got.max < SLOW_MS / 2, `the other receiver waited ${got.max} ms`);
    const all = await arrivals(hh, slow, backlog);
    assert.equal(all.missing.length, 0, `the slow receiver's backlog: ${fmt(all)}`);
    assert.equal(all.repeats + got.repeats, 0, 'none twice');
});

test('kill -9 of one of three replicas in a burst: nothing lost or recorded twice, late by the recovery at most, repeats bounded by its in-flight', async (t) => {
    const hh = hKill;
    hh.prefix = `kill${process.pid}`;
    const reps = await replicas(hh, 3);
    t.after(async () => {
        for (const r of reps) {
            await r.stop();
        }
    });
    const tn = await tenant(hh, reps[0], 'burst');
    // Answers take 20 ms, so that each replica has requests in flight when one is killed.
    const rx = await receiver(t, { delayMs: 20 });
    await register(reps[0], tn, rx.url);
    const BURST = 1500;

    // The same burst with no kill first: what the machine makes of it today.
    const base = await arrivals(hh, rx, await insertDue(hh, tn, 'kill-base', BURST, Date.now() + LEAD_MS, 0));
    assert.equal(base.missing.length, 0, `baseline burst: ${fmt(base)}`);
    await assertRecordedOnce(hh, { ...base, tag: 'kill-base' });

    const b = await insertDue(hh, tn, 'kill-burst', BURST, Date.now() + LEAD_MS, 0);
    const victim = reps[1];
    // Its requests in flight, sampled until the kill (reported; the assertion uses the bound).
    let inFlight = 0, sampling = true;
    const sampler = (async () => {
        while (sampling) {
            try {
                inFlight = (await metrics(victim))('tocsin_deliveries_in_flight');
            } catch {
                return;
            }
            await sleep(10);
        }
    })();
    const ids = new Set(await batchIds(hh, b));
    await waitFor(() => [...rx.seen.values()].filter((s) => ids.has(s.reminder)).length >= BURST / 4, LEAD_MS + 30000, 5);
    sampling = false;
    // The rows it holds (in flight, queued, or given by its fires and not loaded yet): a worker's
    // lease names it "<instance>/<n>/<token>". Read just before the kill: once its connections
    // are closed the others may take them at their next look, which came before a read after the
    // kill on a busy machine (0 rows found). What it still delivers itself in between is recorded
    // before the kill, and the recovery below is the latest of them all.
    const held = (await hh.sql(`SELECT id FROM outbox WHERE status = 'pending'
        AND lease_owner LIKE '${victim.env.TOCSIN_INSTANCE_ID}/%'`)).split('\n').filter(Boolean);
    const killedAt = Date.now();
    await victim.kill();
    await sampler;
    const r = await arrivals(hh, rx, b);
    const recovered = held.length === 0 ? NaN : Number(await hh.sql(`SELECT round(extract(epoch FROM max(delivered_at)) * 1000)
        - ${killedAt} FROM outbox WHERE id IN (${held.join(',')}) AND status = 'delivered'`));
    t.diagnostic(`burst of ${BURST}, no kill: ${fmt(base)}`);
    t.diagnostic(`burst of ${BURST}, replica killed ${killedAt - b.t0} ms after the due time with ${inFlight} requests in flight: ${fmt(r)}`);
    t.diagnostic(`the ${held.length} rows it held were all delivered ${recovered} ms after the kill`);
    assert.equal(r.missing.length, 0, `nothing lost: ${fmt(r)}`);
    assert.equal(r.early, 0);
    await assertRecordedOnce(hh, { ...r, tag: b.tag });
    assert.ok(r.repeats <= IN_FLIGHT_MAX, `${r.repeats} repeated on the wire; the killed replica could have had ${IN_FLIGHT_MAX} in flight`);
    // Recovery of its rows: its workers' leases run out 1.5 s after their last renewal at most,
    // then the others take them before any other row, behind their own queues. The 2 s,
    // and 1 s of slack for a shared machine and ASan.
    assert.ok(held.length > 0, 'the killed replica held rows');
    assert.ok(recovered <= 3000, `the killed replica's ${held.length} rows delivered ${recovered} ms after the kill (<= 3000)`);
    // The whole burst: the no-kill burst of the same run, the 2 s recovery and the same 1 s slack.
    const BOUND_MS = base.max + 2000 + 1000;
    assert.ok(r.max <= BOUND_MS, `max lateness ${r.max} ms <= ${BOUND_MS} ms (no-kill burst ${base.max} ms + 2 s recovery + 1 s slack)`);
});

test('replicas joining and leaving under a steady load: none lost, none fired twice, shards settle on the live ones', async (t) => {
    const hh = hChurn;
    hh.prefix = `churn${process.pid}`;
    const live = await replicas(hh, 3);
    const all = [...live];
    t.after(async () => {
        for (const r of all) {
            await r.stop();
        }
    });
    await shardsSettle(live);
    const tn = await tenant(hh, live[0], 'steady');
    const rx = await receiver(t, { delayMs: 5 });
    await register(live[0], tn, rx.url);
    // 40 a second for 16 s, while: SIGTERM of one, a new one, kill -9 of another, another new one,
    // SIGTERM of the first newcomer, each at least 2.5 s (more than the recovery) after the last.
    const N = 640, SPREAD_MS = 16000;
    const b = await insertDue(hh, tn, 'churn', N, Date.now() + LEAD_MS, SPREAD_MS);
    const at = (ms) => sleep(Math.max(0, b.t0 + ms - Date.now()));
    const drop = (r) => live.splice(live.indexOf(r), 1);
    const events = [];
    const mark = (what) => events.push(`${Date.now() - b.t0} ms: ${what}`);
    await at(2500);
    const term1 = live[0];
    assert.deepEqual(await term1.stop(), { code: 0, signal: null }, 'graceful SIGTERM exit');
    drop(term1);
    mark('replica-1 stopped (SIGTERM)');
    all.push(...(await replicas(hh, 1, {}, 4)));
    live.push(all[all.length - 1]);
    mark('replica-4 started');
    await at(6000);
    const killed = live[0];
    await killed.kill();
    drop(killed);
    mark('kill -9');
    await at(8500);
    all.push(...(await replicas(hh, 1, {}, 5)));
    live.push(all[all.length - 1]);
    mark('replica-5 started');
    await at(12000);
    const term2 = all[3];
    assert.deepEqual(await term2.stop(), { code: 0, signal: null }, 'graceful SIGTERM exit of a newcomer');
    drop(term2);
    mark('replica-4 stopped (SIGTERM)');
    const r = await arrivals(hh, rx, b);
    t.diagnostic(events.join('; '));
    t.diagnostic(`${N} due over ${SPREAD_MS / 1000} s with 2 leaving by SIGTERM, 1 by kill -9, 2 joining: ${fmt(r)}`);
    assert.equal(r.missing.length, 0, `none lost: ${fmt(r)}`);
    assert.equal(r.early, 0);
    await assertRecordedOnce(hh, { ...r, tag: b.tag });
    assert.ok(r.repeats <= IN_FLIGHT_MAX, `${r.repeats} repeated on the wire; only the killed replica's in-flight ones (<= ${IN_FLIGHT_MAX}) may be`);
    // Leaving costs at most the recovery (a dead replica's heartbeat lapses after 1.2 s, its leases
    // after 1.5 s): the 2 s, with 0.5 s of slack for a shared machine and ASan.
    const LATE_MAX_MS = 2500;
    assert.ok(r.max <= LATE_MAX_MS, `max lateness ${r.max} ms <= ${LATE_MAX_MS} ms`);
    assert.equal(live.length, 2);
    await shardsSettle(live);
});

// libfaketime moves the replica's wall clock (CLOCK_REALTIME) ahead; the monotonic clock stays.
// An ASan build needs its runtime first in the preload list, hence libasan before libfaketime.
async function preloadAhead(bin) {
    assert.ok(fs.existsSync(FAKETIME_LIB), `${FAKETIME_LIB} (Debian's libfaketime, installed by scripts/lib.sh)`);
    const ldd = await run('ldd', [bin]);
    const asan = /^\s*libasan\.so\S*\s+=>\s+(\S+)/m.exec(ldd.stdout);
    return asan ? `${asan[1]}:${FAKETIME_LIB}` : FAKETIME_LIB;
}

test('a replica whose clock runs 30 s ahead fires neither early nor late and reports the skew', async (t) => {
    const hh = hSkew;
    hh.prefix = `skew${process.pid}`;
    const AHEAD_S = 30;
    const [normal] = await replicas(hh, 1);
    const [ahead] = await replicas(hh, 1, {
        LD_PRELOAD: await preloadAhead(hh.env.bin),
        FAKETIME: `+${AHEAD_S}s`,
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
    }, 2);
    t.after(async () => {
        await ahead.stop();
        await normal.stop();
    });
    // The skewed replica's own date header shows the preload took effect.
    const date = Date.parse((await ahead.req('GET', '/healthz', { validate: false })).header('date'));
    assert.ok(date - Date.now() >= (AHEAD_S - 2) * 1000, `the replica's clock runs ahead (Date: ${new Date(date).toISOString()})`);
    await shardsSettle([normal, ahead]);
    let skew = NaN;
    assert.ok(await waitFor(async () => {
        skew = (await metrics(ahead))('tocsin_clock_skew_seconds');
        return Math.abs(skew - AHEAD_S) < 0.5;
    }, 15000, 200), `tocsin_clock_skew_seconds of the replica ahead: ${skew}`);
    const normalSkew = (await metrics(normal))('tocsin_clock_skew_seconds');
    assert.ok(Math.abs(normalSkew) < 0.5, `tocsin_clock_skew_seconds of the other: ${normalSkew}`);

    const tn = await tenant(hh, normal, 'skew');
    const rx = await receiver(t);
    await register(ahead, tn, rx.url);
    const N = 300;
    const b = await insertDue(hh, tn, 'skew', N, Date.now() + LEAD_MS, 6000);
    const r = await arrivals(hh, rx, b);
    t.diagnostic(`${N} due over 6 s, one of two replicas ${AHEAD_S} s ahead: ${fmt(r)}`);
    assert.equal(r.missing.length, 0, `none lost: ${fmt(r)}`);
    assert.equal(r.early, 0, 'none received before its time');
    assert.equal(Number(await hh.sql('SELECT count(*) FROM reminders WHERE fired_at < fire_at')), 0, 'none fired early');
    // Nor late: when the scheduler's first poll ran on the replica's own clock (before the first
    // sample of the database's) its read position stayed that far ahead, and what fell due in
    // between waited for a full read or the reconciler's sweep (max 1,026 ms before polls read
    // on from the window's end, 238 ms after; at 5 s ahead the first second's occurrences were
    // 0.7-1.1 s late). The reconciler now also samples the database's clock as it starts.
    const SKEW_LATE_MAX_MS = 750;
    assert.ok(r.max <= SKEW_LATE_MAX_MS, `max lateness ${r.max} ms <= ${SKEW_LATE_MAX_MS} ms`);
    await assertRecordedOnce(hh, { ...r, tag: b.tag });
    // Both replicas fired some: the one ahead owns shards and fired on the database's clock.
    const firedAhead = (await metrics(ahead))('tocsin_reminders_fired_total');
    assert.ok(firedAhead > 0, `the replica ahead fired ${firedAhead} of ${N}`);
});

// More occurrences due within the window than the scheduler's heap holds (SCHED_HEAP_MAX): every
// poll stops at the full heap, and that is said once when it starts and once when it ends, as an
// outage is, not once per poll. The rows are one meeting's occurrence rows (unique by original
// start), all due at one whole millisecond (as tocsin writes them: the scheduler's keyset is in
// ms) 2 s past the window's end when written: a poll reads them when the window reaches them,
// every later poll starts before where the heap filled, and none falls due during the test. The
// reconciler is kept away (its passes an hour apart) so that Redis is not loaded with their keys.
const SCHED_HEAP_MAX = 131072; // src/engine/scheduler.h

test('more occurrences due in the window than the scheduler holds: one line when its heap fills, one when it has room', async (t) => {
    const hh = hHeap;
    hh.prefix = `heap${process.pid}`;
    const WINDOW_S = 600;
    const POLL_MS = 100;
    const FULL_FOR_MS = 3000; // the heap stays full this long at least
    const N = SCHED_HEAP_MAX + 2000;
    const [srv] = await replicas(hh, 1, {
        TOCSIN_LOG_LEVEL: 'info',
        TOCSIN_SCHED_WINDOW_MS: String(WINDOW_S * 1000),
        TOCSIN_SCHED_POLL_MS: String(POLL_MS),
        TOCSIN_RECON_INTERVAL_MS: '3600000',
        TOCSIN_RECON_FULL_INTERVAL_MS: '86400000',
    });
    t.after(() => srv.stop());
    const lines = [];
    let partial = '';
    srv.proc.child.stderr.on('data', (d) => {
        const parts = (partial + d.toString()).split('\n');
        partial = parts.pop();
        lines.push(...parts);
    });
    const tn = await tenant(hh, srv, 'heap');
    await hh.sql(`
        WITH m AS (
            INSERT INTO meetings (id, tenant_id, title, starts_at, participants, version, created_at, updated_at)
            VALUES (gen_random_uuid(), ${tn.id}, 'heap',
                    date_trunc('milliseconds', now() + interval '${WINDOW_S + 2} seconds'), '[]'::json, 1, now(), now())
            RETURNING id, tenant_id, starts_at)
        INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status, original_start, starts_at)
        SELECT m.id, m.tenant_id, 0, m.starts_at, 'pending', m.starts_at + i * interval '1 day',
               m.starts_at + i * interval '1 day'
        FROM m, generate_series(0, ${N - 1}) AS i`);
    const full = () => lines.filter((l) => /sched: .*occurrences held/.test(l));
    const room = () => lines.filter((l) => /sched: room in the heap again/.test(l));
    const dump = () => lines.filter((l) => /sched: /.test(l)).join('\n');
    // A poll picks the rows up once the window reaches them.
    assert.ok(await waitFor(() => full().length > 0, 15000, 100), `the heap never filled:\n${dump()}`);
    let held = 0;
    assert.ok(await waitFor(async () => (held = (await metrics(srv))('tocsin_sched_held')) === SCHED_HEAP_MAX, 5000, 100),
        `tocsin_sched_held ${held}`);
    await sleep(FULL_FOR_MS);
    assert.equal(full().length, 1, `one line while every poll finds the heap full:\n${dump()}`);
    assert.equal(room().length, 0, dump());

    // Once the rows are gone the next read goes through: one line, with the count.
    await hh.sql(`DELETE FROM reminders WHERE tenant_id = ${tn.id}`);
    assert.ok(await waitFor(() => room().length > 0, 10000, 100), `no line when the heap had room:\n${dump()}`);
    await sleep(1000);
    assert.equal(full().length, 1, dump());
    assert.equal(room().length, 1, dump());
    t.diagnostic(dump());
    // How many polls find it full depends on the machine: every SCHED_FULL_READ_MS (5 s) the
    // scheduler re-reads the whole window, 131,072 held rows, which takes seconds under ASan and
    // holds back the polls meanwhile. The line counts reads (at least one, at most one per poll)
    // over the time it was full (at least FULL_FOR_MS).
    const [, reads, over] = (/after (\d+) reads found it full over (\d+) ms/.exec(room()[0]) ?? []).map(Number);
    assert.ok(reads >= 1 && reads <= over / POLL_MS + 1, `the end line counts the reads that found it full: ${room()[0]}`);
    assert.ok(over >= FULL_FOR_MS, `full for ${over} ms >= ${FULL_FOR_MS} ms: ${room()[0]}`);
    assert.ok(lines.every((l) => !/ ERROR /.test(l)), dump());
});
