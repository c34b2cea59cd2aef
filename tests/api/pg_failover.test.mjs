// pg_failover.test.mjs -- PostgreSQL failover and verified TLS, with servers of this file's own on
// 127.0.0.1. Two replicas on a libpq multi-host URL with target_session_attrs=read-write, a primary
// and its synchronous streaming standby (pg_basebackup -R): reminders fall due over 16 s, the
// primary is stopped in the middle and the standby promoted; everything is delivered, nothing is
// recorded twice, and the API takes writes again within API_BOUND_MS of the promotion (how long it
// took is printed). Then the new primary turns read-only while its sessions are open (what an old
// primary demoted to a standby does): writes fail soft (25006 is a reason to reconnect, not a bug),
// /readyz says why, and once a host that takes writes is up the next write lands there.
// sslmode=verify-full: a server whose certificate names localhost, signed by a CA of this file,
// serves tocsin connecting as localhost with that CA; another CA, or connecting by a name the
// certificate does not carry, is refused with libpq's reason in the log and in /readyz.
import assert from 'node:assert/strict';
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { harness, test, certificates, freePort, run, serveLocal, waitFor, sleep, MIN } from './harness.mjs';

const REMINDERS = 60;
const LEAD_MS = 4000;          // the first reminder falls due this long after the replicas start
const SPREAD_MS = 16000;       // the reminders fall due over this long
const FAILOVER_AFTER_MS = 6000; // the primary is stopped this long after the first is due
const API_BOUND_MS = 10000;    // a write succeeds on every replica this long after the promotion
const DELIVER_BOUND_MS = 30000; // everything is delivered this long after the last is due
const SYNC_BOUND_MS = 20000;   // the standby is a synchronous one this long after it started
const REFUSE_BOUND_MS = 10000; // /readyz reports a refused connection this long after it breaks
const PROBE_GAP_MS = 20;       // writes are tried this often while waiting for the new primary
const RELOAD_SETTLE_MS = 500;  // after pg_reload_conf, for the sessions to take the new setting
const DB = 'tocsin';

const h = await harness('pg_failover');

// ---------------------------------------------------------------- helpers

// A webhook receiver: each webhook-id and how often it came.
async function receiver(t) {
    const seen = new Map();
    const server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            const id = req.headers['webhook-id'] ?? '';
            seen.set(id, (seen.get(id) ?? 0) + 1);
            res.writeHead(204).end();
        });
    });
    return { seen, url: await serveLocal(t, server) };
}

const meeting = (title, fireMs, reminders = [{ minutes_before: 5 }]) => ({
    title, starts_at: new Date(fireMs + 5 * MIN).toISOString(), reminders,
});

// Tries a write (a meeting without reminders) every PROBE_GAP_MS until one succeeds or
// boundMs passes; resolves with the ms it took from `from`, or null.
async function firstWrite(srv, key, from, boundMs) {
    while (Date.now() - from < boundMs) {
        const r = await srv.req('POST', '/v1/meetings', {
            key, json: meeting('probe', Date.now() + 60 * MIN, []), timeoutMs: boundMs,
        }).catch(() => null);
        if (r?.status === 201) {
            return { ms: Date.now() - from, id: r.json.id };
        }
        await sleep(PROBE_GAP_MS);
    }
    return null;
}

// Waits until /readyz is 503 with a postgres_error matching why; returns its body.
async function notReady(srv, why) {
    let rz;
    const ok = await waitFor(async () => {
        rz = await srv.req('GET', '/readyz');
        return rz.status === 503 && why.test(rz.json.postgres_error ?? '');
    }, REFUSE_BOUND_MS, 100);
    assert.ok(ok, `/readyz: ${rz?.text}\nlog:\n${srv.log}`);
    return rz.json;
}

const multiHost = (...pgs) => `postgresql://postgres@${pgs.map((p) => `127.0.0.1:${p.port}`).join(',')}/${DB}` +
    '?target_session_attrs=read-write';

// ---------------------------------------------------------------- failover

