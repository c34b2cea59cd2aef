// bench/stream.mjs -- the live stream (GET /v1/stream) measured end to end, driven by
// bench/stream.sh (which builds, starts PostgreSQL and Redis, migrates and makes an API key).
// Starts BENCH_REPLICAS `tocsin serve` processes on one database and one Redis and runs:
//   lateness: one stream per replica for one participant; BENCH_DUE reminders of theirs due evenly
//             over BENCH_SPREAD_S seconds; recorded fired (stream_events.fired_at) to received,
//             split by whether the stream's replica is the one that fired the reminder;
//   fanout:   BENCH_STREAMS streams on one freshly started replica (BENCH_STREAMS_EACH per
//             participant of one meeting); the replica's RSS and CPU with none and with them all
//             idle for BENCH_IDLE_S, then BENCH_FANOUT_FIRES reminders of that meeting: recorded
//             fired until the last stream has it;
//   storm:    BENCH_STREAMS streams on the other replicas, cut and reconnected with their cursors
//             to the first replica over BENCH_STORM_S seconds while BENCH_STORM_REMINDERS
//             reminders fire and bench/stream_load.mjs runs a paced GET /v1/meetings/{id} load
//             (BENCH_API_RATE per second) against that replica; the same load without the storm,
//             just before, is the baseline, and once more after it (the streams idle on the first
//             replica) for the noise between two quiet windows;
//   storm_missed: the same, but every stream is cut first, the reminders fire while they are
//             away, and the streams reconnect over BENCH_STORM_S seconds to get them all as a
//             resume's backlog (a replica lost, its clients back with their cursors).
// In both storms the client process, which holds the streams, runs at BENCH_CLIENT_SCHED (idle:
// SCHED_IDLE): the streams stand for browsers on other machines (lowerPriority).
// Which replica fired an event: the bench's database gives stream_events a column whose default
// is the inserting session's application_name, and each replica connects with its own. Receipt
// times are taken by the client on the same machine, so both sides read one clock.
// Prints one block per scenario; exits non-zero when an event was lost or delivered twice.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import { StreamClient, clock, openAll } from './stream_client.mjs';
import {
    API_KEY, BIN, DB_URL, DIR, EACH, REDIS_PORT, STREAMS, api, clientsFor, closeAll, die, eventsAfter, fmt, freePort, headSeq,
    insertDue, log, machineNote, procStat, psql, q3, quantile, sleep, startReplica, stopReplica,
    streamsOpen, subsOf, sumOf, tokensFor, treeCpuMs, waitFor,
} from './stream_rig.mjs';

const env = (name, def) => process.env[name] ?? def;
const REPLICAS = Number(env('BENCH_REPLICAS', '3'));
const SCENARIOS = env('BENCH_SCENARIOS', 'lateness fanout storm_missed storm').split(/\s+/).filter(Boolean);
const DUE = Number(env('BENCH_DUE', '10000'));
const SPREAD_S = Number(env('BENCH_SPREAD_S', '20'));
const IDLE_S = Number(env('BENCH_IDLE_S', '60'));
const FANOUT_FIRES = Number(env('BENCH_FANOUT_FIRES', '3'));
const STORM_S = Number(env('BENCH_STORM_S', '10'));
const STORM_REMINDERS = Number(env('BENCH_STORM_REMINDERS', '3'));
// Each storm this many times: one storm's p99 ratio moves with the machine's noise (two quiet
// windows' p99 differ by up to 1.5x here), the median of several less.
const STORM_ROUNDS = Number(env('BENCH_STORM_ROUNDS', '1'));
const API_RATE = Number(env('BENCH_API_RATE', '200'));
const API_CONNECTIONS = Number(env('BENCH_API_CONNECTIONS', '10'));
const CLIENT_SCHED = env('BENCH_CLIENT_SCHED', 'idle'); // "idle", or a nice value

const PARTICIPANTS_MAX = 500; // of one meeting (the API's bound)
const LEAD_MS = 15000;        // a reminder is due this long after its row is written
const SETTLE_MS = 30000;      // wait for stragglers after the last due time
const OPEN_WINDOW = 200;      // streams connecting at once while opening
const HEARTBEAT_MS = 20000;   // the server's default TOCSIN_STREAM_HEARTBEAT_MS
const WARM_PARALLEL = 64;     // requests at once to warm a fresh replica's HTTP threads
const WARM_ROUNDS = 5;
const CPU_LEAD_MS = 500;      // a fan-out's CPU is counted from this long before the due time
const LOAD_WARM_S = 3;        // the API load's uncounted first window in each storm

