// db_outage.test.mjs -- a PostgreSQL outage is logged once per thread when it starts and once
// when it ends, not once per failed statement. One server at info level, reminders falling due
// while PostgreSQL is stopped for a few seconds and API requests failing with 503 all along;
// then PostgreSQL comes back, everything due fires, and the log between the stop and the
// recovery is counted line by line. The database layer only keeps the error on its handle; each
// thread that owns a connection (scheduler, reconciler, membership, dispatch, delivery workers)
// says "unavailable" once and "available again" once, and the HTTP threads say it at debug only.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { harness, test, waitFor, sleep, MIN } from './harness.mjs';

const OUTAGE_MS = 4000;          // how long PostgreSQL stays down
const LEAD_MS = 2500;            // the first reminder falls due this long after creation
const REMINDERS = 30;            // due while PostgreSQL is down
const REQUEST_GAP_MS = 20;       // the API load during the outage: one request per gap
const DELIVERY_WORKERS = 2;
const FIRE_BOUND_MS = 30000;     // everything due fires this long after PostgreSQL is back
const BACK_BOUND_MS = 20000;     // every thread says it is back this long after PostgreSQL is
// The threads that hold a database connection and what each calls itself in the log; a thread
// may see the outage twice (a statement that fails as the server shuts down, then the
// reconnects), never more.
const OWNERS = { sched: 1, recon: 1, members: 1, dispatch: 1, deliver: DELIVERY_WORKERS };
const PER_THREAD_MAX = 2;

const h = await harness('db_outage');
let srv;
let key;
let lines = []; // every line the server wrote since start: { level, msg }

before(async () => {
    srv = await h.startServer({
        TOCSIN_LOG_LEVEL: 'info',
        TOCSIN_RECON_INTERVAL_MS: '500',
        TOCSIN_DELIVERY_WORKERS: String(DELIVERY_WORKERS),
    });
    let partial = '';
    srv.proc.child.stderr.on('data', (d) => {
        const text = partial + d.toString();
        const parts = text.split('\n');
        partial = parts.pop();
        for (const l of parts) {
            const m = /^\S+ (ERROR|WARN|INFO|DEBUG) (.*)$/.exec(l);
            lines.push(m ? { level: m[1], msg: m[2] } : { level: '?', msg: l });
        }
    });
    // No webhook: the delivery workers still poll the outbox every DELIVER_POLL_MS, which is
    // what makes them see the outage, and no receiver's failures add lines of their own.
    key = await srv.createKey('outage');
});

after(async () => {
    await h.startPostgres().catch(() => {}); // never leave the shared server down
    await srv.stop();
});

const startsFor = (fireMs) => new Date(fireMs + 5 * MIN).toISOString();

test('PostgreSQL stopped under load: one line per thread when it goes, one when it is back', async () => {
    const t0 = Date.now() + LEAD_MS;
    const made = [];
    for (let i = 0; i < REMINDERS; i++) {
        const r = await srv.req('POST', '/v1/meetings', {
            key,
            json: { title: 'outage', starts_at: startsFor(t0 + Math.floor((i * OUTAGE_MS) / REMINDERS)), reminders: [{ minutes_before: 5 }] },
        });
        assert.equal(r.status, 201, r.text);
        made.push(r.json.reminders[0].id);
    }
    await sleep(Math.max(0, t0 - Date.now() - 500));

    const from = lines.length;
    await h.stopPostgres();
    const stoppedAt = Date.now();
    let sent = 0;
    let unavailable = 0;
    while (Date.now() - stoppedAt < OUTAGE_MS) {
        const r = await srv.req(sent % 2 ? 'GET' : 'POST', '/v1/meetings', sent % 2 ? { key } : {
            key, json: { title: 'during', starts_at: startsFor(Date.now() + MIN), reminders: [{ minutes_before: 5 }] },
        });
        sent++;
        unavailable += r.status === 503 ? 1 : 0;
        await sleep(REQUEST_GAP_MS);
    }
    await h.startPostgres();

    // Everything that fell due during the outage fires once PostgreSQL is back.
    const list = made.join(',');
    const pending = async () => Number(await h.sql(
        `SELECT count(*) FROM reminders WHERE id IN (${list}) AND status = 'pending'`));
    assert.ok(await waitFor(async () => await pending() === 0, FIRE_BOUND_MS, 200),
        `${await pending()} of ${REMINDERS} reminders still pending after the outage`);

    // Every thread that saw the outage says it is back.
    const window = () => lines.slice(from);
    const saw = (owner, re) => window().filter((l) => l.msg.startsWith(`${owner}: `) && re.test(l.msg));
    const downLines = (owner) => saw(owner, /./).filter((l) => l.level === 'WARN' || l.level === 'ERROR');
    const backLines = (owner) => saw(owner, /database available again/).filter((l) => l.level === 'INFO');
    const allBack = () => Object.keys(OWNERS).every((o) => backLines(o).length >= Math.min(1, downLines(o).length));
    await waitFor(allBack, BACK_BOUND_MS, 100);
    await sleep(1000); // a late second line would show here

    const dump = window().filter((l) => !l.msg.startsWith('http ')).map((l) => `${l.level} ${l.msg}`).join('\n');
    assert.ok(unavailable >= sent / 2, `the API answered 503 to ${unavailable} of ${sent} requests during the outage`);
    for (const [owner, threads] of Object.entries(OWNERS)) {
        const down = downLines(owner).length;
        const back = backLines(owner).length;
        assert.ok(down >= 1 && down <= threads * PER_THREAD_MAX,
            `${owner}: ${down} lines about the outage for ${threads} thread(s):\n${dump}`);
        assert.ok(back >= 1 && back <= threads * PER_THREAD_MAX,
            `${owner}: ${back} "available again" lines for ${threads} thread(s):\n${dump}`);
    }
    // Nothing else warns about it: not the HTTP threads (debug only), not the database layer, and
    // nothing is an error (an outage is not our bug).
    const threads = Object.values(OWNERS).reduce((a, b) => a + b, 0);
    const warned = window().filter((l) => l.level === 'WARN' || l.level === 'ERROR');
    assert.ok(warned.length <= threads * PER_THREAD_MAX,
        `${warned.length} WARN/ERROR lines for ${threads} threads and ${sent} requests:\n${dump}`);
    assert.deepEqual(window().filter((l) => l.level === 'ERROR'), [], dump);
    assert.deepEqual(window().filter((l) => /database \(will retry\)|re-established/.test(l.msg)), [], dump);
});