test('primary stopped and its synchronous standby promoted under load: all delivered once, the API back', async (t) => {
    const primary = await (await h.newPostgres()).start();
    await primary.sql(`CREATE DATABASE ${DB}`);
    const standby = await h.newPostgres({ standbyOf: primary });
    await standby.start();
    // Synchronous from here on (before, a commit would wait for a standby not there yet).
    primary.settings = ["synchronous_standby_names = '*'", 'synchronous_commit = on'];
    await primary.reload();
    assert.ok(await waitFor(async () => await primary.sql(
        "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") === '1', SYNC_BOUND_MS, 100),
    'the standby never became synchronous');

    const prefix = `pgfo${process.pid}`;
    const srvs = [];
    for (const i of [1, 2]) {
        srvs.push(await h.startServer({
            TOCSIN_DATABASE_URL: multiHost(primary, standby),
            TOCSIN_INSTANCE_ID: `replica-${i}`,
            TOCSIN_REDIS_PREFIX: prefix,
            TOCSIN_WEBHOOK_ALLOW_PRIVATE: '1',
        }));
    }
    const key = await srvs[0].createKey('failover');
    const rx = await receiver(t);
    assert.equal((await srvs[0].req('POST', '/v1/webhooks', { key, json: { url: rx.url } })).status, 201);
    const t0 = Date.now() + LEAD_MS;
    const ids = [];
    for (let i = 0; i < REMINDERS; i++) {
        const r = await srvs[i % 2].req('POST', '/v1/meetings', {
            key, json: meeting('failover', t0 + Math.floor((i * SPREAD_MS) / REMINDERS)),
        });
        assert.equal(r.status, 201, r.text);
        ids.push(r.json.reminders[0].id);
    }

    await sleep(Math.max(0, t0 + FAILOVER_AFTER_MS - Date.now()));
    const firedBefore = Number(await primary.sql("SELECT count(*) FROM reminders WHERE status = 'fired'", DB));
    await primary.stop();
    await standby.promote(); // pg_ctl -w: returns once the standby is out of recovery
    const promoted = Date.now();
    const writes = await Promise.all(srvs.map((s) => firstWrite(s, key, promoted, API_BOUND_MS)));
    t.diagnostic(`fired before the failover: ${firedBefore} of ${REMINDERS}; first write after the promotion: ` +
        writes.map((w, i) => `replica-${i + 1} ${w ? `${w.ms} ms` : 'none'}`).join(', '));
    writes.forEach((w, i) => assert.ok(w, `replica-${i + 1} took no write within ${API_BOUND_MS} ms of the promotion:\n${srvs[i].log}`));
    assert.ok(firedBefore < REMINDERS, 'the failover came after everything had fired: it tested nothing');

    const list = ids.join(',');
    const delivered = async () => Number(await standby.sql(
        `SELECT count(*) FROM outbox WHERE reminder_id IN (${list}) AND status = 'delivered'`, DB));
    const ok = await waitFor(async () => await delivered() >= REMINDERS,
        t0 + SPREAD_MS + DELIVER_BOUND_MS - Date.now(), 200);
    assert.ok(ok, `${await delivered()} of ${REMINDERS} delivered after the failover:\n${srvs[0].log}\n${srvs[1].log}`);
    const [fired, rows, distinct] = (await standby.sql(`SELECT
            (SELECT count(*) FROM reminders WHERE id IN (${list}) AND status = 'fired'),
            count(*), count(DISTINCT (reminder_id, fire_at))
        FROM outbox WHERE reminder_id IN (${list})`, DB)).split('|').map(Number);
    assert.deepEqual({ fired, rows, distinct }, { fired: REMINDERS, rows: REMINDERS, distinct: REMINDERS },
        'every reminder fired, with one outbox row: nothing recorded twice');
    const repeats = [...rx.seen.values()].filter((n) => n > 1).length;
    t.diagnostic(`webhook requests: ${[...rx.seen.values()].reduce((a, b) => a + b, 0)} for ${rx.seen.size} ids, ` +
        `${repeats} repeated on the wire (a send whose record was lost with the primary)`);
    assert.equal(rx.seen.size, REMINDERS, 'every reminder arrived at the receiver');

    // ---- the new primary turns read-only with its sessions open; the old one is down. A write
    // on such a session fails with 25006: a reason to reconnect (503 while no host takes writes),
    // not a bug (500). /readyz is asked on the other replica: its ping would reconnect too.
    await standby.sql('ALTER SYSTEM SET default_transaction_read_only = on');
    await standby.sql('SELECT pg_reload_conf()');
    await sleep(RELOAD_SETTLE_MS);
    const refused = await srvs[0].req('POST', '/v1/meetings', { key, json: meeting('read-only', Date.now() + 60 * MIN, []) });
    assert.equal(refused.status, 503, `a write while no host takes writes: ${refused.text}`);
    const rz = await notReady(srvs[1], /read-only/);
    assert.match(rz.checks.postgres, /^(read_only|down)$/);

    // The old primary comes back on its own (it never saw the promotion: as after a split): the
    // next write goes there, not to the read-only server the connections were on.
    primary.settings = []; // no standby of its own now: a synchronous commit would wait forever
    await primary.start();
    const back = Date.now();
    const w = await firstWrite(srvs[0], key, back, API_BOUND_MS);
    assert.ok(w, `no write within ${API_BOUND_MS} ms of a host taking writes:\n${srvs[0].log}`);
    t.diagnostic(`first write after a read-write host came back: ${w.ms} ms`);
    assert.equal(await primary.sql(`SELECT count(*) FROM meetings WHERE id = '${w.id}'`, DB), '1',
        'the write after the read-only server went to the host that takes writes');
    assert.equal((await srvs[0].req('GET', '/readyz')).status, 200);
    for (const s of srvs) {
        await s.stop();
    }
});