// ------------------------------------------------------------------ lateness

async function lateness(ctx) {
    const { reps, tenant } = ctx;
    const sub = 'lat-0001';
    const [token] = await tokensFor(reps[0].port, [sub]);
    const clients = reps.map((r) => new StreamClient({ port: r.port, token, sub, tag: r.i }));
    for (const c of clients) {
        c.keep = true;
        c.wantIds = true;
    }
    await openAll(clients);
    const head0 = await headSeq(tenant);
    machineNote();
    const t0 = Date.now() + LEAD_MS;
    const stepUs = Math.floor((SPREAD_S * 1e6) / DUE);
    const last = t0 + Math.floor(((DUE - 1) * stepUs) / 1000) + 1;
    await insertDue(tenant, [sub], DUE, t0, stepUs);
    log(`lateness: ${DUE} reminders due over ${SPREAD_S} s, one stream on each of ${reps.length} replicas`);
    await waitFor('the lateness reminders', () => Date.now() > last + SETTLE_MS ||
        (Date.now() > last && clients.every((c) => c.got.size >= DUE)), last + SETTLE_MS + 5000 - Date.now());
    const note = machineNote();
    const rows = await eventsAfter(tenant, head0, sub);
    const res = { rows: rows.length, same: [], other: [], lost: 0, foreign: 0, mismatch: 0, by: {}, engine: [] };
    for (const e of rows) {
        res.by[e.by] = (res.by[e.by] ?? 0) + 1;
        res.engine.push(e.fired - e.fire);
    }
    for (const c of clients) {
        const mine = `bench-${c.tag + 1}`;
        const seqs = new Set();
        for (const e of rows) {
            seqs.add(e.seq);
            const at = c.got.get(e.seq);
            if (at === undefined) {
                res.lost++;
                continue;
            }
            (e.by === mine ? res.same : res.other).push(at - e.fired);
            if (c.remOf.get(e.seq) !== e.rid) {
                res.mismatch++;
            }
        }
        for (const s of c.got.keys()) {
            res.foreign += seqs.has(s) ? 0 : 1;
        }
    }
    res.dups = sumOf(clients, (c) => c.dups);
    res.disorder = sumOf(clients, (c) => c.disorder);
    res.drops = sumOf(clients, (c) => c.drops);
    res.resets = sumOf(clients, (c) => c.resets.length);
    res.replayed = sumOf(clients, (c) => c.replayed);
    closeAll(clients);

    const all = res.same.concat(res.other);
    const out = [
        `\nstream lateness: recorded fired (stream_events.fired_at) to received, ms; ${DUE} reminders due over ${SPREAD_S} s,`,
        `${reps.length} replicas, one stream per replica for the reminders' participant (same machine, same clock)`,
        `  stream on            received  p50/p99/max`,
        `  the firing replica   ${String(res.same.length).padStart(8)}  ${q3(res.same)}`,
        `  another replica      ${String(res.other.length).padStart(8)}  ${q3(res.other)}`,
        `  all                  ${String(all.length).padStart(8)}  ${q3(all)}`,
        `  lost ${res.lost}, duplicated ${res.dups} (of ${rows.length} events x ${clients.length} streams; ${DUE - rows.length} reminders without an event)`,
        `  out of order ${res.disorder}, body id not the event's reminder ${res.mismatch}, events not expected ${res.foreign},` +
            ` reconnects ${res.drops} (replayed ${res.replayed}), resets ${res.resets}`,
        `  fired by: ${Object.entries(res.by).sort().map(([k, v]) => `${k} ${v}`).join(', ')}`,
        `  engine fire lateness (fired_at - fire_at) p50/p99/max: ${q3(res.engine)} ms`,
        `  ${note}`,
    ];
    return { out, bad: res.lost > 0 || res.dups > 0 || res.mismatch > 0 || res.foreign > 0 || rows.length < DUE };
}

// ------------------------------------------------------------------ fan-out

