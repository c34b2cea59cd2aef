// client.test.mjs -- web/client.js outside a browser: its event-stream parser against the WHATWG
// rules (split lines, CR/LF/CRLF, comments, id-only blocks), and connect() against a real tocsin
// (node's fetch streams the body as a browser's does; no tab sharing here, as node has no Web
// Locks): hello and reminders once each, resume across a replica restart, a 401 answered with a
// new token, reauth, the heartbeat watchdog, a fatal 403. The Chromium tests cover tab sharing.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { harness, test, waitFor, MIN } from './harness.mjs';
import { connect, createEventStreamParser, fetchInbox } from '../../web/client.js';

test('the parser: fields, comments, line ends in any chunking, id-only blocks, retry', () => {
    const input = 'retry: 250\n\n: comment\nid: 7\nevent: hello\ndata: {"a":1}\n\n' +
        'data:no space\ndata\ndata:  two\r\n\r\nid: 9\r\rid: 10\nevent: reminder\ndata: x\n\n' +
        'event: reauth\ndata: y\n\nid\n\nid: 11\ndata: partial';
    const want = {
        events: [['hello', '{"a":1}', '7'], ['message', 'no space\n\n two', '7'], ['reminder', 'x', '10'], ['reauth', 'y', '10']],
        ids: ['9', ''],
        retries: [250],
    };
    const parse = (chunks) => {
        const got = { events: [], ids: [], retries: [] };
        const p = createEventStreamParser({
            onEvent: (e) => got.events.push([e.type, e.data, e.lastEventId]),
            onId: (id) => got.ids.push(id),
            onRetry: (ms) => got.retries.push(ms),
        });
        chunks.forEach((c) => p.push(c));
        return got;
    };
    // Every way of cutting the text in two, and one character at a time, gives the same result.
    for (let c = 0; c <= input.length; c++) {
        assert.deepEqual(parse([input.slice(0, c), input.slice(c)]), want, `cut at ${c}`);
    }
    assert.deepEqual(parse([...input]), want, 'one character at a time');
});

const h = await harness('client');
let srv;
let key;
const clients = [];

before(async () => {
    srv = await h.startServer({ TOCSIN_STREAM_HEARTBEAT_MS: '300', TOCSIN_STREAM_RETRY_MS: '100' });
    key = await srv.createKey('client');
});
after(() => clients.forEach((c) => c.close()));

async function mint(sub, scope = 'notifications', ttl = 900) {
    const r = await srv.req('POST', '/v1/browser-tokens', { key, json: { sub, scope, ttl_s: ttl } });
    assert.equal(r.status, 201, r.text);
    return r.json.token;
}

// connect() with a record of what it reported.
function open(opts) {
    const log = { states: [], reminders: [], resets: [], tokens: 0 };
    const c = connect({
        baseUrl: srv.base,
        shareTabs: false,
        backoffBaseMs: 50,
        backoffMaxMs: 400,
        heartbeatMs: 300,
        onState: (s, d) => log.states.push({ s, ...d }),
        onReminder: (n, { seq }) => log.reminders.push({ seq, id: n.id, title: n.data.meeting.title }),
        onReset: (r) => log.resets.push(r),
        ...opts,
        getToken: async () => { log.tokens += 1; return opts.getToken(log.tokens); },
    });
    clients.push(c);
    return { c, log };
}

const lastState = (log) => log.states.at(-1)?.s;

async function fireFor(sub, title) {
    const r = await srv.req('POST', '/v1/meetings', {
        key,
        json: { title, starts_at: new Date(Date.now() + 2 * MIN).toISOString(), participants: [{ id: sub }], reminders: [{ minutes_before: 5 }] },
    });
    assert.equal(r.status, 201, r.text);
}

test('connect: open, each reminder once and in order, resumed across a restart of the server', async () => {
    const tok = await mint('c1');
    const { c, log } = open({ getToken: () => tok });
    assert.ok(await waitFor(() => lastState(log) === 'open', 5000), JSON.stringify(log.states));
    assert.equal(log.states[0].role, 'solo');
    await fireFor('c1', 'one');
    await fireFor('c1', 'two');
    assert.ok(await waitFor(() => log.reminders.length === 2, 5000), JSON.stringify(log));
    await srv.restart();
    await fireFor('c1', 'three');
    assert.ok(await waitFor(() => log.reminders.length === 3, 10000), JSON.stringify(log));
    assert.deepEqual(log.reminders.map((r) => r.title), ['one', 'two', 'three']);
    const seqs = log.reminders.map((r) => r.seq);
    assert.deepEqual([...seqs].sort((a, b) => a - b), seqs);
    assert.equal(new Set(seqs).size, 3);
    assert.equal(c.cursor(), seqs[2]);
    const inbox = await fetchInbox({ baseUrl: srv.base, getToken: () => tok });
    assert.deepEqual(inbox.items.map((i) => i.seq), seqs);
    assert.ok(log.states.some((s) => s.s === 'reconnecting'), 'the restart was seen');
    assert.equal(lastState(log), 'open');
    c.close();
    assert.equal(lastState(log), 'closed');
});

test('connect: a 401 asks getToken again at once; a cursor ahead of the head is reset', async () => {
    const good = await mint('c2');
    const { c, log } = open({ getToken: (n) => (n === 1 ? `${good.slice(0, -4)}AAAA` : good), cursor: 1e12 });
    assert.ok(await waitFor(() => lastState(log) === 'open', 5000), JSON.stringify(log.states));
    assert.equal(log.tokens, 2);
    assert.ok(log.states.some((s) => s.s === 'reconnecting' && /invalid_token/.test(s.error)));
    assert.ok(await waitFor(() => log.resets.length === 1, 5000));
    assert.equal(log.resets[0].reason, 'cursor_ahead');
    assert.equal(c.cursor(), log.resets[0].head);
    c.close();
});

test('connect: reauth gets a new token and reconnects without leaving open', async () => {
    const tokens = [await mint('c3', 'notifications', 32), await mint('c3', 'notifications', 900)];
    const { c, log } = open({ getToken: (n) => tokens[Math.min(n, 2) - 1] });
    assert.ok(await waitFor(() => log.tokens >= 2, 8000), 'reauth (or the renew timer) asked for a token');
    await fireFor('c3', 'after reauth');
    assert.ok(await waitFor(() => log.reminders.length === 1, 5000), JSON.stringify(log));
    assert.deepEqual(log.states.map((s) => s.s).filter((s, i, a) => s !== a[i - 1]), ['connecting', 'open']);
    c.close();
});

test('connect: a silent stream is dropped after 2.5 heartbeats; a token without the scope fails for good', async () => {
    const tok = await mint('c4');
    const { c, log } = open({ getToken: () => tok, heartbeatMs: 40 }); // the server beats every 300 ms
    assert.ok(await waitFor(() => log.states.some((s) => /no data for 0.1 s/.test(s.error ?? '')), 5000), JSON.stringify(log.states));
    c.close();
    const ro = await mint('c5', 'meetings:read');
    const bad = open({ getToken: () => ro });
    assert.ok(await waitFor(() => lastState(bad.log) === 'failed', 5000), JSON.stringify(bad.log.states));
    assert.match(bad.log.states.at(-1).error, /403 insufficient_scope/);
    bad.c.close();
});