// ---------------------------------------------------------------- sslmode=verify-full

test('sslmode=verify-full: the right CA and host name connect; another CA or host name is refused, with the reason', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-pgtls-'));
    const certs = certificates(dir);
    await certs.ca('ca');
    await certs.ca('other-ca');
    await certs.leaf('ca', 'server', 'DNS:localhost', 'serverAuth');
    const pg = await h.newPostgres();
    const cert = pg.writeFile('server.crt', fs.readFileSync(certs.f('server.pem')));
    const keyFile = pg.writeFile('server.key', fs.readFileSync(certs.f('server.key')));
    pg.settings = ['ssl = on', `ssl_cert_file = '${cert}'`, `ssl_key_file = '${keyFile}'`];
    await pg.start();
    await pg.sql(`CREATE DATABASE ${DB}`);
    const url = (host, ca) => `postgresql://postgres@${host}:${pg.port}/${DB}?sslmode=verify-full&sslrootcert=${ca}`;

    // The CA is read at every connect: a copy that is swapped for another CA below.
    const liveCa = path.join(dir, 'live-ca.pem');
    fs.copyFileSync(certs.f('ca.pem'), liveCa);
    const srv = await h.startServer({ TOCSIN_DATABASE_URL: url('localhost', liveCa) });
    const key = await srv.createKey('tls');
    assert.equal((await srv.req('POST', '/v1/meetings', { key, json: meeting('tls', Date.now() + 60 * MIN) })).status, 201);
    assert.equal((await srv.req('GET', '/readyz')).status, 200);
    assert.notEqual(await pg.sql("SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) " +
        "WHERE application_name = 'tocsin' AND ssl"), '0', 'tocsin connects over TLS');

    // Start-up refused: one line per attempt with libpq's reason, then the exit.
    const cases = [
        [url('localhost', certs.f('other-ca.pem')), /certificate verify failed/],
        [url('127.0.0.1', certs.f('ca.pem')), /does not match host name "127\.0\.0\.1"/],
    ];
    for (const [dbUrl, why] of cases) {
        const r = await run(h.env.bin, ['serve'], { env: h.serverEnv({
            TOCSIN_DATABASE_URL: dbUrl, TOCSIN_DB_WAIT_S: '1', TOCSIN_HTTP_ADDR: `127.0.0.1:${await freePort()}`,
        }) });
        assert.notEqual(r.code, 0, `serve with ${dbUrl} started:\n${r.stderr}`);
        assert.match(r.stderr, why);
    }

    // A running replica whose connections break and whose CA no longer signs the server's
    // certificate: not ready, saying why, and the log says it too.
    fs.copyFileSync(certs.f('other-ca.pem'), liveCa);
    await pg.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tocsin'");
    const rz = await notReady(srv, /certificate verify failed/);
    assert.equal(rz.checks.postgres, 'down');
    assert.ok(await waitFor(() => / WARN .*certificate verify failed/.test(srv.log), REFUSE_BOUND_MS, 100),
        `no log line names the cause:\n${srv.log}`);
    fs.copyFileSync(certs.f('ca.pem'), liveCa);
    assert.ok(await waitFor(async () => (await srv.req('GET', '/readyz')).status === 200, REFUSE_BOUND_MS, 100),
        'ready again once the CA signs the certificate');
    await srv.stop();
    fs.rmSync(dir, { recursive: true, force: true });
});
