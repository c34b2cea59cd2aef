// bench/inbox.mjs -- the measurements of bench/inbox.sh against the replica it started: inbox
// reads of a tenant with BENCH_EVENTS stream events (p50/p99 of BENCH_ROUNDS reads one after
// another) against the same read in a tenant without events, and another tenant's live-stream
// lateness (meeting created -> frame received) alone and while BENCH_LOOPERS clients of the big
// tenant loop stream resumes. Configured by the environment bench/inbox.sh exports.
import http from 'node:http';
import fs from 'node:fs';
import { execFile } from 'node:child_process';

const env = (name, def) => process.env[name] ?? def;
const URL_BASE = env('BENCH_URL');
const KEY_D = env('BENCH_KEY_D');
const KEY_E = env('BENCH_KEY_E');
const EVENTS = Number(env('BENCH_EVENTS', '1000000'));
const MEETINGS = Number(env('BENCH_MEETINGS', '200'));
const ROUNDS = Number(env('BENCH_ROUNDS', '200'));
const LIVE = Number(env('BENCH_LIVE', '40'));
const LOOPERS = Number(env('BENCH_LOOPERS', '4'));
const PARTICIPANTS = 5000;   // the adversarial test's: each event has 30 of them
const P1_BACKLOG_SEQS = 150000; // p1 is in one event of ~167: a cursor this far back replays ~900
const NO_INDEX_ROUNDS = 5;   // reads without the index take seconds each
const LIVE_GAP_MS = 250;
const FRAME_TIMEOUT_MS = 20000;