async function fanout(ctx) {
    const { reps, tenant } = ctx;
    const np = Math.ceil(STREAMS / EACH);
    if (np > PARTICIPANTS_MAX) {
        die(`BENCH_STREAMS ${STREAMS} needs ${np} participants at ${EACH} streams each; a meeting has at most ${PARTICIPANTS_MAX}`);
    }
    // A fresh process: nothing left from earlier scenarios in its heap or its hub.
    log(`fanout: restarting replica 1`);
    await stopReplica(reps[0]);
    const r = (reps[0] = await startReplica(0, reps[0].port));
    const pid = r.child.pid;
    const subs = subsOf('fan', np);
    const tokens = await tokensFor(r.port, subs);
    // Every HTTP thread opens its database and Redis connections on its first request: have them
    // all do so now, so that the difference below is the streams' alone.
    for (let k = 0; k < WARM_ROUNDS; k++) {
        await Promise.all(Array.from({ length: WARM_PARALLEL }, () => api(r.port, 'GET', '/v1/meetings?limit=1')));
    }
    await sleep(3000);
    const none = procStat(pid);
    log(`fanout: replica 1 idle without streams for ${IDLE_S} s`);
    await sleep(IDLE_S * 1000);
    const noneEnd = procStat(pid);

    const clients = clientsFor(subs, tokens, STREAMS, () => r.port);
    for (const c of clients) {
        c.keep = true;
    }
    log(`fanout: opening ${STREAMS} streams (${np} participants x ${EACH}) on replica 1`);
    const t0 = clock();
    await openAll(clients, { window: OPEN_WINDOW });
    const openMs = clock() - t0;
    const helloMs = Float64Array.from(clients, (c) => c.hellos[0].openMs).sort();
    await sleep(5000);
    const open = procStat(pid);
    machineNote();
    log(`fanout: ${STREAMS} idle streams for ${IDLE_S} s`);
    await sleep(IDLE_S * 1000);
    const openEnd = procStat(pid);
    const idleNote = machineNote();
    const server = await streamsOpen(r);

    const fires = [];
    let bad = false;
    for (let k = 0; k < FANOUT_FIRES; k++) {
        const head0 = await headSeq(tenant);
        const bytes0 = sumOf(clients, (c) => c.sock?.bytesRead ?? 0);
        let first = null, lastAt = 0, n = 0, cpuFirst = null, cpuLast = null;
        for (const c of clients) {
            c.onReminder = (cl, seq, at) => {
                if (seq <= head0) {
                    return;
                }
                n++;
                lastAt = Math.max(lastAt, at);
                if (first === null) {
                    first = at;
                    cpuFirst = process.cpuUsage();
                }
                if (n === clients.length) {
                    cpuLast = process.cpuUsage(cpuFirst);
                }
            };
        }
        const due = Date.now() + LEAD_MS;
        await insertDue(tenant, subs, 1, due, 0);
        machineNote();
        log(`fanout: reminder ${k + 1} of ${FANOUT_FIRES} to all ${STREAMS} streams`);
        await sleep(due - CPU_LEAD_MS - Date.now());
        const cpu0 = procStat(pid), w0 = Date.now();
        await waitFor('the fan-out', () => n >= clients.length || Date.now() > due + SETTLE_MS, CPU_LEAD_MS + SETTLE_MS + 5000).catch(() => {});
        const serverCpuMs = procStat(pid).cpuMs - cpu0.cpuMs, windowMs = Date.now() - w0;
        const note = machineNote();
        const [ev] = await eventsAfter(tenant, head0, subs[0]);
        const late = [];
        let lost = 0;
        for (const c of clients) {
            const at = ev ? c.got.get(ev.seq) : undefined;
            if (at === undefined) {
                lost++;
            } else {
                late.push(at - ev.fired);
            }
        }
        const bytes = sumOf(clients, (c) => c.sock?.bytesRead ?? 0) - bytes0;
        fires.push({ ev, late, lost, bytes, spanMs: first === null ? NaN : lastAt - first, serverCpuMs, windowMs, note,
            clientCpuMs: cpuLast ? (cpuLast.user + cpuLast.system) / 1000 : NaN, by: ev?.by });
        bad ||= lost > 0 || !ev;
        await sleep(2000);
    }
    const after = procStat(pid);
    const dups = sumOf(clients, (c) => c.dups);
    const drops = sumOf(clients, (c) => c.drops);
    const refused = sumOf(clients, (c) => c.refused.length);
    bad ||= dups > 0;

    // Clients that vanish: how long the replica keeps counting their streams.
    closeAll(clients);
    const tc = Date.now();
    let released = NaN;
    try {
        await waitFor('the closed streams to be released', async () => (await streamsOpen(r)) === 0, HEARTBEAT_MS + 15000);
        released = Date.now() - tc;
    } catch {
        released = NaN;
    }
    const left = await streamsOpen(r);

    const pct = (a, b, ms) => ((b.cpuMs - a.cpuMs) / ms) * 100;
    const out = [
        `\nfan-out: ${STREAMS} streams on one replica (${np} participants of one meeting x ${EACH} streams each,`,
        `TOCSIN_STREAMS_PER_PARTICIPANT=${EACH}), one reminder of that meeting to all of them`,
        `  opened in ${fmt(openMs / 1000, 1)} s (${fmt(STREAMS / (openMs / 1000))}/s, ${OPEN_WINDOW} connecting at once),` +
            ` request to hello p50/p99/max ${fmt(quantile(helloMs, 0.5), 1)}/${fmt(quantile(helloMs, 0.99), 1)}/${fmt(helloMs[helloMs.length - 1], 1)} ms;` +
            ` the replica counts ${server} open`,
        `  RSS: ${none.rss} KiB without streams, ${open.rss} KiB with ${STREAMS} (${openEnd.rss} KiB after ${IDLE_S} s idle,` +
            ` ${after.rss} KiB after the fan-outs): ${fmt(((open.rss - none.rss) * 1024) / STREAMS / 1024, 2)} KiB per stream`,
        `  CPU over ${IDLE_S} s: ${fmt(pct(none, noneEnd, IDLE_S * 1000), 2)}% of a core without streams,` +
            ` ${fmt(pct(open, openEnd, IDLE_S * 1000), 2)}% with ${STREAMS} idle streams` +
            ` (difference ${fmt(pct(open, openEnd, IDLE_S * 1000) - pct(none, noneEnd, IDLE_S * 1000), 2)}%; heartbeat every ${HEARTBEAT_MS / 1000} s);` +
            ` ${idleNote}`,
    ];
    for (const [k, f] of fires.entries()) {
        const s = Float64Array.from(f.late).sort();
        out.push(`  reminder ${k + 1}: recorded fired to received first/p50/p99/last ${fmt(s[0], 1)}/${fmt(quantile(s, 0.5), 1)}/` +
            `${fmt(quantile(s, 0.99), 1)}/${fmt(s[s.length - 1], 1)} ms; received by ${f.late.length} of ${STREAMS} (lost ${f.lost}),` +
            ` fired by ${f.by ?? '-'}, ${fmt(f.bytes / STREAMS)} bytes per stream; CPU: the client ${fmt(f.clientCpuMs)} ms in the ${fmt(f.spanMs)} ms` +
            ` from first to last receipt, replica 1 ${fmt(f.serverCpuMs)} ms in ${fmt(f.windowMs)} ms from ${CPU_LEAD_MS} ms before the due time;` +
            ` ${f.note}`);
    }
    out.push(`  duplicated ${dups}, reconnects ${drops}, refused ${refused}`);
    out.push(`  after the clients closed their sockets the replica counted their streams for ${Number.isNaN(released) ? `more than ${(HEARTBEAT_MS + 15000) / 1000} s (${left} left)` : `${fmt(released / 1000, 1)} s`}`);
    return { out, bad };
}

