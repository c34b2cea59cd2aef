// dashboards.test.mjs -- the metrics behind deploy/, against a real tocsin: after a reminder fired
// and its webhook delivery went out, a scrape of /metrics has every metric family, label and
// literal label value that the rules of deploy/prometheus/alerts.yaml and the panels and
// variables of deploy/grafana/tocsin.json read (a misspelt name fails, and so does a bare
// histogram name or a label the metric lacks); and the gauges added for those alerts behave:
// tocsin_delivery_circuits_open rises when a webhook's circuit opens (five failures in a row, or a
// Retry-After) and falls when it answers again, tocsin_outbox_oldest_due_seconds shows a due row
// that no worker takes (its receiver's circuit is open) and not the rows given back for later,
// and tocsin_postgres_up follows PostgreSQL refusing this database's connections.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { harness, test, run, serveLocal, waitFor, MIN } from './harness.mjs';
import { missingFrom, parseScrape, promqlParts } from './promql.mjs';

const h = await harness('dashboards');
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LEAD_MS = 1500;        // a reminder falls due this long after its meeting is created
const BOUND_MS = 30000;      // what must happen does within this
const OVERDUE_S = 90;        // the row written as due this long ago
const RETRY_AFTER_S = 120;   // the receiver's Retry-After: its circuit stays open past the test
const CIRCUIT_FAILURES = 5;  // DELIVER_CIRCUIT_FAILURES (src/deliver.h)

// Every PromQL expression in deploy/: { where, expr }; and Grafana's label_values() variables as
// { where, expr (the selector), label }.
function deployQueries() {
    const rules = parse(fs.readFileSync(path.join(ROOT, 'deploy/prometheus/alerts.yaml'), 'utf8'));
    const dash = JSON.parse(fs.readFileSync(path.join(ROOT, 'deploy/grafana/tocsin.json'), 'utf8'));
    const exprs = rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })));
    const walk = (panels) => {
        for (const p of panels ?? []) {
            for (const t of p.targets ?? []) {
                exprs.push({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr });
            }
            walk(p.panels);
        }
    };
    walk(dash.panels);
    const variables = [];
    for (const v of dash.templating.list.filter((x) => x.type === 'query')) {
        const m = /^label_values\((.+),\s*(\w+)\)$/.exec(v.query.query);
        assert.ok(m, `variable ${v.name}: not a label_values() query: ${v.query.query}`);
        variables.push({ where: `variable ${v.name}`, expr: m[1], label: m[2] });
    }
    return { exprs, variables };
}

async function scrape(srv) {
    const r = await srv.req('GET', '/metrics', { validate: false });
    assert.equal(r.status, 200, r.text);
    return r.text;
}

// The value of the sample `name{labels}` (labels as in the text, '' for none), or null.
function sample(text, name, labels = '') {
    const head = labels === '' ? `${name} ` : `${name}{${labels}} `;
    const line = text.split('\n').find((l) => l.startsWith(head));
    return line === undefined ? null : Number(line.slice(head.length));
}

const circuits = (text, channel) => sample(text, 'tocsin_delivery_circuits_open', `channel="${channel}"`);

// A webhook receiver on 127.0.0.1 answering by mode(): 'ok' 204, 'broken' 503, 'hold' 503 with
// Retry-After.
async function receiver(t, mode) {
    const rx = { got: 0 };
    const server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            rx.got++;
            const m = mode();
            res.writeHead(m === 'ok' ? 204 : 503, m === 'hold' ? { 'Retry-After': String(RETRY_AFTER_S) } : {}).end();
        });
    });
    rx.url = await serveLocal(t, server);
    return rx;
}

