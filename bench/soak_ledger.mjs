// bench/soak_ledger.mjs -- the soak's ledger (bench/soak.sh): every reminder occurrence the API's
// answers say will fire inside the run, every one a change took away (moved, cancelled, deleted),
// and at the end the check of what the receivers got and what PostgreSQL records against it.
// A key is the occurrence id tocsin puts on every channel: rem_<reminder id>_<fire_at ms>.
// The bounds (docs/soak.md) are here, each a named constant.

// Lateness allowed with no fault, per channel, on a shared, loaded machine (an ASan build).
export const BASE_MS = { webhook: 5000, stream: 5000, push: 5000, email: 8000 };
// What each fault may add on top of the time it lasted after the reminder was due: the repair
// (claim TTL 2 s + reconciler 1 s + delivery lease 1.5 s, a reconnect's backoff, a retry's).
export const REPAIR_MS = {
    kill9: 10000, 'redis-stop': 10000, 'redis-empty': 8000, flushall: 8000, 'pg-restart': 20000,
    'rx-500': 10000, 'rx-hang': 10000, 'proxy-delay': 10000, 'proxy-stall': 10000, 'proxy-cut': 10000,
};
// A receiver fault delays a webhook row by the row's own backoff: its retries back off (doubling
// from 1 s, 20 % jitter), so its first attempt after the fault may come as long after the fault's
// end as the row had been failing: up to BACKOFF_FACTOR times the fault's time past the due time.
export const BACKOFF_FACTOR = 2.4;
// Faults that touch only the webhook receiver.
const RX_FAULTS = new Set(['rx-500', 'rx-hang']);
// And by the receiver's circuits (one per delivery worker and receiver: 5 s after 5 failures,
// doubling with each failed probe), which the bound takes from the replicas' logs, not from a
// model: a row pending while a circuit for /ok was open may wait until that circuit half-opens
// and its probe (PROBE_TIMEOUT_MS when it hangs) has been answered (circuitsOf, boundOf).
// Receiver faults close together are one run for the backoff: a row failing in one may still be
// backing off when the next starts. A fault joins the run of the one before when it starts within
// that one's length, the first opening and a hanging probe's timeout after its end (not the whole
// run's length: that chains every receiver fault of a 30-minute schedule into one). A run is met
// like one fault from its first start to its last end.
export const CIRCUIT_OPEN_MS = 5000;
export const PROBE_TIMEOUT_MS = 3000;
// A fault starting up to this before a due time may already hold its reminder (the scheduler
// reads 10 s ahead, a claim or lease taken just before the fault).
export const LOOKAHEAD_MS = 12000;
// A delivery up to this much before its fire time is early (receipt times are taken by this
// process on the same clock; tocsin fires at due + 1 ms at the earliest).
export const EARLY_SLACK_MS = 0;

export const CHANNELS = ['webhook', 'stream', 'push', 'email'];

export function keyOf(rid, fireMs) {
    return `rem_${rid}_${fireMs}`;
}

export class Ledger {
    constructor(loadEndMs) {
        this.loadEnd = loadEndMs;
        this.expect = new Map(); // key -> entry
        this.beyond = new Map(); // key -> entry: due after the load, must not come early
        this.gone = new Map(); // key -> { ...entry, reason, at }: must never come
        this.state = new Map(); // meeting id -> Map(key -> entry), its last known keys
        this.meetings = new Map(); // meeting id -> { kind, participant }
        this.busy = new Set(); // meeting ids with a change in flight
    }

    // A change to a meeting runs from begin to end; no other change may pick it meanwhile (the
    // load runs its actions concurrently, and a delete still in flight, slowed by a fault, would
    // otherwise leave its meeting to a move or an override that then finds it gone: a 404).
    begin(meetingId) {
        this.busy.add(meetingId);
    }

    end(meetingId) {
        this.busy.delete(meetingId);
    }