// ------------------------------------------------------------------ reconnect storm

// The API load's process (bench/stream_load.mjs): started once, before the storms lower this
// thread's priority (lowerPriority), and asked for one window at a time. run(port, path, seconds)
// resolves with the window's samples [scheduled ms, latency ms, status].
function startLoad() {
    const script = fileURLToPath(new URL('./stream_load.mjs', import.meta.url));
    const child = spawn(process.execPath, [script], {
        stdio: ['pipe', 'pipe', 'inherit'],
        env: { ...process.env, LOAD_TOKEN: API_KEY, LOAD_RATE: String(API_RATE), LOAD_CONNECTIONS: String(API_CONNECTIONS) },
    });
    const waiting = [];
    readline.createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.resolve(JSON.parse(line).samples));
    child.on('exit', (code, signal) => {
        for (const w of waiting.splice(0)) {
            w.reject(new Error(`stream_load.mjs exited (${code ?? signal})`));
        }
    });
    return {
        run: (port, path, seconds) => new Promise((resolve, reject) => {
            waiting.push({ resolve, reject });
            child.stdin.write(`${JSON.stringify({ port, path, seconds })}\n`);
        }),
        stop: () => child.stdin.end(),
    };
}

// The streams stand for browsers on other machines; here they share the replicas' two cores, and
// a client busy with 10,000 reconnects takes CPU from the replica and the API load alike (API p99
// during the missed-reminders storm 4.1-4.4x the baseline with its main thread at nice 0,
// 3.5-3.8x at 10). During the storms every thread of this process, which holds them, the V8
// helpers too (their collections of the streams' garbage took as much CPU as the main thread),
// runs at BENCH_CLIENT_SCHED, so the API figures measure the replica more than the client. "idle"
// (the default) is SCHED_IDLE: it runs only when nothing else wants the CPU, and any other thread
// that wakes takes the CPU from it at once, where a niced thread may keep it for the rest of its
// slice (a few ms). A number is a nice value instead. Linux sets both per thread, named by its id
// (setpriority(2), chrt(1)); a thread created later inherits its creator's. The replicas and the
// load process keep theirs.
function lowerPriority() {
    for (const tid of fs.readdirSync('/proc/self/task')) {
        if (CLIENT_SCHED === 'idle') {
            execFileSync('chrt', ['--idle', '--pid', '0', tid]);
        } else if (os.getPriority(Number(tid)) < Number(CLIENT_SCHED)) {
            os.setPriority(Number(tid), Number(CLIENT_SCHED));
        }
    }
}