const log = (msg) => process.stderr.write(`==> ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function psql(sql) {
    return new Promise((resolve, reject) => {
        execFile(env('BENCH_PSQL'), ['-X', '-qAt', '-v', 'ON_ERROR_STOP=1', env('BENCH_DB_URL'), '-c', sql],
            { maxBuffer: 64 << 20 }, (err, stdout, stderr) => (err ? reject(new Error(`${sql.slice(0, 80)}: ${stderr}`)) : resolve(stdout.trim())));
    });
}

async function api(method, path, key, json) {
    const r = await fetch(URL_BASE + path, {
        method,
        headers: { Authorization: `Bearer ${key}`, ...(json ? { 'Content-Type': 'application/json' } : {}) },
        body: json ? JSON.stringify(json) : undefined,
    });
    const text = await r.text();
    if (r.status >= 300) {
        throw new Error(`${method} ${path}: ${r.status} ${text.slice(0, 200)}`);
    }
    return JSON.parse(text);
}

const token = async (key, sub) => (await api('POST', '/v1/browser-tokens', key, { sub, scope: 'notifications' })).token;
const pct = (v, p) => v[Math.min(v.length - 1, Math.floor(p * v.length))];
const sorted = (v) => [...v].sort((a, b) => a - b);

// p50 and p99 of n inbox reads one after another, in ms.
async function inboxTimes(tok, n) {
    const ms = [];
    for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await api('GET', '/v1/me/notifications', tok);
        ms.push(performance.now() - t0);
    }
    const s = sorted(ms);
    return { p50: pct(s, 0.5), p99: pct(s, 0.99), n };
}

// An SSE stream: calls onFrame({event, id, data}) per block; resolves with a close function.
function openStream(tok, lastEventId, onFrame) {
    return new Promise((resolve, reject) => {
        const headers = { Authorization: `Bearer ${tok}`, Accept: 'text/event-stream' };
        if (lastEventId !== undefined) {
            headers['Last-Event-ID'] = String(lastEventId);
        }
        const req = http.get(`${URL_BASE}/v1/stream`, { headers, agent: false }, (res) => {
            if (res.statusCode !== 200) {
                res.resume();
                resolve({ status: res.statusCode, close: () => req.destroy() });
                return;
            }
            let buf = '';
            res.setEncoding('utf8');
            res.on('data', (chunk) => {
                buf += chunk;
                let i;
                while ((i = buf.indexOf('\n\n')) >= 0) {
                    const block = buf.slice(0, i);
                    buf = buf.slice(i + 2);
                    const f = { event: null, id: null, data: null };
                    for (const line of block.split('\n')) {
                        const m = /^(event|id|data): ?(.*)$/.exec(line);
                        if (m) {
                            f[m[1]] = m[2];
                        }
                    }
                    onFrame(f);
                }
            });
            res.on('error', () => {});
            resolve({ status: 200, close: () => req.destroy() });
        });
        req.on('error', (e) => (e.code === 'ECONNRESET' ? undefined : reject(e)));
    });
}

// A client that resumes from cursor, waits for its hello or reset, closes, and again, until
// stop() is called. Counts the resumes.
function looper(tok, cursor) {
    let running = true;
    const state = { resumes: 0, refused: 0 };
    const done = (async () => {
        while (running) {
            let first;
            const got = new Promise((r) => { first = r; });
            const s = await openStream(tok, cursor, (f) => {
                if (f.event === 'hello' || f.event === 'reset') {
                    first();
                }
            });
            if (s.status !== 200) {
                state.refused++;
                await sleep(50);
                continue;
            }
            await got;
            s.close();
            state.resumes++;
        }
    })();
    return { state, stop: async () => { running = false; await done; } };
}

// Lateness of LIVE reminders of tenant e's participant on one stream: meeting created -> frame.
// startLoad (optional) runs once the stream is open and returns what stops the load.
async function liveLateness(startLoad = async () => async () => {}) {
    const tok = await token(KEY_E, 'live');
    const waiting = new Map();
    const early = new Map(); // frames that came before their POST's answer did
    const s = await openStream(tok, undefined, (f) => {
        if (f.event !== 'reminder') {
            return;
        }
        const id = JSON.parse(f.data).data.meeting.id;
        const w = waiting.get(id);
        if (w) {
            w(performance.now());
        } else {
            early.set(id, performance.now());
        }
    });
    if (s.status !== 200) {
        throw new Error(`the live stream was refused: ${s.status}`);
    }
    const stopLoad = await startLoad();
    const ms = [];
    for (let i = 0; i < LIVE; i++) {
        let arrived;
        const frame = new Promise((r) => { arrived = r; });
        const t0 = performance.now();
        const m = await api('POST', '/v1/meetings', KEY_E, {
            title: `live ${i}`, starts_at: new Date(Date.now() + 120000).toISOString(),
            participants: [{ id: 'live' }], reminders: [{ minutes_before: 5 }],
        });
        waiting.set(m.id, arrived);
        if (early.has(m.id)) {
            arrived(early.get(m.id));
        }
        const at = await Promise.race([frame, sleep(FRAME_TIMEOUT_MS).then(() => null)]);
        if (at === null) {
            throw new Error(`live reminder ${i} did not arrive within ${FRAME_TIMEOUT_MS} ms`);
        }
        ms.push(at - t0);
        await sleep(LIVE_GAP_MS);
    }
    await stopLoad();
    s.close();
    const v = sorted(ms);
    return { p50: pct(v, 0.5), p99: pct(v, 0.99), max: v.at(-1) };
}

// The execution time of the inbox's statement as main had it before migration 017 (the tenant's
// primary-key range, the audience tested on each row), NO_INDEX_ROUNDS runs through psql.
async function oldStatement() {
    const d = await psql("SELECT id FROM tenants WHERE name = 'd'");
    const ms = [];
    for (let i = 0; i < NO_INDEX_ROUNDS; i++) {
        const plan = await psql(`EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM (SELECT e.seq FROM stream_events e
            WHERE e.tenant_id = ${d} AND e.audience @> ARRAY['ghost'] ORDER BY e.seq DESC LIMIT 50) x ORDER BY 1`);
        ms.push(JSON.parse(plan)[0]['Execution Time']);
    }
    const v = sorted(ms);
    return { p50: pct(v, 0.5), p99: pct(v, 0.99) };
}

// The live stream is opened first: the loopers' closed connections count against the address's
// bound until the replica notices them (about a second), and would crowd it out.
async function liveWhile(loopers) {
    let ls = [];
    const r = await liveLateness(async () => {
        ls = loopers.map(([tok, cursor]) => looper(tok, cursor));
        await sleep(1000);
        return async () => {
            for (const l of ls) {
                await l.stop();
            }
        };
    });
    r.resumes = ls.reduce((a, l) => a + l.state.resumes, 0);
    r.refused = ls.reduce((a, l) => a + l.state.refused, 0);
    return r;
}

async function load() {
    const ids = [];
    const participants = Array.from({ length: 30 }, (_, k) => ({ id: `p${k + 1}` }));
    for (let i = 0; i < MEETINGS; i++) {
        ids.push((await api('POST', '/v1/meetings', KEY_D, {
            title: `m${i}`, starts_at: '2099-01-01T10:00:00Z', participants, reminders: [],
        })).id);
    }
    const index = /CREATE INDEX stream_events_audience[^;]*;/.exec(fs.readFileSync('migrations/017_stream_audience.sql', 'utf8'))[0];
    const d = await psql("SELECT id FROM tenants WHERE name = 'd'");
    await psql('DROP INDEX stream_events_audience');
    let t0 = performance.now();
    await psql(`INSERT INTO stream_events (tenant_id, seq, reminder_id, fire_at, fired_at, meeting_id, audience)
        SELECT ${d}, g, g, now(), now(), ('{${ids.join(',')}}'::uuid[])[1 + g % ${MEETINGS}],
               ARRAY(SELECT 'p' || ((g * 7 + k) % ${PARTICIPANTS}) FROM generate_series(1, 30) k)
        FROM generate_series(1, ${EVENTS}) g;
        INSERT INTO stream_heads (tenant_id, seq) VALUES (${d}, ${EVENTS})
        ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq`);
    const loadS = (performance.now() - t0) / 1000;
    t0 = performance.now();
    await psql(index);
    const indexS = (performance.now() - t0) / 1000;
    await psql('VACUUM ANALYZE stream_events');
    const size = await psql("SELECT pg_size_pretty(pg_table_size('stream_events')) || ' + index ' || pg_size_pretty(pg_relation_size('stream_events_audience'))");
    return { loadS, indexS, size, index };
}

const row = (label, r, base) => console.log(`${label.padEnd(58)} ${r.p50.toFixed(1).padStart(9)} ${r.p99.toFixed(1).padStart(9)}` +
    (base ? `   p99 ${(r.p99 / base.p99).toFixed(2)}x the baseline` : ''));

log(`loading ${EVENTS} events of tenant d over ${MEETINGS} meetings`);
const l = await load();
const [ghostD, p1D, ghostE] = [await token(KEY_D, 'ghost'), await token(KEY_D, 'p1'), await token(KEY_E, 'ghost')];
log('inbox reads');
await inboxTimes(ghostD, 5); // warm the connection's statements
const base = await inboxTimes(ghostE, ROUNDS);
const ghost = await inboxTimes(ghostD, ROUNDS);
const busy = await inboxTimes(p1D, ROUNDS);
log('live lateness, alone and under resume loops');
const quiet = await liveLateness();
const ghostLoops = await liveWhile(Array.from({ length: LOOPERS }, () => [ghostD, 1]));
const busyLoops = await liveWhile(Array.from({ length: LOOPERS }, () => [p1D, EVENTS - P1_BACKLOG_SEQS]));
log("the ghost inbox's statement as it was before migration 017");
const noIndex = await oldStatement(ghostD);

console.log();
console.log(`tenant d: ${EVENTS} events (${l.size}), written in ${l.loadS.toFixed(1)} s; audience index built in ${l.indexS.toFixed(1)} s`);
console.log(`${'GET /v1/me/notifications (ms)'.padEnd(58)} ${'p50'.padStart(9)} ${'p99'.padStart(9)}`);
row('ghost, tenant e without events (baseline)', base);
row(`ghost, tenant d (${EVENTS} events)`, ghost, base);
row('p1, tenant d (in ~6,000 events)', busy, base);
row(`ghost, tenant d, main's statement in psql (${NO_INDEX_ROUNDS} runs)`, noIndex, base);
console.log(`${'tenant e live lateness, created -> frame (ms)'.padEnd(58)} ${'p50'.padStart(9)} ${'p99'.padStart(9)} ${'max'.padStart(9)}`);
const live = (label, r) => console.log(`${label.padEnd(58)} ${r.p50.toFixed(1).padStart(9)} ${r.p99.toFixed(1).padStart(9)} ${r.max.toFixed(1).padStart(9)}` +
    (r.resumes !== undefined ? `   ${r.resumes} resumes, ${r.refused} refused` : ''));
live('alone (baseline)', quiet);
live(`${LOOPERS} tenant-d clients looping resumes, ghost from cursor 1`, ghostLoops);
live(`${LOOPERS} tenant-d clients looping resumes, p1 ~900 events back`, busyLoops);
console.log(`worst p99 under loops - alone: ${(Math.max(ghostLoops.p99, busyLoops.p99) - quiet.p99).toFixed(1)} ms`);
