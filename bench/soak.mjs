// bench/soak.mjs -- the soak under faults that bench/soak.sh sets up: 3 replicas (one straight to
// PostgreSQL, two through PgBouncer; all of them through the fault proxy, to Redis too), a steady
// mixed load for SOAK_MINUTES while a fault schedule drawn from SOAK_SEED runs, then the ledger
// (bench/soak_ledger.mjs) checked against the receivers and PostgreSQL. Exit 1 on any violation.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

import { PushService } from '../tests/api/pushservice.mjs';
import { SmtpServer } from '../tests/api/smtp.mjs';
import { FaultProxy } from './soak_proxy.mjs';
import { Receiver, StreamFollower } from './soak_rx.mjs';
import { BASE_MS, Ledger, LOOKAHEAD_MS, REPAIR_MS, check, circuitsOf, keyOf, rxRuns, totals } from './soak_ledger.mjs';

const env = (n, d) => process.env[n] ?? d;
const MINUTES = Number(env('SOAK_MINUTES', '2'));
const SEED = Number(env('SOAK_SEED', '1'));
const DIR = env('SOAK_DIR');
const BIN = env('TOCSIN_BIN');
const PSQL = env('SOAK_PSQL');
const API_KEY = env('SOAK_TOKEN');
const PG_PORT = Number(env('SOAK_PG_PORT'));
const BOUNCER_PORT = Number(env('SOAK_BOUNCER_PORT'));
const REDIS_PORT = Number(env('SOAK_REDIS_PORT'));
const HTTP_BASE = Number(env('SOAK_HTTP_BASE'));
const DB = 'tocsin';
const WRAP = env('SOAK_WRAP', ''); // setarch -R when the sanitizer runtime needs it here

const REPLICAS = 3;
const PORT_RANGE = 30; // the ports from HTTP_BASE the soak may take
const PORTS = { replicas: [] };