async function dueSoon(srv, key, title) {
    const starts = new Date(Date.now() + LEAD_MS + 5 * MIN).toISOString();
    const r = await srv.req('POST', '/v1/meetings', { key, json: { title, starts_at: starts } });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

test('the checker finds what a scrape lacks: a misspelt name, a bare histogram, a label or a value no sample has', () => {
    const s = parseScrape([
        '# TYPE tocsin_x_seconds histogram',
        'tocsin_x_seconds_bucket{channel="webhook",le="+Inf"} 1',
        'tocsin_x_seconds_sum{channel="webhook"} 1',
        'tocsin_x_seconds_count{channel="webhook"} 1',
        '# TYPE tocsin_y_total counter',
        'tocsin_y_total{route="/v1/meetings/{id}"} 2',
    ].join('\n'));
    const ok = 'sum by (channel, le) (rate(tocsin_x_seconds_bucket{job="$job"}[5m])) / sum(rate(tocsin_y_total{route="/v1/meetings/{id}"}[5m]))';
    assert.deepEqual(missingFrom(s, ok, 'ok'), []);
    assert.deepEqual([...promqlParts(ok).names].sort(), ['tocsin_x_seconds_bucket', 'tocsin_y_total']);
    for (const bad of ['rate(tocsin_y_totl[5m])', 'histogram_quantile(0.9, tocsin_x_seconds)', 'tocsin_y_total_bucket',
        'tocsin_y_total{chanel="webhook"}', 'tocsin_x_seconds_count{channel="webhooks"}',
        'tocsin_x_seconds_count{channel=~"webhook|emial"}', 'sum by (status) (tocsin_y_total)']) {
        assert.ok(missingFrom(s, bad, 'bad').length > 0, `not caught: ${bad}`);
    }
});

test('every metric, label and label value that alerts.yaml and tocsin.json read is in a scrape after a reminder fired and was delivered', async (t) => {
    const rx = await receiver(t, () => 'ok');
    const srv = await h.startServer({ TOCSIN_WEBHOOK_ALLOW_NETS: '127.0.0.0/8' });
    const key = await srv.createKey('dashboards');
    assert.equal((await srv.req('POST', '/v1/webhooks', { key, json: { url: rx.url } })).status, 201);
    await dueSoon(srv, key, 'dashboards');
    let text = '';
    const delivered = await waitFor(async () => {
        text = await scrape(srv);
        return sample(text, 'tocsin_channel_sent_total', 'channel="webhook"') >= 1
            && sample(text, 'tocsin_redis_expired_events_total') >= 1;
    }, BOUND_MS, 100);
    assert.ok(delivered, `no webhook delivery and expired event within ${BOUND_MS} ms:\n${text}`);
    // TocsinExpiryEventsMissing rests on a fired reminder's key bringing an expired event.
    assert.ok(sample(text, 'tocsin_redis_expired_events_total') >= sample(text, 'tocsin_reminders_fired_total'), text);
    const s = parseScrape(text);
    const { exprs, variables } = deployQueries();
    const problems = exprs.flatMap((q) => missingFrom(s, q.expr, q.where));
    for (const v of variables) {
        problems.push(...missingFrom(s, v.expr, v.where));
        const [name] = promqlParts(v.expr).names;
        if (v.label !== 'job' && v.label !== 'instance' && !(s.samples.get(name) ?? []).some((l) => v.label in l)) {
            problems.push(`${v.where}: no sample of ${name} has the label ${v.label}`);
        }
    }
    assert.deepEqual(problems, [], text);
    const names = new Set(exprs.flatMap((q) => [...promqlParts(q.expr).names]));
    assert.ok(names.size >= 30, `only ${names.size} names read: ${[...names].join(', ')}`);
    await srv.stop();
});

test('tocsin_delivery_circuits_open counts a webhook circuit opened by failures or Retry-After until it answers; tocsin_outbox_oldest_due_seconds shows its due rows waiting', async (t) => {
    let mode = 'broken';
    const rx = await receiver(t, () => mode);
    const srv = await h.startServer({
        TOCSIN_WEBHOOK_ALLOW_NETS: '127.0.0.0/8',
        TOCSIN_DELIVERY_RETRY_BASE_MS: '10', // the five failures come within a second or two
        TOCSIN_DELIVERY_WORKERS: '1',        // one worker: one circuit per receiver
    });
    const key = await srv.createKey('circuits');
    assert.equal((await srv.req('POST', '/v1/webhooks', { key, json: { url: rx.url } })).status, 201);
    let text = await scrape(srv);
    assert.deepEqual(['webhook', 'push', 'email'].map((c) => circuits(text, c)), [0, 0, 0], text);

    await dueSoon(srv, key, 'breaks');
    assert.ok(await waitFor(async () => circuits(text = await scrape(srv), 'webhook') === 1, BOUND_MS, 50),
        `no open circuit after ${rx.got} failed requests:\n${text}`);
    assert.ok(rx.got >= CIRCUIT_FAILURES, `opened after ${rx.got} requests`);
    assert.deepEqual([circuits(text, 'push'), circuits(text, 'email')], [0, 0]);

    mode = 'ok'; // the probe after 5 s succeeds and closes it
    assert.ok(await waitFor(async () => circuits(text = await scrape(srv), 'webhook') === 0, BOUND_MS, 100),
        `the circuit stayed open after the receiver answered 204:\n${text}`);
    assert.equal(sample(text, 'tocsin_channel_sent_total', 'channel="webhook"'), 1);

    mode = 'hold';
    await dueSoon(srv, key, 'asks to wait');
    assert.ok(await waitFor(async () => circuits(text = await scrape(srv), 'webhook') === 1, BOUND_MS, 50),
        `no open circuit after a Retry-After:\n${text}`);
    // The row that got the Retry-After is due again only then: not waiting now.
    assert.equal(sample(text, 'tocsin_outbox_oldest_due_seconds'), 0, text);
    assert.equal(sample(text, 'tocsin_outbox_pending'), 1, text);
    // A row for the same webhook, due OVERDUE_S ago and held by no worker: it is left out of the
    // leases while the circuit is open, so it waits, and the gauge says for how long.
    await h.sql(`INSERT INTO outbox (tenant_id, meeting_id, reminder_id, fire_at, channel, webhook_id,
        target, receiver, next_attempt_at)
        SELECT tenant_id, meeting_id, reminder_id, fire_at + interval '1 second', channel, webhook_id,
        target, receiver, now() - interval '${OVERDUE_S} seconds' FROM outbox ORDER BY id DESC LIMIT 1`);
    const requests = rx.got;
    text = await scrape(srv);
    const age = sample(text, 'tocsin_outbox_oldest_due_seconds');
    assert.ok(age >= OVERDUE_S && age < OVERDUE_S + BOUND_MS / 1000, `oldest due ${age} s:\n${text}`);
    assert.equal(sample(text, 'tocsin_outbox_pending'), 2, text);
    assert.equal(circuits(text, 'webhook'), 1);
    assert.equal(rx.got, requests, 'nothing sent to a receiver that asked to wait');
    await srv.stop();
});

test('tocsin_postgres_up is 0, and the outbox gauges are left out, while PostgreSQL refuses the database', async (t) => {
    const admin = (sql) => run('psql', [h.env.dbUrl, '-v', 'ON_ERROR_STOP=1', '-qAt', '-c', sql]);
    const allow = async (yes) => {
        const r = await admin(`ALTER DATABASE "${h.dbName}" ALLOW_CONNECTIONS ${yes}`);
        assert.equal(r.code, 0, r.stderr);
    };
    await h.sql('DELETE FROM outbox'); // the rows the tests above left
    const srv = await h.startServer();
    let text = await scrape(srv);
    assert.equal(sample(text, 'tocsin_postgres_up'), 1, text);
    assert.equal(sample(text, 'tocsin_outbox_pending'), 0, text);
    assert.equal(sample(text, 'tocsin_outbox_oldest_due_seconds'), 0, text);

    t.after(() => allow(true));
    await allow(false);
    const cut = await admin(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '${h.dbName}'`);
    assert.equal(cut.code, 0, cut.stderr);
    assert.ok(await waitFor(async () => sample(text = await scrape(srv), 'tocsin_postgres_up') === 0, BOUND_MS, 200),
        `tocsin_postgres_up stayed 1:\n${text}`);
    assert.equal(sample(text, 'tocsin_outbox_pending'), null, text);
    assert.equal(sample(text, 'tocsin_outbox_oldest_due_seconds'), null, text);
    assert.ok(sample(text, 'tocsin_reminders_fired_total') !== null, 'the rest of the scrape is there');

    await allow(true);
    assert.ok(await waitFor(async () => sample(text = await scrape(srv), 'tocsin_postgres_up') === 1, BOUND_MS, 200),
        `tocsin_postgres_up stayed 0 once PostgreSQL took connections again:\n${text}`);
    assert.equal(sample(text, 'tocsin_outbox_pending'), 0, text);
    await srv.stop();
});
