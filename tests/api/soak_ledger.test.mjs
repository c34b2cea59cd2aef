// soak_ledger.test.mjs -- the soak's ledger (bench/soak_ledger.mjs) can fail: fed receipts and a
// record made here, it flags a lost, an early, a late, a twice-recorded, a taken-away and an
// unexpected reminder, each as what it is, and passes the clean case. No servers.
import assert from 'node:assert/strict';
import { test } from './harness.mjs';
import {
    BACKOFF_FACTOR, BASE_MS, CIRCUIT_OPEN_MS, LOOKAHEAD_MS, Ledger, PROBE_TIMEOUT_MS, REPAIR_MS, check, circuitsOf, keyOf, rxRuns,
    totals,
} from '../../bench/soak_ledger.mjs';

const T0 = Date.parse('2030-01-01T09:00:00Z');
const CH = ['webhook', 'stream', 'push', 'email'];
const HOOKS = { ok: 'w-ok', never: 'w-never' };

function entry(rid, fireMs, meeting = 'm1') {
    return { key: keyOf(rid, fireMs), rid, fireMs, meeting, occ: null, minutes: 5, channels: CH };
}

// Everything a clean delivery of e leaves: one arrival per channel `lateMs` after due, the record.
function delivered(e, rc, rec, lateMs = 10) {
    const at = e.fireMs + lateMs;
    rc.webhook.set(e.key, [{ at, status: 204, path: '/ok' }, { at, status: 0, path: '/never' }]);
    for (const ch of ['stream', 'push', 'email']) rc[ch].set(e.key, [{ at }]);
    rec.reminders.set(e.key, 'fired');
    rec.events.set(e.key, 1);
    for (const ch of CH) {
        const targets = ch === 'webhook' ? [HOOKS.ok, HOOKS.never] : [`${ch}-1`];
        rec.outbox.set(`${e.key}|${ch}`, {
            rows: targets.length, delivered: 1, byTarget: new Map(targets.map((t) => [t, 1])),
            deliveredTo: new Set([targets[0]]),
        });
    }
}

function world() {
    return {
        ledger: new Ledger(T0 + 600000),
        rc: { webhook: new Map(), stream: new Map(), push: new Map(), email: new Map() },
        rec: { reminders: new Map(), outbox: new Map(), events: new Map() },
    };
}

test('a clean run has no violation', () => {
    const w = world();
    const e = entry(1, T0 + 60000);
    w.ledger.observe('m1', [e], T0, 'created');
    delivered(e, w.rc, w.rec);
    const r = check(w.ledger, w.rc, w.rec, [], HOOKS);
    assert.deepEqual(r.violations, []);
    assert.equal(totals(r).n, 1);
});

test('lost, early, late and twice are each flagged', () => {
    const w = world();
    const lost = entry(1, T0 + 60000);
    const early = entry(2, T0 + 70000);
    const late = entry(3, T0 + 80000);
    const twice = entry(4, T0 + 90000);
    w.ledger.observe('m1', [lost, early, late, twice], T0, 'created');
    for (const e of [early, late, twice]) delivered(e, w.rc, w.rec);
    w.rc.push.set(early.key, [{ at: early.fireMs - 5 }]);
    w.rc.email.set(late.key, [{ at: late.fireMs + BASE_MS.email + 1 }]);
    w.rec.events.set(twice.key, 2);
    const t = totals(check(w.ledger, w.rc, w.rec, [], HOOKS));
    assert.equal(t.lost, CH.length + 1); // every channel, and no stream event recorded
    assert.equal(t.early, 1);
    assert.equal(t.late, 1);
    assert.equal(t.twice, 1);
});