function portFree(port) {
    return new Promise((resolve) => {
        const srv = net.createServer();
        srv.once('error', () => resolve(false));
        srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
}

// The soak's ports, each the next free one from HTTP_BASE: the range lies in Linux's ephemeral
// one, where another program's outgoing connection may hold any port for a while. A replica keeps
// its port across its restarts (the streams and the load name it).
async function allocPorts() {
    let p = HTTP_BASE;
    const next = async () => {
        while (!(await portFree(p))) {
            if (++p >= HTTP_BASE + PORT_RANGE) throw new Error(`no free port left in ${HTTP_BASE}..${HTTP_BASE + PORT_RANGE - 1}`);
        }
        return p++;
    };
    for (let i = 0; i < 3; i++) PORTS.replicas.push(await next());
    for (const name of ['rx', 'smtp', 'pg', 'bouncer', 'redis']) PORTS[name] = await next();
}
const PARTICIPANTS = 4;
const MARGIN_MS = 25000; // no reminder is written, moved or taken away this close to its due time
const SPAN_MS = 4 * 60000; // how far past the margin a new reminder's due time may lie
const INSIDE_SHARE = 0.8; // of new reminders due inside the load
const TICK_MS = 1000; // one load action per tick
const FAULT_GAP_MS = 14000; // mean time between fault starts (exponential), overlaps allowed
const FAULT_HEAD_MS = 15000; // no fault before this into the run; none starts in the last 20 s
const FAULT_TAIL_MS = 20000;
const API_RETRY_MS = 120000; // an API call is retried (another replica, same idempotency key) this long
const KILL_DOWN_MS = 2000; // a killed replica stays down this long
const REDIS_DOWN_MS = 10000;
const RX_FAULT_MS = 12000; // a receiver answering 500 or hanging
const PROXY_DELAY_MS = 300; // per chunk, for PROXY_FAULT_MS
const PROXY_FAULT_MS = 10000;
const PROXY_STALL_MS = 6000;
const DRAIN_MAX_MS = 150000; // after the load: wait at most this for what is still due
const SETTLE_MS = 5000; // then this, so the record holds the last deliveries
const WEEK_MIN = 7 * 24 * 60;
const DAY_MIN = 24 * 60;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (m) => process.stderr.write(`==> ${new Date().toISOString().slice(11, 19)} ${m}\n`);

// mulberry32: a small seeded generator, so a seed replays the same schedule and load choices.
function rng(seed) {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}
const loadRand = rng(SEED * 2 + 1);
const pick = (r, a) => a[Math.floor(r() * a.length)];
const between = (r, lo, hi) => lo + Math.floor(r() * (hi - lo));

function sh(fn, ...args) {
    return new Promise((resolve, reject) => {
        execFile('bash', ['-c', `. bench/lib.sh && ${fn} "$@"`, 'soak', ...args], { timeout: 120000 },
            (err, stdout, stderr) => (err ? reject(new Error(`${fn}: ${stderr || err.message}`)) : resolve(stdout)));
    });
}

function psql(sql) {
    return new Promise((resolve, reject) => {
        execFile(PSQL, [`postgresql://postgres@127.0.0.1:${PG_PORT}/${DB}`, '-v', 'ON_ERROR_STOP=1', '-qtAc', sql],
            { maxBuffer: 256 << 20 }, (err, out, stderr) => (err ? reject(new Error(`psql: ${stderr || err}`)) : resolve(out.trim())));
    });
}

// ------------------------------------------------------------------ replicas

const replicas = [];
const crashes = [];

function replicaEnv(i, smtpUrl) {
    const pooled = i > 0; // replica 1 straight to PostgreSQL, 2 and 3 through PgBouncer
    const dbPort = pooled ? PORTS.bouncer : PORTS.pg;
    return {
        ...process.env,
        TOCSIN_HTTP_ADDR: `127.0.0.1:${PORTS.replicas[i]}`,
        TOCSIN_DATABASE_URL: `postgresql://postgres@127.0.0.1:${dbPort}/${DB}?application_name=soak-${i + 1}`,
        TOCSIN_DB_POOLED: pooled ? '1' : '0',
        TOCSIN_MIGRATE_ON_START: '0',
        TOCSIN_DB_WAIT_S: '120',
        TOCSIN_REDIS_URL: `redis://127.0.0.1:${PORTS.redis}/0`,
        TOCSIN_REDIS_PREFIX: 'soak',
        TOCSIN_INSTANCE_ID: `soak-${i + 1}`,
        TOCSIN_LOG_LEVEL: 'warn',
        TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
        TOCSIN_WEBPUSH_ALLOW_PRIVATE: '1',
        TOCSIN_SMTP_URL: smtpUrl,
        TOCSIN_SMTP_FROM: 'soak@example.com',
        TOCSIN_DELIVERY_RETRY_BASE_MS: '1000',
        TOCSIN_DELIVERY_TIMEOUT_MS: '3000',
        TOCSIN_STREAM_MAX_AGE_S: '60', // streams end and resume during the run, by design
    };
}

async function startReplica(i, smtpUrl) {
    const out = fs.openSync(`${DIR}/replica-${i + 1}.log`, 'a');
    const [cmd, ...pre] = WRAP ? [...WRAP.split(' '), BIN] : [BIN];
    const child = spawn(cmd, [...pre, 'serve'], { stdio: ['ignore', out, out], env: replicaEnv(i, smtpUrl) });
    fs.closeSync(out);
    const r = { i, port: PORTS.replicas[i], child, up: false, exited: null, killed: false };
    child.on('exit', (code, signal) => {
        r.exited = { code, signal };
        r.up = false;
        // Killed by the schedule is a fault; any other end but a clean exit on SIGTERM is a finding
        // (a crash, a sanitizer's report).
        if (!r.killed && !(r.stopping && code === 0)) crashes.push(`replica ${i + 1} (pid ${child.pid}) ended ${signal ?? `with exit ${code}`}${r.stopping ? ' when stopped' : ' by itself'}`);
    });
    replicas[i] = r;
    const end = Date.now() + 120000;
    while (Date.now() < end && !r.exited) {
        if (await fetch(`http://127.0.0.1:${r.port}/readyz`).then((x) => x.ok, () => false)) {
            r.up = true;
            return r;
        }
        await sleep(200);
    }
    throw new Error(`replica ${i + 1} not ready (see ${DIR}/replica-${i + 1}.log)`);
}

async function stopReplica(r, signal = 'SIGTERM') {
    if (!r || r.exited) return;
    r.killed = signal === 'SIGKILL';
    r.stopping = true;
    const gone = new Promise((res) => r.child.once('exit', res));
    r.child.kill(signal);
    await gone;
}

// ------------------------------------------------------------------ the API, through any replica

const apiFailures = [];

// One API call, retried on another replica while the answer is a network error, a 5xx, a 409
// (an idempotent create still in flight) or a 429. The same Idempotency-Key on every try.
async function api(method, path, body, { token = API_KEY, idem, okStatus = [] } = {}) {
    const end = Date.now() + API_RETRY_MS;
    const ctype = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
    let turn = Math.floor(Math.random() * REPLICAS);
    let last = '';
    while (Date.now() < end) {
        const r = replicas[turn++ % REPLICAS];
        if (!r || !r.up) {
            await sleep(100);
            continue;
        }
        const headers = { authorization: `Bearer ${token}`, 'content-type': ctype };
        if (idem) headers['idempotency-key'] = idem;
        try {
            const res = await fetch(`http://127.0.0.1:${r.port}${path}`, {
                method, headers, body: body === undefined ? undefined : JSON.stringify(body),
                signal: AbortSignal.timeout(15000),
            });
            const text = await res.text();
            if (res.ok || okStatus.includes(res.status)) return { status: res.status, body: text ? JSON.parse(text) : null };
            last = `${res.status} ${text.slice(0, 200)}`;
            if (res.status < 500 && res.status !== 409 && res.status !== 429) break;
        } catch (e) {
            last = String(e.message ?? e);
        }
        await sleep(300);
    }
    apiFailures.push(`${method} ${path}: ${last}`);
    throw new Error(`${method} ${path}: ${last}`);
}

// ------------------------------------------------------------------ the world

const ledger = new Ledger(0);
const live = { singles: [], series: [] }; // meeting ids
const counts = { create: 0, series: 0, move: 0, override: 0, cancel: 0, delete: 0, skipped: 0 };
let serial = 0;
let participants = [];

const ALL = ['webhook', 'stream', 'push', 'email'];
const iso = (ms) => new Date(ms).toISOString();

function entriesOfSingle(m) {
    return m.reminders.filter((r) => r.status !== 'cancelled').map((r) => ({
        key: keyOf(r.id, Date.parse(r.fire_at)), rid: r.id, fireMs: Date.parse(r.fire_at), meeting: m.id,
        occ: null, minutes: r.minutes_before, channels: r.channels ?? ALL, startsMs: Date.parse(m.starts_at),
    }));
}

// A series' keys from the API's own occurrence listing: every occurrence not cancelled, each
// reminder that has its row (an id).
async function entriesOfSeries(id, fromMs) {
    const out = [];
    let cursor = null;
    do {
        const q = `from=${iso(fromMs)}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const page = (await api('GET', `/v1/meetings/${id}/occurrences?${q}`)).body;
        for (const o of page.items) {
            if (o.cancelled) continue;
            for (const r of o.reminders) {
                if (r.id === null || r.status === 'cancelled') continue;
                out.push({
                    key: keyOf(r.id, Date.parse(r.fire_at)), rid: r.id, fireMs: Date.parse(r.fire_at), meeting: id,
                    occ: o.original_start, minutes: r.minutes_before, channels: r.channels ?? ALL, startsMs: Date.parse(o.starts_at),
                });
            }
        }
        cursor = page.next_cursor;
    } while (cursor);
    return out;
}

function participantFor() {
    const p = pick(loadRand, participants);
    return [{ id: p.id, name: p.id, email: `${p.id}@example.com` }];
}

// A start time whose every reminder (offsets in minutes) is due at least MARGIN_MS from now: most
// of them inside the load (so the ledger expects them), the others after it (none may come early).
function startFor(offsets, now) {
    const lo = now + MARGIN_MS + Math.max(...offsets) * 60000;
    const hi = Math.min(lo + SPAN_MS, ledger.loadEnd + Math.min(...offsets) * 60000);
    if (hi > lo && loadRand() < INSIDE_SHARE) return between(loadRand, lo, hi);
    return Math.max(lo, ledger.loadEnd + Math.max(...offsets) * 60000) + between(loadRand, 60000, 10 * 60000);
}

async function createSingle(now) {
    const offsets = [pick(loadRand, [1, 2, 3, 5])];
    if (loadRand() < 0.4) offsets.push(offsets[0] + between(loadRand, 1, 4));
    const n = ++serial;
    const body = {
        title: `soak ${n}`, starts_at: iso(startFor(offsets, now)), participants: participantFor(),
        reminders: offsets.map((m) => ({ minutes_before: m, channels: ALL })),
    };
    const m = (await api('POST', '/v1/meetings', body, { idem: `soak-${SEED}-${n}` })).body;
    ledger.observe(m.id, entriesOfSingle(m), now, 'created');
    live.singles.push(m.id);
    counts.create++;
}

// A daily or weekly series with a short offset and one a day (or a week) and a minute long: the
// long one of the first occurrence is already past (it fires at once), the next occurrence's is
// due a minute before the first one starts.
async function createSeries(now) {
    const daily = loadRand() < 0.6;
    const long = (daily ? DAY_MIN : WEEK_MIN) + 1;
    const short = pick(loadRand, [1, 2, 3]);
    const n = ++serial;
    const body = {
        title: `soak series ${n}`, starts_at: iso(startFor([short, 1], now)), time_zone: pick(loadRand, ['UTC', 'Europe/Berlin', 'America/New_York']),
        participants: participantFor(), recurrence: { rrule: daily ? 'FREQ=DAILY;COUNT=5' : 'FREQ=WEEKLY;COUNT=3' },
        reminders: [{ minutes_before: short, channels: ALL }, { minutes_before: long, channels: ALL }],
    };
    const m = (await api('POST', '/v1/meetings', body, { idem: `soak-${SEED}-${n}` })).body;
    ledger.observe(m.id, await entriesOfSeries(m.id, now - 3600000), now, 'created');
    live.series.push(m.id);
    counts.series++;
}

function settledPick(list, now) {
    const ok = list.filter((id) => ledger.settled(id, now, MARGIN_MS));
    return ok.length ? pick(loadRand, ok) : null;
}

// Runs change(id) on a settled meeting of list, which no other change may pick until it is done.
async function changeOne(list, now, change) {
    const id = settledPick(list, now);
    if (!id) return void counts.skipped++;
    ledger.begin(id);
    try {
        await change(id);
    } finally {
        ledger.end(id);
    }
}

async function moveSingle(now) {
    await changeOne(live.singles, now, async (id) => {
        const offsets = [...(ledger.state.get(id)?.values() ?? [])].map((e) => e.minutes);
        const starts = startFor(offsets.length ? offsets : [1], now);
        const m = (await api('PATCH', `/v1/meetings/${id}`, { starts_at: iso(starts) })).body;
        ledger.observe(id, entriesOfSingle(m), now, 'moved');
        counts.move++;
    });
}

async function overrideOccurrence(now) {
    await changeOne(live.series, now, async (id) => {
        // Only an occurrence whose every reminder is still ahead: moving one whose long reminder has
        // fired already would make a new key with its fire time past (fired at once, a second time).
        const entries = [...ledger.state.get(id).values()];
        const occs = [...new Set(entries.map((e) => e.occ))].filter((o) => entries.every((e) => e.occ !== o || e.fireMs > now + MARGIN_MS));
        if (occs.length === 0) return void counts.skipped++;
        const occ = pick(loadRand, occs);
        const cancel = loadRand() < 0.3;
        const patch = cancel ? { cancelled: true } : { starts_at: iso(Date.parse(occ) + between(loadRand, 1, 4) * 60000) };
        await api('PATCH', `/v1/meetings/${id}/occurrences/${occ}`, patch);
        ledger.observe(id, await entriesOfSeries(id, now - 3600000), now, cancel ? 'cancelled' : 'moved');
        counts[cancel ? 'cancel' : 'override']++;
    });
}

async function deleteMeeting(now) {
    const list = loadRand() < 0.7 ? live.singles : live.series;
    await changeOne(list, now, async (id) => {
        await api('DELETE', `/v1/meetings/${id}`, undefined, { okStatus: [404] });
        list.splice(list.indexOf(id), 1);
        ledger.observe(id, [], now, 'deleted');
        counts.delete++;
    });
}

const ACTIONS = [[0.45, createSingle], [0.15, createSeries], [0.15, moveSingle], [0.12, overrideOccurrence], [0.13, deleteMeeting]];

async function loadLoop(loadEnd) {
    const inflight = new Set();
    while (Date.now() + MARGIN_MS < loadEnd) {
        const x = loadRand();
        let acc = 0;
        const [, action] = ACTIONS.find(([w]) => (acc += w) > x) ?? ACTIONS[0];
        // Reminders are never written past the end of the load: a start too late is left out.
        const p = action(Date.now()).catch((e) => log(`load: ${e.message}`));
        inflight.add(p);
        p.finally(() => inflight.delete(p));
        await sleep(TICK_MS);
    }
    await Promise.all(inflight);
}

// ------------------------------------------------------------------ faults

const KINDS = ['kill9', 'redis-stop', 'redis-empty', 'flushall', 'pg-restart', 'rx-500', 'rx-hang', 'proxy-delay', 'proxy-stall', 'proxy-cut'];
const RESOURCE = {
    kill9: 'replica', 'redis-stop': 'redis', 'redis-empty': 'redis', flushall: 'redis', 'pg-restart': 'pg',
    'rx-500': 'rx', 'rx-hang': 'rx', 'proxy-delay': 'proxy', 'proxy-stall': 'proxy', 'proxy-cut': 'proxy',
};

// The schedule: start times with exponential gaps, kinds in seeded shuffled rounds (every kind
// once per round), each fault postponed while one on the same resource is still running.
function schedule(seed, runMs) {
    const r = rng(seed);
    const out = [];
    let round = [];
    let t = FAULT_HEAD_MS;
    const busy = {};
    for (;;) {
        t += Math.round(-Math.log(1 - r()) * FAULT_GAP_MS);
        if (round.length === 0) round = [...KINDS].sort(() => r() - 0.5);
        const kind = round.pop();
        const at = Math.max(t, busy[RESOURCE[kind]] ?? 0);
        if (at > runMs - FAULT_TAIL_MS) break;
        const target = kind === 'kill9' ? between(r, 0, REPLICAS) : null;
        const proxy = kind.startsWith('proxy') ? pick(r, ['pg', 'bouncer', 'redis', 'all']) : null;
        out.push({ kind, at, target, proxy });
        busy[RESOURCE[kind]] = at + 20000;
    }
    return out;
}

async function runFault(f, world) {
    const rec = { kind: f.kind, start: Date.now(), end: null, detail: f.target !== null ? `replica ${f.target + 1}` : f.proxy ?? '' };
    world.faults.push(rec);
    log(`fault ${f.kind} ${rec.detail}`);
    const redisDir = `${DIR}/redis`;
    const proxies = f.proxy === 'all' ? Object.values(world.proxies) : f.proxy ? [world.proxies[f.proxy]] : [];
    switch (f.kind) {
    case 'kill9':
        await stopReplica(replicas[f.target], 'SIGKILL');
        await sleep(KILL_DOWN_MS);
        await startReplica(f.target, world.smtp.url);
        break;
    case 'redis-stop':
        await sh('tocsin_redis_stop', redisDir);
        await sleep(REDIS_DOWN_MS);
        await sh('tocsin_redis_start', redisDir, String(REDIS_PORT));
        break;
    case 'redis-empty':
        await sh('tocsin_redis_stop', redisDir);
        await sh('tocsin_redis_start', redisDir, String(REDIS_PORT));
        break;
    case 'flushall':
        await new Promise((res) => execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(REDIS_PORT), 'flushall'], res));
        break;
    case 'pg-restart':
        await sh('tocsin_pg_stop', `${DIR}/pg`);
        await sh('tocsin_pg_start', `${DIR}/pg`, String(PG_PORT), 'fsync = off', 'max_connections = 200');
        break;
    case 'rx-500':
    case 'rx-hang':
        world.rx.mode = f.kind === 'rx-500' ? '500' : 'hang';
        await sleep(RX_FAULT_MS);
        world.rx.mode = 'ok';
        break;
    case 'proxy-delay':
        for (const p of proxies) p.delay(PROXY_DELAY_MS);
        await sleep(PROXY_FAULT_MS);
        for (const p of proxies) p.delay(0);
        break;
    case 'proxy-stall':
        for (const p of proxies) p.stall(PROXY_STALL_MS);
        await sleep(PROXY_STALL_MS);
        break;
    case 'proxy-cut':
        for (const p of proxies) p.cut();
        break;
    }
    rec.end = Date.now();
}

async function faultLoop(plan, t0, world) {
    const running = [];
    for (const f of plan) {
        const wait = t0 + f.at - Date.now();
        if (wait > 0) await sleep(wait);
        running.push(runFault(f, world).catch((e) => { world.faultErrors.push(`${f.kind}: ${e.message}`); log(`fault ${f.kind} failed: ${e.message}`); }));
    }
    await Promise.all(running);
}

// ------------------------------------------------------------------ setup and the end

async function setupTenant(world) {
    const ok = (await api('POST', '/v1/webhooks', { url: `http://127.0.0.1:${PORTS.rx}/ok`, description: 'soak healthy' })).body;
    const never = (await api('POST', '/v1/webhooks', { url: `http://127.0.0.1:${PORTS.rx}/never`, description: 'soak never answers' })).body;
    world.webhooks = { ok: ok.id, never: never.id };
    for (let k = 1; k <= PARTICIPANTS; k++) {
        const id = `soak-p${k}`;
        const { token } = (await api('POST', '/v1/browser-tokens', { sub: id, scope: 'notifications push', ttl_s: 86400 })).body;
        const sub = world.push.subscribe();
        await api('POST', '/v1/push/subscriptions', sub.json, { token });
        const follower = new StreamFollower(PORTS.replicas, token, id).start();
        participants.push({ id, token, sub, follower });
    }
}

function receiptsOf(world) {
    const add = (map, key, r) => { if (!key) return; if (!map.has(key)) map.set(key, []); map.get(key).push(r); };
    const rc = { webhook: new Map(), stream: new Map(), push: new Map(), email: new Map() };
    for (const g of world.rx.got) add(rc.webhook, g.id, { at: g.at, status: g.status, path: g.path, meeting: g.body?.data?.meeting?.id });
    for (const p of participants) for (const g of p.follower.got) add(rc.stream, g.id, { at: g.at, sub: p.id, seq: g.seq });
    for (const g of world.push.all) add(rc.push, g.message?.id, { at: g.at, error: g.error, meeting: g.message?.meeting_id });
    for (const msg of world.smtp.messages()) {
        const h = msg.headers.find(([k]) => k.toLowerCase() === 'message-id');
        const id = h && /^<(rem_\d+_\d+)\./.exec(h[1])?.[1];
        add(rc.email, id, { at: msg.received_at_ms });
    }
    return rc;
}

async function recordOf() {
    const rids = [...new Set([...ledger.expect.values(), ...ledger.gone.values(), ...ledger.beyond.values()].map((e) => e.rid))];
    const list = `ARRAY[${rids.join(',') || '0'}]::bigint[]`;
    const ms = (c) => `(extract(epoch FROM ${c}) * 1000)::bigint`;
    const reminders = new Map();
    for (const line of (await psql(`SELECT id, ${ms('fire_at')}, status FROM reminders WHERE id = ANY(${list})`)).split('\n').filter(Boolean)) {
        const [id, fire, status] = line.split('|');
        reminders.set(keyOf(id, fire), status);
    }
    const outbox = new Map();
    for (const line of (await psql(`SELECT reminder_id, ${ms('fire_at')}, channel, target, status FROM outbox WHERE reminder_id = ANY(${list})`)).split('\n').filter(Boolean)) {
        const [rid, fire, channel, target, status] = line.split('|');
        const k = `${keyOf(rid, fire)}|${channel}`;
        if (!outbox.has(k)) outbox.set(k, { rows: 0, delivered: 0, byTarget: new Map(), deliveredTo: new Set() });
        const o = outbox.get(k);
        o.rows++;
        o.byTarget.set(target, (o.byTarget.get(target) ?? 0) + 1);
        if (status === 'delivered') { o.delivered++; o.deliveredTo.add(target); }
    }
    const events = new Map();
    for (const line of (await psql(`SELECT reminder_id, ${ms('fire_at')}, count(*) FROM stream_events WHERE kind = 0 AND reminder_id = ANY(${list}) GROUP BY 1, 2`)).split('\n').filter(Boolean)) {
        const [rid, fire, n] = line.split('|');
        events.set(keyOf(rid, fire), Number(n));
    }
    return { reminders, outbox, events };
}

// Waits until every expected reminder has arrived on its channels, or DRAIN_MAX_MS.
async function drain(world) {
    const end = Date.now() + DRAIN_MAX_MS;
    while (Date.now() < end) {
        const rc = receiptsOf(world);
        const missing = [...ledger.expect.values()].filter((e) => e.channels.some((ch) => !(rc[ch].get(e.key) ?? []).some((r) => ch !== 'webhook' || (r.path === '/ok' && r.status === 204))));
        if (missing.length === 0) return;
        await sleep(1000);
    }
}

function report(world, result, t) {
    const lines = [];
    const put = (s) => lines.push(s);
    put(`soak: seed ${SEED}, ${MINUTES} min of load, ${REPLICAS} replicas (1 direct, 2 through PgBouncer), all through the fault proxy`);
    put(`load: ${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')}; API calls given up: ${apiFailures.length}`);
    const byKind = {};
    for (const f of world.faults) byKind[f.kind] = (byKind[f.kind] ?? 0) + 1;
    put(`faults: ${KINDS.map((k) => `${k} ${byKind[k] ?? 0}`).join(', ')}`);
    for (const f of world.faults) put(`  fault ${f.kind} ${f.detail} at +${((f.start - t.t0) / 1000).toFixed(1)} s for ${(((f.end ?? f.start) - f.start) / 1000).toFixed(1)} s`);
    for (const e of world.faultErrors) put(`  fault error: ${e}`);
    put(`checked: ${ledger.expect.size} reminders due in the run on ${ALL.length} channels each (webhook, stream, push, email), ` +
        `${ledger.gone.size} taken away (moved, cancelled, deleted: none may come), ${ledger.beyond.size} due after the run (none may come early); ` +
        `the record: each fired, one outbox row per target and channel, one stream event`);
    const atOnce = [...ledger.expect.values()].filter((e) => e.atOnce);
    put(`fired at once: ${atOnce.length} of those (a series' long reminder of its first occurrence, its fire time already past when written; ` +
        `its key keeps that fire time: ${atOnce.slice(0, 2).map((e) => `${e.key} = ${e.minutes} min before ${e.occ}`).join(', ') || 'none'})`);
    put(`bounds: base ${Object.entries(BASE_MS).map(([k, v]) => `${k} ${v / 1000} s`).join(', ')}; a fault met (due from ${LOOKAHEAD_MS / 1000} s before it to its repair after it) adds the time it lasted past the due time and its repair (receiver faults close together count as one run for the rows' backoff, webhook only): ` +
        `${Object.entries(REPAIR_MS).map(([k, v]) => `${k} ${v / 1000} s`).join(', ')}`);
    const longest = Math.max(0, ...world.circuits.map((c) => c.ms));
    put(`circuits of /ok the replicas logged opening (a webhook row pending meanwhile may wait until one half-opens and its probe is answered): ${world.circuits.length}, the longest ${longest / 1000} s`);
    const runs = rxRuns(world.faults).filter((r) => r.kinds.length > 1);
    put(`receiver fault runs (one for the rows' backoff): ${runs.map((r) => `${r.kinds.join('+')} at +${((r.start - t.t0) / 1000).toFixed(1)} s for ${((r.end - r.start) / 1000).toFixed(1)} s`).join(', ') || 'none'}`);
    for (const ch of ALL) {
        const s = Float64Array.from(result.lateness[ch]).sort();
        const q = (p) => (s.length ? s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] : NaN);
        put(`lateness ${ch}: n ${s.length}, p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${s.length ? s[s.length - 1] : NaN} ms`);
    }
    const streams = participants.map((p) => `${p.id} ${p.follower.connects} connects${p.follower.resets.length ? `, ${p.follower.resets.length} resets` : ''}`);
    put(`streams: ${streams.join('; ')}`);
    for (const p of participants) for (const x of p.follower.resets) result.violations.push({ key: '-', meeting: '-', due: '-', channel: 'stream', what: `reset: cursor ${x.lastId} not honoured at ${iso(x.at)}` });
    for (const a of apiFailures) result.violations.push({ key: '-', meeting: '-', due: '-', channel: 'api', what: `api: ${a}` });
    const tt = totals(result);
    put(`violations: ${result.violations.length}`);
    for (const v of result.violations) put(`  ${v.key} meeting ${v.meeting} due ${v.due} ${v.channel}: ${v.what}`);
    put(`${tt.n} reminders, lost ${tt.lost}, twice ${tt.twice}, early ${tt.early}` +
        ` (late ${tt.late}, taken away yet delivered ${tt.gone}, unexpected ${tt.unexpected}, other ${tt.other})`);
    put(`faults run: ${KINDS.filter((k) => byKind[k]).map((k) => `${k} x${byKind[k]}`).join(', ')}`);
    const text = `${lines.join('\n')}\n`;
    fs.writeFileSync(`${DIR}/report.txt`, text);
    process.stdout.write(text);
    return result.violations.length === 0;
}

async function main() {
    const runMs = MINUTES * 60000;
    const plan = schedule(SEED, runMs);
    log(`seed ${SEED}: ${plan.length} faults planned: ${plan.map((f) => `${f.kind}@${Math.round(f.at / 1000)}s`).join(' ')}`);
    await allocPorts();
    const world = { faults: [], faultErrors: [], proxies: {} };
    worldOfSignal = world;
    world.proxies.pg = await new FaultProxy('pg', PORTS.pg, PG_PORT).start();
    world.proxies.bouncer = await new FaultProxy('bouncer', PORTS.bouncer, BOUNCER_PORT).start();
    world.proxies.redis = await new FaultProxy('redis', PORTS.redis, REDIS_PORT).start();
    world.rx = await new Receiver(PORTS.rx).start();
    world.push = await new PushService().start();
    fs.mkdirSync(`${DIR}/smtp`, { recursive: true });
    world.smtp = await new SmtpServer(PORTS.smtp, `${DIR}/smtp`).start();
    let ok = false;
    try {
        for (let i = 0; i < REPLICAS; i++) await startReplica(i, world.smtp.url);
        await setupTenant(world);
        const t0 = Date.now();
        ledger.loadEnd = t0 + runMs;
        log(`load for ${MINUTES} min`);
        await Promise.all([loadLoop(t0 + runMs), faultLoop(plan, t0, world)]);
        log('load done; draining');
        await drain(world);
        await sleep(SETTLE_MS);
        await world.push.checkAll();
        for (const p of participants) p.follower.close();
        for (const r of replicas) await stopReplica(r);
        // The circuits of /ok that the replicas logged opening bound its late deliveries.
        const logs = replicas.map((r) => fs.readFileSync(`${DIR}/replica-${r.i + 1}.log`, 'utf8'));
        world.circuits = circuitsOf(logs, world.webhooks.ok);
        const result = check(ledger, receiptsOf(world), await recordOf(), world.faults, world.webhooks, world.circuits);
        for (const c of crashes) result.violations.push({ key: '-', meeting: '-', due: '-', channel: 'replica', what: c });
        ok = report(world, result, { t0 });
    } finally {
        for (const p of participants) p.follower.close();
        for (const r of replicas) await stopReplica(r);
        await world.rx.stop();
        await world.push.stop();
        await world.smtp.stop();
        for (const p of Object.values(world.proxies)) await p.stop();
    }
    process.exit(ok ? 0 : 1);
}

// Stopped from outside (bench/soak.sh's trap, the suite's timeout): end every child now, by PID.
let worldOfSignal = null;
for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, () => {
        for (const r of replicas) if (r && !r.exited) r.child.kill('SIGKILL');
        if (worldOfSignal?.smtp?.child) worldOfSignal.smtp.child.kill('SIGTERM');
        for (const p of participants) p.follower.close();
        log(`stopped by ${sig}`);
        process.exit(sig === 'SIGTERM' ? 143 : 130);
    });
}

main().catch((e) => {
    log(`soak failed: ${e.stack ?? e}`);
    process.exit(2);
});
