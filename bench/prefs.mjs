// bench/prefs.mjs -- the scenario of bench/prefs.sh: BENCH_PEOPLE (10,000) participants reminded
// by email at one instant, as meetings of 500 (the API's bound per meeting) due together, once
// with no preferences (the baseline) and once with half of them having email off and a quarter in
// quiet hours that last past the start (both skipped by the fire statement), each in a tenant of
// its own, in the same run; and once more with every participant having preferences that skip
// nothing (email on, quiet hours later today): the same sends as the baseline, so the cost of
// reading preferences alone. The figure is the fire and its deliveries: from the due instant to
// the last outbox row settled (delivered_at of a sent one, the fire's own time for a skipped one),
// read from PostgreSQL once nothing is pending.
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';

import { SmtpServer } from '../tests/api/smtp.mjs';
import {
    api, die, fmt, freePort, log, machineNote, pool, psql, sleep, startReplica, stopReplica, waitFor,
} from './stream_rig.mjs';

const PEOPLE = Number(process.env.BENCH_PEOPLE ?? '10000');
const REPLICAS = Number(process.env.BENCH_REPLICAS ?? '1');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? '1');
const PER_MEETING = 500; // the API's participants per meeting
const LEAD_MS = Number(process.env.BENCH_LEAD_MS ?? '60000'); // the set-up must fit before the due instant
const BOUND_MS = 300000;
const QUIET_BEFORE_MIN = 60; // the quiet window began an hour ago
const QUIET_AFTER_MIN = 120; // and ends two hours from now, after the meeting's start

const hhmm = (m) => `${String(Math.floor(((m + 1440) % 1440) / 60)).padStart(2, '0')}:${String((m + 1440) % 60).padStart(2, '0')}`;

// Participant i's preferences in a mode: `prefs`: i % 4 of 0 and 1 email off, 2 in quiet hours
// (UTC) lasting past the start, 3 none; `neutral`: quiet hours that begin after the start.
function prefsOf(mode, i) {
    const now = new Date();
    const m = now.getUTCHours() * 60 + now.getUTCMinutes();
    if (mode === 'neutral') {
        return { quiet_hours: { time_zone: 'UTC', start: hhmm(m + QUIET_AFTER_MIN), end: hhmm(m + 2 * QUIET_AFTER_MIN) } };
    }
    if (i % 4 < 2) return { channels: { email: false } };
    if (i % 4 === 3) return null;
    return { quiet_hours: { time_zone: 'UTC', start: hhmm(m - QUIET_BEFORE_MIN), end: hhmm(m + QUIET_AFTER_MIN) } };
}