test('a fault met widens the bound by its time past the due time and its repair, no more', () => {
    const w = world();
    const e = entry(1, T0 + 60000);
    w.ledger.observe('m1', [e], T0, 'created');
    delivered(e, w.rc, w.rec);
    const fault = { kind: 'redis-stop', start: e.fireMs - 1000, end: e.fireMs + 9000 };
    const allowed = 9000 + REPAIR_MS['redis-stop'] + BASE_MS.stream;
    w.rc.stream.set(e.key, [{ at: e.fireMs + allowed }]);
    assert.equal(totals(check(w.ledger, w.rc, w.rec, [fault], HOOKS)).late, 0);
    w.rc.stream.set(e.key, [{ at: e.fireMs + allowed + 1 }]);
    assert.equal(totals(check(w.ledger, w.rc, w.rec, [fault], HOOKS)).late, 1);
    // A receiver fault: the row's backoff, on the webhook only.
    const rxw = { kind: 'rx-500', start: e.fireMs - 1000, end: e.fireMs + 9000 };
    const rxAllowed = Math.round(9000 * BACKOFF_FACTOR + REPAIR_MS['rx-500'] + BASE_MS.webhook);
    w.rc.stream.set(e.key, [{ at: e.fireMs + 10 }]);
    w.rc.webhook.set(e.key, [{ at: e.fireMs + rxAllowed, status: 204, path: '/ok' }]);
    assert.equal(totals(check(w.ledger, w.rc, w.rec, [rxw], HOOKS)).late, 0);
    w.rc.webhook.set(e.key, [{ at: e.fireMs + rxAllowed + 1, status: 204, path: '/ok' }]);
    assert.equal(totals(check(w.ledger, w.rc, w.rec, [rxw], HOOKS)).late, 1);
    // A receiver fault does not excuse the stream.
    const rx = { kind: 'rx-500', start: e.fireMs - 1000, end: e.fireMs + 9000 };
    w.rc.webhook.set(e.key, [{ at: e.fireMs + 10, status: 204, path: '/ok' }]);
    w.rc.stream.set(e.key, [{ at: e.fireMs + BASE_MS.stream + 1 }]);
    assert.equal(totals(check(w.ledger, w.rc, w.rec, [rx], HOOKS)).late, 1);
});

// The previous 30-minute run's case: rx-500, rx-hang 6 s after it, rx-500 15 s after that are one
// run for the rows' backoff; a worker's circuit, open 40 s after its last failed probe, is
// allowed as tocsin logged it, on the webhook only, and only while the row was pending.
test('receiver faults close together are one run; a circuit tocsin logged bounds the webhook rows pending while it was open', () => {
    const w = world();
    const a = { kind: 'rx-500', start: T0 + 60000, end: T0 + 72000 };
    const b = { kind: 'rx-hang', start: a.end + 6000, end: a.end + 18000 };
    const c = { kind: 'rx-500', start: b.end + 15000, end: b.end + 27000 };
    const far = { kind: 'rx-hang', start: c.end + 12000 + CIRCUIT_OPEN_MS + PROBE_TIMEOUT_MS + 1, end: c.end + 60000 };
    const runs = rxRuns([far, c, b, a]);
    assert.deepEqual(runs.map((r) => r.kinds), [['rx-500', 'rx-hang', 'rx-500'], ['rx-hang']]);
    // The circuit's opening as the replica logged it (text format), another receiver's beside it.
    const opened = c.end - 7000;
    const log = [
        `${new Date(opened).toISOString()} WARN deliver: receiver w-ok failed 6 times in a row; circuit open for 40000 ms`,
        `${new Date(opened).toISOString()} WARN deliver: receiver w-never failed 5 times in a row; circuit open for 80000 ms`,
        `${new Date(opened).toISOString()} WARN deliver: webhook rem_1_2 of tenant 1 to receiver w-ok failed (attempt 3): HTTP 500`,
    ].join('\n');
    const circuits = circuitsOf(['', log], HOOKS.ok);
    assert.deepEqual(circuits, [{ at: opened, ms: 40000 }]);
    // Due past the run's repair, while the circuit was open.
    const e = entry(1, c.end + REPAIR_MS['rx-500'] + 1000);
    w.ledger.observe('m1', [e], T0, 'created');
    delivered(e, w.rc, w.rec);
    const allowed = opened + 40000 + PROBE_TIMEOUT_MS + BASE_MS.webhook - e.fireMs;
    w.rc.webhook.set(e.key, [{ at: e.fireMs + allowed, status: 204, path: '/ok' }]);
    assert.equal(totals(check(w.ledger, w.rc, w.rec, [a, b, c], HOOKS, circuits)).late, 0);
    w.rc.webhook.set(e.key, [{ at: e.fireMs + allowed + 1, status: 204, path: '/ok' }]);
    assert.equal(totals(check(w.ledger, w.rc, w.rec, [a, b, c], HOOKS, circuits)).late, 1);
    // Without the circuit logged, the run alone does not excuse it.
    w.rc.webhook.set(e.key, [{ at: e.fireMs + BASE_MS.webhook + 1, status: 204, path: '/ok' }]);
    assert.equal(totals(check(w.ledger, w.rc, w.rec, [a, b, c], HOOKS)).late, 1);
    // Nor a circuit that opened after the row arrived, nor one closed long before its due time.
    const after = [{ at: e.fireMs + BASE_MS.webhook + 2, ms: 40000 }];
    assert.equal(totals(check(w.ledger, w.rc, w.rec, [a, b, c], HOOKS, after)).late, 1);
    const before = [{ at: e.fireMs - LOOKAHEAD_MS - 5001, ms: 5000 }];
    assert.equal(totals(check(w.ledger, w.rc, w.rec, [a, b, c], HOOKS, before)).late, 1);
    // Nor does the circuit excuse the stream.
    w.rc.webhook.set(e.key, [{ at: e.fireMs + 10, status: 204, path: '/ok' }]);
    w.rc.stream.set(e.key, [{ at: e.fireMs + BASE_MS.stream + 1 }]);
    assert.equal(totals(check(w.ledger, w.rc, w.rec, [a, b, c], HOOKS, circuits)).late, 1);
});