// How lowerPriority left this thread, for the report.
const clientSched = () => (CLIENT_SCHED === 'idle' ? 'SCHED_IDLE' : `nice ${os.getPriority(0)}`);

// PostgreSQL's CPU time so far (ms): the postmaster's and its backends'.
function pgCpuMs() {
    return treeCpuMs(Number(fs.readFileSync(`${DIR}/pg/postmaster.pid`, 'latin1').split('\n')[0]));
}

// "n, p50/p99/max, errors" of load samples.
function loadStats(samples) {
    const lat = Float64Array.from(samples, (x) => x[1]).sort();
    return { n: samples.length, p50: quantile(lat, 0.5), p99: quantile(lat, 0.99), max: lat[lat.length - 1] ?? NaN,
        errors: samples.filter((x) => x[2] !== 200).length };
}

function loadLine(tag, st) {
    return `    ${tag.padEnd(44)} ${String(st.n).padStart(5)}  ${fmt(st.p50, 2)}/${fmt(st.p99, 2)}/${fmt(st.max, 2)}  errors ${st.errors}`;
}

// live: the storm's reminders fire while the streams move (each reaches most streams live, on
// whichever replica holds them); otherwise every stream is cut first, the reminders fire while
// they are away, and they reconnect with their cursors to get them all as a resume's backlog.
async function storm(ctx, live) {
    const { reps, tenant, load } = ctx;
    if (reps.length < 2) {
        die('the storm needs BENCH_REPLICAS >= 2: streams move from the others to the first');
    }
    if (ctx.stormClients) { // the other storm's streams leave replica 1 first
        closeAll(ctx.stormClients);
        await waitFor('replica 1 without streams', async () => (await streamsOpen(reps[0])) === 0, HEARTBEAT_MS + 15000);
    }
    lowerPriority();
    const tag = live ? 'storm' : 'storm (missed)';
    const np = Math.ceil(STREAMS / EACH);
    if (np > PARTICIPANTS_MAX) {
        die(`BENCH_STREAMS ${STREAMS} needs ${np} participants at ${EACH} streams each; a meeting has at most ${PARTICIPANTS_MAX}`);
    }
    const target = reps[0];
    const others = reps.slice(1);
    const subs = subsOf(live ? 'storm' : 'missed', np);
    const tokens = await tokensFor(target.port, subs);
    const meeting = await api(target.port, 'POST', '/v1/meetings', {
        title: 'API load', starts_at: new Date(Date.now() + 86400000).toISOString(),
        participants: [{ id: 'api-0001' }, { id: 'api-0002' }, { id: 'api-0003' }], reminders: [],
    });
    const apiPath = `/v1/meetings/${meeting.id}`;

    const clients = clientsFor(subs, tokens, STREAMS, (k) => others[k % others.length].port);
    for (const c of clients) {
        c.keep = true;
    }
    log(`${tag}: opening ${STREAMS} streams on replica${others.length > 1 ? 's' : ''} ${others.map((r) => r.i + 1).join(', ')}`);
    await openAll(clients, { window: OPEN_WINDOW });

    // One reminder first, so that every cursor is a reminder's id.
    let head0 = await headSeq(tenant);
    await insertDue(tenant, subs, 1, Date.now() + LEAD_MS, 0);
    log(`${tag}: a first reminder to every stream`);
    await waitFor('the first reminder', () => clients.every((c) => c.got.size >= 1), LEAD_MS + SETTLE_MS);
    head0 = await headSeq(tenant);

    // A first window, not counted: the load process's first requests run cold (its code not yet
    // compiled), which would make the baseline slower than the windows after it.
    await load.run(target.port, apiPath, LOAD_WARM_S);

    // The storm's reminders are written now (the scheduler wants them a few seconds ahead); the
    // baseline runs meanwhile. Live, they fall due during the storm; missed, just after the
    // baseline, with every stream cut.
    const start = Date.now() + Math.max(LEAD_MS, STORM_S * 1000 + 4000);
    for (let k = 0; k < STORM_REMINDERS; k++) {
        const at = live ? start + Math.round(((k + 1) * STORM_S * 1000) / (STORM_REMINDERS + 1)) : start - 2000 + k * 100;
        await insertDue(tenant, subs, 1, at, 0);
    }
    log(`${tag}: baseline, ${STORM_S} s of GET ${apiPath} at ${API_RATE}/s on replica 1`);
    const cpuB0 = procStat(target.child.pid), pgB0 = pgCpuMs();
    machineNote();
    const baseline = await load.run(target.port, apiPath, STORM_S);
    const cpuB = procStat(target.child.pid).cpuMs - cpuB0.cpuMs, pgB = pgCpuMs() - pgB0;
    const baseNote = machineNote();
    if (!live) {
        log(`${tag}: every stream cut; ${STORM_REMINDERS} reminders fire while they are away`);
        for (const c of clients) {
            c.cut();
        }
        await waitFor('the missed reminders fired', async () =>
            (await eventsAfter(tenant, head0, subs[0])).length >= STORM_REMINDERS, LEAD_MS + SETTLE_MS);
    }
    await sleep(start - Date.now());

    log(`${tag}: ${STREAMS} streams ${live ? 'cut and ' : ''}reconnected to replica 1 over ${STORM_S} s, same load`);
    const cpuS0 = procStat(target.child.pid), pgS0 = pgCpuMs();
    const loading = load.run(target.port, apiPath, STORM_S);
    const order = clients.map((c, k) => k);
    for (let k = order.length - 1; k > 0; k--) {
        const j = Math.floor(Math.random() * (k + 1));
        [order[k], order[j]] = [order[j], order[k]];
    }
    const t0 = clock();
    const cutAt = new Float64Array(clients.length);
    let done = 0;
    await new Promise((resolve) => {
        const tick = () => {
            const due = Math.min(order.length, Math.floor(((clock() - t0) / (STORM_S * 1000)) * order.length) + 1);
            for (; done < due; done++) {
                const c = clients[order[done]];
                cutAt[order[done]] = clock();
                if (live) {
                    c.cut();
                }
                c.connect(target.port);
            }
            if (done < order.length) {
                setTimeout(tick, 5);
            } else {
                resolve();
            }
        };
        tick();
    });
    const cutsMs = clock() - t0;
    const during = await loading;
    const cpuS = procStat(target.child.pid).cpuMs - cpuS0.cpuMs, pgS = pgCpuMs() - pgS0;
    const stormNote = machineNote();
    await waitFor('every stream back with every reminder', () =>
        clients.every((c) => c.hellos.length >= 2 && c.got.size >= 1 + STORM_REMINDERS), 60000).catch((e) => log(e.message));
    // The same load once more with the streams idle on replica 1: a second quiet window shows how
    // far this machine's own noise moves the p99 between two windows without a storm.
    log(`${tag}: after it, ${STORM_S} s of the same load with the streams idle on replica 1`);
    const after = await load.run(target.port, apiPath, STORM_S);

    const rows = await eventsAfter(tenant, head0, subs[0]);
    let lost = 0;
    for (const c of clients) {
        for (const e of rows) {
            lost += c.got.has(e.seq) ? 0 : 1;
        }
    }
    const back = clients.filter((c) => c.hellos.length >= 2);
    const reconnectMs = Float64Array.from(back, (c) => c.hellos[1].at - cutAt[c.tag]).sort();
    const lastBack = back.reduce((a, c) => Math.max(a, c.hellos[1].at), 0) - t0;
    const resumed = back.filter((c) => c.hellos[1].resumed).length;
    const dups = sumOf(clients, (c) => c.dups);
    const resets = sumOf(clients, (c) => c.resets.length);
    const refused = sumOf(clients, (c) => c.refused.length);
    const drops = sumOf(clients, (c) => c.drops);
    const replayed = sumOf(clients, (c) => c.replayed);
    const liveGot = sumOf(clients, (c) => [...c.got.keys()].filter((s) => s > head0).length) - replayed;
    // Each storm reminder's fan-out, from recorded fired to the last live receipt (not a replay
    // on a later resume): which API requests overlapped one.
    const windows = rows.map((e) => [e.fired, clients.reduce((a, c) =>
        (c.viaReplay.has(e.seq) ? a : Math.max(a, c.got.get(e.seq) ?? 0)), 0)]);
    // Cut to hello by the second of the storm in which the cut fell.
    const bySecond = Array.from({ length: Math.ceil(cutsMs / 1000) }, () => []);
    for (const c of back) {
        bySecond[Math.min(bySecond.length - 1, Math.floor((cutAt[c.tag] - t0) / 1000))].push(c.hellos[1].at - cutAt[c.tag]);
    }
    const overlaps = (x) => windows.some(([a, b]) => x[0] <= b && x[0] + x[1] >= a);
    const base = loadStats(baseline), storm = loadStats(during), quiet = loadStats(after);
    ctx.stormClients = clients; // open until the replicas stop: SIGTERM with them open
    const bad = lost > 0 || dups > 0 || resets > 0 || rows.length < STORM_REMINDERS || back.length < clients.length;
    const out = [
        `\n${live ? 'reconnect storm' : 'reconnect storm after missed reminders'}: ${STREAMS} streams (${np} participants x ${EACH}) on replica${others.length > 1 ? 's' : ''} ${others.map((x) => x.i + 1).join(', ')},` +
            (live ? ` each cut at a random moment of ${STORM_S} s and reconnected to replica 1 with its cursor;` +
                ` ${STORM_REMINDERS} reminders to all of them fire during the storm`
                : ` all cut, ${STORM_REMINDERS} reminders to all of them fired while they were away, then each reconnected` +
                ` to replica 1 with its cursor at a random moment of ${STORM_S} s`),
        `  ${live ? 'cuts' : 'reconnects'} done over ${fmt(cutsMs / 1000, 1)} s; back ${back.length} of ${clients.length}, resumed ${resumed}, the last ${fmt(lastBack / 1000, 1)} s after the first;` +
            ` ${live ? 'cut' : 'connect'} to hello p50/p99/max ${fmt(quantile(reconnectMs, 0.5), 1)}/${fmt(quantile(reconnectMs, 0.99), 1)}/${fmt(reconnectMs[reconnectMs.length - 1], 1)} ms`,
        `  ${live ? 'cut' : 'connect'} to hello p99 by second of the storm: ${bySecond.map((a) => fmt(quantile(Float64Array.from(a).sort(), 0.99))).join(' ')} ms` +
            (live ? `; fan-outs (fired to last live receipt): ${windows.map(([a, b]) => `${fmt((a - t0) / 1000, 1)} s +${fmt(b - a)} ms`).join(', ')}` : ''),
        `  storm reminders: ${rows.length} of ${STORM_REMINDERS} fired (by ${rows.map((e) => e.by).join(', ')}); lost ${lost}, duplicated ${dups} of ${rows.length * clients.length};` +
            ` received live ${liveGot}, replayed on resume ${replayed}; resets ${resets}, refused ${refused}, other reconnects ${drops}`,
        `  API: GET /v1/meetings/{id} on replica 1 at ${API_RATE}/s over ${API_CONNECTIONS} keep-alive connections (bench/stream_load.mjs);` +
            ` the stream client at ${clientSched()},`,
        `  latency from each request's scheduled time, ms:                 requests  p50/p99/max`,
        loadLine(`baseline (${STREAMS} idle streams on the others)`, base),
        loadLine('during the storm', storm),
        loadLine('  of which overlapping a reminder\'s fan-out', loadStats(during.filter(overlaps))),
        loadLine('  the others', loadStats(during.filter((x) => !overlaps(x)))),
        loadLine(`after (${STREAMS} idle streams on replica 1)`, quiet),
        `    p99 storm / baseline: ${fmt(storm.p99 / base.p99, 2)}x (storm / after: ${fmt(storm.p99 / quiet.p99, 2)}x, after / baseline:` +
            ` ${fmt(quiet.p99 / base.p99, 2)}x); replica 1 CPU ${fmt(cpuB)} ms in the baseline, ${fmt(cpuS)} ms in the storm (${STORM_S} s each),` +
            ` PostgreSQL ${fmt(pgB)} and ${fmt(pgS)} ms`,
        `  baseline ${baseNote}`,
        `  storm ${stormNote}`,
    ];
    return { out, bad: bad || base.errors > 0 || storm.errors > 0 || quiet.errors > 0, ratio: storm.p99 / base.p99 };
}