// One meeting-set fired and delivered: { ms, sent, skipped, late } for the tenant `name`.
async function scenario(ports, smtp, name, mode) {
    const key = execFileSync(process.env.TOCSIN_BIN, ['keys', 'create', '--tenant', name]).toString().trim();
    const due = Math.ceil((Date.now() + LEAD_MS) / 1000) * 1000;
    const startsAt = new Date(due + 5 * 60000).toISOString();
    const id = (i) => `${name}-${i}`;
    await pool(Math.ceil(PEOPLE / PER_MEETING), 4, (m) => api(ports[0], 'POST', '/v1/meetings', {
        title: `Bench ${m}`, starts_at: startsAt,
        participants: Array.from({ length: Math.min(PER_MEETING, PEOPLE - m * PER_MEETING) },
            (_, k) => ({ id: id(m * PER_MEETING + k), email: `${id(m * PER_MEETING + k)}@bench.test` })),
        reminders: [{ minutes_before: 5, channels: ['email'] }],
    }, key));
    let expected = PEOPLE;
    if (mode !== 'base') {
        await pool(PEOPLE, 16, async (i) => {
            const p = prefsOf(mode, i);
            if (p) await api(ports[i % ports.length], 'PUT', `/v1/participants/${id(i)}/preferences`, p, key);
        });
    }
    if (mode === 'prefs') expected = Array.from({ length: PEOPLE }, (_, i) => i % 4 === 3).filter(Boolean).length;
    if (Date.now() > due - 1000) die(`the set-up of ${name} ran past its due instant: raise BENCH_LEAD_MS`);
    const tenant = `(SELECT id FROM tenants WHERE name = '${name}')`;
    await waitFor(`${name}: every row written and settled`, async () => Number(await psql(
        `SELECT count(*) FILTER (WHERE status = 'pending') + (${PEOPLE} - count(*)) FROM outbox WHERE tenant_id = ${tenant}`)) === 0,
    due - Date.now() + BOUND_MS);
    // A row is recorded delivered once the SMTP server accepted it: the messages are there.
    const got = smtp.messages().filter((x) => x.rcpt_tos[0].startsWith(`${name}-`)).length;
    if (got !== expected) die(`${name}: the SMTP server holds ${got} messages, ${expected} expected`);
    const [ms, sent, skipped, late] = (await psql(`SELECT round(extract(epoch FROM max(coalesce(delivered_at, created_at))) * 1000 - ${due}),
        count(*) FILTER (WHERE status = 'delivered'), count(*) FILTER (WHERE status = 'skipped'),
        (SELECT round(extract(epoch FROM max(fired_at - fire_at)) * 1000) FROM reminders WHERE tenant_id = ${tenant})
        FROM outbox WHERE tenant_id = ${tenant}`)).split('|').map(Number);
    if (sent !== expected || sent + skipped !== PEOPLE) die(`${name}: ${sent} sent and ${skipped} skipped of ${PEOPLE}, ${expected} to send`);
    log(`${name}: ${fmt(ms)} ms, ${sent} sent, ${skipped} skipped, fired ${late} ms after due`);
    return { ms, sent, skipped, late };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
    const smtp = new SmtpServer(await freePort(), fs.mkdtempSync(`${process.env.BENCH_DIR}/smtp-`));
    await smtp.start();
    process.env.TOCSIN_SMTP_URL = smtp.url;
    process.env.TOCSIN_SMTP_FROM = 'bench@tocsin.test';
    const ports = [];
    const replicas = [];
    for (let i = 0; i < REPLICAS; i++) {
        ports.push(await freePort());
        replicas.push(await startReplica(i, ports[i]));
    }
    const runs = { base: [], prefs: [], neutral: [] };
    try {
        for (let r = 0; r < ROUNDS; r++) {
            // Turn the order round, so none always runs on the warmest caches.
            const modes = Object.keys(runs);
            for (let k = 0; k < modes.length; k++) {
                const mode = modes[(k + r) % modes.length];
                runs[mode].push(await scenario(ports, smtp, `${mode}${r}`, mode));
                await sleep(2000);
            }
        }
    } finally {
        for (const x of replicas) await stopReplica(x);
        await smtp.stop();
    }
    const [b, p, n] = ['base', 'prefs', 'neutral'].map((mode) => median(runs[mode].map((x) => x.ms)));
    console.log(`baseline: ${PEOPLE} participants, no preferences: fire and deliveries ${fmt(b)} ms after due (${runs.base[0].sent} sent)`);
    console.log(`preferences: half email off, a quarter in quiet hours: ${fmt(p)} ms after due (${runs.prefs[0].sent} sent, ${runs.prefs[0].skipped} skipped); ratio ${fmt(p / b, 2)} (goal at most 1.2)`);
    console.log(`preferences that skip nothing (every participant has a row): ${fmt(n)} ms after due (${runs.neutral[0].sent} sent); ratio ${fmt(n / b, 2)}`);
    console.log(`  medians of ${ROUNDS} round(s), ${REPLICAS} replica(s)`);
    console.log(`  ${machineNote()}`);
}

main().catch((e) => die(e.stack || String(e)));