    // The keys the API now shows for a meeting (one per reminder occurrence with a row), after a
    // write at writeAt: new ones are expected (or beyond the run), those no longer shown and not
    // yet due are gone for `reason`.
    observe(meetingId, entries, writeAt, reason) {
        const before = this.state.get(meetingId) ?? new Map();
        const now = new Map();
        for (const e of entries) {
            now.set(e.key, e);
            if (before.has(e.key) || this.expect.has(e.key) || this.beyond.has(e.key)) continue;
            // Created with its fire time past, for an occurrence not started: fires at once.
            e.atOnce = e.fireMs < writeAt;
            e.dueMs = Math.max(e.fireMs, writeAt);
            e.writeAt = writeAt;
            (e.dueMs <= this.loadEnd ? this.expect : this.beyond).set(e.key, e);
        }
        for (const [key, e] of before) {
            if (now.has(key) || e.fireMs <= writeAt) continue;
            this.expect.delete(key);
            this.beyond.delete(key);
            this.gone.set(key, { ...e, reason, at: writeAt });
        }
        this.state.set(meetingId, now);
    }

    // The keys of a meeting that are not due yet (by writeAt + margin) block a change: the
    // ledger only changes reminders that cannot be firing while it does. So does a change in
    // flight.
    settled(meetingId, nowMs, marginMs) {
        if (this.busy.has(meetingId)) return false;
        for (const e of (this.state.get(meetingId) ?? new Map()).values()) {
            const due = e.dueMs ?? e.fireMs;
            if (due > nowMs - marginMs && due < nowMs + marginMs) return false;
        }
        return true;
    }
}

// The receiver faults of a run as one fault (see CIRCUIT_OPEN_MS), in order of start, each with
// the kinds it is made of.
export function rxRuns(faults) {
    const runs = [];
    for (const f of faults.filter((x) => RX_FAULTS.has(x.kind)).sort((a, b) => a.start - b.start)) {
        const end = f.end ?? Infinity;
        const last = runs[runs.length - 1];
        if (last && f.start <= last.end + last.lastLength + CIRCUIT_OPEN_MS + PROBE_TIMEOUT_MS) {
            last.end = Math.max(last.end, end);
            last.lastLength = end - f.start;
            last.repair = Math.max(last.repair, REPAIR_MS[f.kind]);
            last.kinds.push(f.kind);
        } else {
            const lastLength = end - f.start;
            runs.push({ start: f.start, end, lastLength, repair: REPAIR_MS[f.kind], kinds: [f.kind] });
        }
    }
    return runs;
}

// tocsin's line when a worker's circuit for a receiver opens (src/delivery/deliver_record.c), in
// the text log format: time, level, then the message.
const CIRCUIT_LINE = /^(\S+) \S+ deliver: receiver (\S+) failed \d+ times in a row; circuit open for (\d+) ms/;

// The openings of the circuits for `receiver` (a webhook id) that the logs (the replicas' texts)
// report: [{ at, ms }] in order of time, any worker of any replica.
export function circuitsOf(logs, receiver) {
    const out = [];
    for (const text of logs) {
        for (const line of text.split('\n')) {
            const m = CIRCUIT_LINE.exec(line);
            if (m && m[2] === receiver) out.push({ at: Date.parse(m[1]), ms: Number(m[3]) });
        }
    }
    return out.sort((a, b) => a.at - b.at);
}