// ------------------------------------------------------------------ main

async function main() {
    if (!DB_URL || !REDIS_PORT || !BIN || !API_KEY) {
        die('needs BENCH_DB_URL, BENCH_REDIS_PORT, TOCSIN_BIN and BENCH_TOKEN (run bench/stream.sh)');
    }
    const tenant = Number(await psql(`SELECT id FROM tenants WHERE name = 'bench'`));
    // Which replica fired each event: the inserting session's application_name (see the header).
    await psql(`ALTER TABLE stream_events ADD COLUMN IF NOT EXISTS bench_fired_by text
        DEFAULT current_setting('application_name')`);
    const reps = [];
    for (let i = 0; i < REPLICAS; i++) {
        reps.push(await startReplica(i, await freePort()));
    }
    const ctx = { reps, tenant, load: startLoad() };
    const stopAll = () => {
        for (const r of reps) {
            if (!r.exited) {
                r.child.kill('SIGKILL');
            }
        }
    };
    process.on('exit', stopAll);
    const results = [];
    const clientCpu0 = process.cpuUsage();
    try {
        for (const [name, fn] of [['lateness', lateness], ['fanout', fanout], ['storm_missed', (c) => storm(c, false)],
            ['storm', (c) => storm(c, true)]]) {
            if (!SCENARIOS.includes(name)) {
                continue;
            }
            if (!name.startsWith('storm') || STORM_ROUNDS <= 1) {
                results.push(await fn(ctx));
                continue;
            }
            const ratios = [];
            for (let k = 0; k < STORM_ROUNDS; k++) {
                const r = await fn(ctx);
                results.push(r);
                ratios.push(r.ratio);
            }
            const sorted = [...ratios].sort((a, b) => a - b);
            results.push({
                out: [`\n${name}: API p99 storm / baseline over ${STORM_ROUNDS} rounds: ${ratios.map((x) => `${fmt(x, 2)}x`).join(', ')};` +
                    ` median ${fmt(quantile(Float64Array.from(sorted), 0.5), 2)}x`],
                bad: false,
            });
        }
    } finally {
        const open = await Promise.all(reps.map((r) => streamsOpen(r).catch(() => NaN)));
        if (ctx.stormClients) {
            for (const c of ctx.stormClients) {
                c.keep = false;
            }
        }
        const stops = [];
        for (const r of reps) {
            stops.push(await stopReplica(r));
        }
        if (ctx.stormClients) {
            closeAll(ctx.stormClients);
        }
        ctx.load.stop();
        results.push({
            out: [`\nshutdown (SIGTERM): ${stops.map((s, i) => `replica ${i + 1} with ${open[i]} streams: exit ${s.code ?? s.signal} in ${fmt(s.ms / 1000, 1)} s`).join('; ')}`],
            bad: stops.some((s) => s.code !== 0),
        });
    }
    const cpu = process.cpuUsage(clientCpu0);
    for (const r of results) {
        console.log(r.out.join('\n'));
    }
    console.log(`\nthe bench client's own CPU time: ${fmt((cpu.user + cpu.system) / 1e6, 1)} s; replica logs in ${DIR}`);
    process.exit(results.some((r) => r.bad) ? 1 : 0);
}

main().catch((e) => die(e.stack || String(e)));