test('a moved-away or deleted time that arrives, and a key of nothing, are flagged', () => {
    const w = world();
    const old = entry(1, T0 + 120000);
    const moved = entry(1, T0 + 180000);
    w.ledger.observe('m1', [old], T0, 'created');
    w.ledger.observe('m1', [moved], T0 + 1000, 'moved');
    delivered(moved, w.rc, w.rec);
    w.rc.webhook.set(old.key, [{ at: old.fireMs, status: 204, path: '/ok' }]);
    w.rc.push.set(keyOf(99, T0), [{ at: T0 }]);
    const r = check(w.ledger, w.rc, w.rec, [], HOOKS);
    const t = totals(r);
    assert.equal(t.gone, 1);
    assert.equal(t.unexpected, 1);
    assert.match(r.violations.find((v) => v.key === old.key).what, /^moved: /);
});

test('a reminder written with its fire time past is due at the write and keeps its key', () => {
    const w = world();
    const past = entry(7, T0 - 86400000 - 60000); // a day and a minute before an occurrence
    w.ledger.observe('s1', [past], T0, 'created');
    const e = w.ledger.expect.get(past.key);
    assert.equal(e.atOnce, true);
    assert.equal(e.dueMs, T0);
    delivered({ ...e, fireMs: T0 }, w.rc, w.rec);
    assert.deepEqual(check(w.ledger, w.rc, w.rec, [], HOOKS).violations, []);
});

test('a fired time that a later move took the row away from needs no fired row, only its record', () => {
    const w = world();
    const first = entry(1, T0 + 60000);
    const next = entry(1, T0 + 300000);
    w.ledger.observe('m1', [first], T0, 'created');
    w.ledger.observe('m1', [next], T0 + 120000, 'moved'); // after the first fired
    delivered(first, w.rc, w.rec);
    delivered(next, w.rc, w.rec);
    w.rec.reminders.delete(first.key); // the one row now carries the next time
    assert.deepEqual(check(w.ledger, w.rc, w.rec, [], HOOKS).violations, []);
    w.rec.reminders.delete(next.key);
    assert.match(check(w.ledger, w.rc, w.rec, [], HOOKS).violations[0].what, /reminder row is missing/);
});

// The 30-minute soak's first run gave an API call up: an override picked a series whose delete was
// still in flight (slowed by a fault) and got 404. A meeting being changed is not settled.
test('a meeting with a change in flight cannot be picked for another until that change ends', () => {
    const w = world();
    w.ledger.observe('m1', [entry(1, T0 + 300000)], T0, 'created');
    assert.equal(w.ledger.settled('m1', T0, 25000), true);
    w.ledger.begin('m1');
    assert.equal(w.ledger.settled('m1', T0, 25000), false);
    assert.equal(w.ledger.settled('m2', T0, 25000), true);
    w.ledger.end('m1');
    assert.equal(w.ledger.settled('m1', T0, 25000), true);
});