// The bound of one expected delivery on a channel, first received at firstAt: the base plus, for
// each fault it met, the time the fault lasted after the due time and that fault's repair; for a
// run of receiver faults (the webhook only), the row's backoff through it; and on the webhook, for
// each circuit of circuitsOf open while the row was pending (opened before firstAt, not closed by
// LOOKAHEAD_MS before its due time), until that circuit half-opened and its probe was answered.
export function boundOf(e, channel, faults, circuits = [], firstAt = Infinity) {
    let extra = 0;
    const met = [];
    for (const f of faults) {
        if (RX_FAULTS.has(f.kind)) continue;
        const end = f.end ?? Infinity;
        if (e.dueMs < f.start - LOOKAHEAD_MS || e.dueMs > end + REPAIR_MS[f.kind]) continue;
        extra = Math.max(extra, Math.max(0, end - Math.max(e.dueMs, f.start)) + REPAIR_MS[f.kind]);
        met.push(f.kind);
    }
    for (const r of channel === 'webhook' ? rxRuns(faults) : []) {
        if (e.dueMs < r.start - LOOKAHEAD_MS || e.dueMs > r.end + r.repair) continue;
        const during = Math.max(0, r.end - Math.max(e.dueMs, r.start));
        extra = Math.max(extra, during * BACKOFF_FACTOR + r.repair);
        met.push(r.kinds.join('+'));
    }
    for (const c of channel === 'webhook' ? circuits : []) {
        if (c.at > firstAt || c.at + c.ms < e.dueMs - LOOKAHEAD_MS) continue;
        extra = Math.max(extra, c.at + c.ms + PROBE_TIMEOUT_MS - e.dueMs);
        met.push(`circuit ${c.ms / 1000} s`);
    }
    return { ms: BASE_MS[channel] + extra, met };
}

// receipts: { webhook: Map(key -> [{at, status, path}]), stream: Map(key -> [{at, sub}]),
// push: Map(key -> [{at, error}]), email: Map(key -> [{at}]) }; record: the database's view,
// { reminders: Map(key -> status), outbox: Map(`${key}|${channel}` -> {rows, delivered,
// byTarget: Map(target -> count)}), events: Map(key -> count) }; webhooks: { ok, never } target
// ids; circuits: the openings of /ok's circuits (circuitsOf). Returns { checked, violations:
// [{ key, meeting, due, channel, what }], lateness }.
export function check(ledger, receipts, record, faults, webhooks, circuits = []) {
    const violations = [];
    const lateness = { webhook: [], stream: [], push: [], email: [] };
    const flag = (e, channel, what) => violations.push({
        key: e.key, meeting: e.meeting, due: new Date(e.dueMs ?? e.fireMs).toISOString(), channel, what,
    });
    for (const e of ledger.expect.values()) {
        // A single meeting's reminder is one row that a later move takes on to its next time: the
        // row shows this key only while the meeting's last known state still has it.
        e.current = ledger.state.get(e.meeting)?.has(e.key) ?? false;
        checkExpected(e, receipts, record, { faults, circuits }, webhooks, flag, lateness);
    }
    for (const e of ledger.gone.values()) {
        for (const ch of CHANNELS) {
            const got = receipts[ch].get(e.key) ?? [];
            if (got.length > 0) flag(e, ch, `${e.reason}: delivered ${got.length}x for a time taken away at ${new Date(e.at).toISOString()}`);
        }
        if ((record.events.get(e.key) ?? 0) > 0) flag(e, 'record', `${e.reason}: a stream event recorded`);
    }
    for (const e of ledger.beyond.values()) {
        for (const ch of CHANNELS) {
            const early = (receipts[ch].get(e.key) ?? []).filter((r) => r.at < e.fireMs - EARLY_SLACK_MS);
            if (early.length > 0) flag(e, ch, `early: ${e.fireMs - early[0].at} ms before its fire time`);
        }
    }
    // Whatever arrived that the ledger never heard of: a reminder of nothing the API answered.
    const known = (k) => ledger.expect.has(k) || ledger.gone.has(k) || ledger.beyond.has(k);
    for (const ch of CHANNELS) {
        for (const [k, rs] of receipts[ch]) {
            if (!known(k)) violations.push({ key: k, meeting: rs[0].meeting ?? '?', due: '?', channel: ch, what: `unexpected: ${rs.length}x, in no answer of the API` });
        }
    }
    return { checked: ledger.expect.size, violations, lateness };
}

function checkExpected(e, receipts, record, { faults, circuits }, webhooks, flag, lateness) {
    for (const ch of e.channels) {
        let got = receipts[ch].get(e.key) ?? [];
        if (ch === 'webhook') got = got.filter((r) => r.path === '/ok' && r.status === 204);
        if (ch === 'push') {
            const bad = got.filter((r) => r.error);
            if (bad.length > 0) flag(e, ch, `push message not decryptable or VAPID bad: ${bad[0].error}`);
        }
        if (ch === 'stream' && got.length > 1) flag(e, ch, `twice: the stream carried it ${got.length}x (resume must give each once)`);
        if (got.length === 0) {
            flag(e, ch, `lost: never received (record: reminder ${record.reminders.get(e.key) ?? 'no row'}, ${rowsText(record, e.key, ch)}; on the wire: ${wire(receipts[ch].get(e.key), e.dueMs)})`);
            continue;
        }
        const first = Math.min(...got.map((r) => r.at));
        if (first < e.fireMs - EARLY_SLACK_MS) flag(e, ch, `early: ${e.fireMs - first} ms before its fire time`);
        const late = first - e.dueMs;
        lateness[ch].push(late);
        const bound = boundOf(e, ch, faults, circuits, first);
        if (late > bound.ms) flag(e, ch, `late: ${late} ms, bound ${Math.round(bound.ms)} ms (faults met: ${bound.met.join(' ') || 'none'}; on the wire: ${wire(receipts[ch].get(e.key), e.dueMs)})`);
    }
    checkRecord(e, record, webhooks, flag);
}

// Every arrival of a key on a channel, relative to its due time: "+1.2 s 500 /ok, ...".
function wire(rs, dueMs) {
    return (rs ?? []).map((r) => `+${((r.at - dueMs) / 1000).toFixed(1)} s${r.status !== undefined ? ` ${r.status || 'hung'} ${r.path}` : ''}`).join(', ') || 'nothing';
}

function rowsText(record, key, ch) {
    const o = record.outbox.get(`${key}|${ch}`);
    return o ? `${o.rows} outbox rows, ${o.delivered} delivered` : 'no outbox row';
}

// Exactly once in the record: the reminder fired, one outbox row per target of each channel (two
// webhooks: the healthy one delivered, the one that never answers not), one stream event.
function checkRecord(e, record, webhooks, flag) {
    const status = record.reminders.get(e.key);
    if (e.current && status !== 'fired') flag(e, 'record', `reminder row is ${status ?? 'missing'}, not fired`);
    if (!e.current && status !== undefined && status !== 'fired') flag(e, 'record', `reminder row of a time moved on from is ${status}`);
    const events = record.events.get(e.key) ?? 0;
    if (events !== 1) flag(e, 'record', `${events === 0 ? 'lost' : 'twice'}: ${events} stream events`);
    for (const ch of e.channels) {
        const o = record.outbox.get(`${e.key}|${ch}`);
        const targets = ch === 'webhook' ? 2 : 1;
        if (!o || o.byTarget.size !== targets) {
            flag(e, 'record', `${ch}: ${o ? o.byTarget.size : 0} outbox targets, want ${targets}`);
            continue;
        }
        for (const [target, n] of o.byTarget) {
            if (n !== 1) flag(e, 'record', `twice: ${ch} target ${target} has ${n} outbox rows`);
        }
        if (ch === 'webhook' && o.deliveredTo.has(webhooks.never)) flag(e, 'record', 'webhook that never answers recorded delivered');
        if (ch === 'webhook' && !o.deliveredTo.has(webhooks.ok)) flag(e, 'record', 'healthy webhook not recorded delivered');
    }
}

// Counts of the violations by what was wrong, for the totals line.
export function totals(result) {
    const count = (re) => result.violations.filter((v) => re.test(v.what)).length;
    const reminders = new Set();
    for (const v of result.violations) reminders.add(v.key);
    return {
        n: result.checked, lost: count(/^lost/), twice: count(/^twice/), early: count(/^early/),
        late: count(/^late/), gone: count(/^(moved|cancelled|deleted)/), unexpected: count(/^unexpected/),
        other: result.violations.length - count(/^(lost|twice|early|late|moved|cancelled|deleted|unexpected)/),
        reminders: reminders.size,
    };
}
