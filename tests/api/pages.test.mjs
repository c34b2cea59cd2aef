// pages.test.mjs -- big list pages: every page of a list endpoint stays within
// TOCSIN_PAGE_BYTES_MAX (a single item bigger than the bound still makes a page of its own), and
// following next_cursor yields every item exactly once, in order: GET /v1/meetings (plain and
// expand=true), GET /v1/meetings/{id}/occurrences and GET /v1/meetings/{id}/deliveries. Big pages
// are encoded item by item as the client reads, so clients that ask for big pages and never read
// do not hold the HTTP threads: another tenant is answered meanwhile. HTTP/1.0 clients get a
// whole body too (no chunked encoding there: the connection ends the body).
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { harness, test, sleep } from './harness.mjs';

const h = await harness('pages');
const BOUND = 256 * 1024; // TOCSIN_PAGE_BYTES_MAX of the bounded server
const SMALLEST = 65536;   // its least value
// What a page may fall short of its bound by: the members after the items that are kept room for.
const TAIL_ROOM = 1024;
let srv; // TOCSIN_PAGE_BYTES_MAX=BOUND
let tiny; // TOCSIN_PAGE_BYTES_MAX=SMALLEST
let key;
const children = new Set();

before(async () => {
    srv = await h.startServer({ TOCSIN_PAGE_BYTES_MAX: String(BOUND) });
    tiny = await h.startServer({ TOCSIN_PAGE_BYTES_MAX: String(SMALLEST) });
    key = await srv.createKey('pages');
});

after(() => {
    for (const c of children) {
        c.kill('SIGKILL');
    }
});

const pad = (s, n) => (s + 'x'.repeat(n)).slice(0, n);
const T0 = Date.UTC(2031, 0, 1);

// A meeting of about 57 KB (the body bound is 64 KiB): 250 participants with 80-character ids and
// names, a 5,000-character description, 6 KB of metadata.
function big(i, extra = {}) {
    const metadata = {};
    for (let k = 0; k < 60; k++) {
        metadata[`key${k}`] = pad(`value ${k} `, 90);
    }
    return {
        title: `big ${i}`,
        starts_at: new Date(T0 + i * 60000).toISOString(),
        description: pad(`meeting ${i} `, 5000),
        participants: Array.from({ length: 250 }, (_, k) => ({ id: pad(`p${i}-${k}-`, 80), name: pad(`Name ${k} `, 80) })),
        metadata,
        reminders: [{ minutes_before: 5 }],
        ...extra,
    };
}

async function create(s, k, json) {
    const r = await s.req('POST', '/v1/meetings', { key: k, json });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

// Every page of path (a query string included), following next_cursor; asserts each page's bounds
// and returns the pages: {bytes, items (parsed), itemBytes (each item's JSON length)}.
async function walk(s, k, path, bound) {
    const pages = [];
    let cursor = null;
    do {
        const r = await s.req('GET', `${path}${cursor ? `&cursor=${cursor}` : ''}`, { key: k });
        assert.equal(r.status, 200, r.text.slice(0, 300));
        const bytes = Buffer.byteLength(r.text);
        const items = r.json.items;
        assert.ok(items.length >= 1 || pages.length === 0, `page ${pages.length} of ${path} is empty but not the first`);
        assert.ok(bytes <= bound || items.length === 1, `page ${pages.length} of ${path}: ${bytes} bytes > ${bound}`);
        pages.push({ bytes, items, itemBytes: items.map((it) => Buffer.byteLength(JSON.stringify(it))) });
        cursor = r.json.next_cursor;
        assert.ok(pages.length < 1000, 'the cursors end');
    } while (cursor);
    // No page stops early: the first item of the next one would have taken it past the bound (or
    // the page holds limit items).
    const limit = Number(/[?&]limit=(\d+)/.exec(path)[1]);
    for (let i = 0; i + 1 < pages.length; i++) {
        if (pages[i].items.length === limit) {
            continue;
        }
        const grown = pages[i].bytes + 1 + pages[i + 1].itemBytes[0];
        assert.ok(grown > bound - TAIL_ROOM, `page ${i} of ${path} (${pages[i].bytes} bytes) had room for the next item (${grown})`);
    }
    return pages;
}

const items = (pages) => pages.flatMap((p) => p.items);

test('GET /v1/meetings: each page within TOCSIN_PAGE_BYTES_MAX, and the cursors give every meeting once, in order', async () => {
    const k = await srv.createKey('pages-list');
    const made = [];
    for (let i = 0; i < 14; i++) {
        made.push(await create(srv, k, big(i)));
        // Small ones between the big ones: pages of mixed sizes.
        made.push(await create(srv, k, { title: `small ${i}`, starts_at: new Date(T0 + i * 60000 + 30000).toISOString() }));
    }
    const pages = await walk(srv, k, '/v1/meetings?limit=200', BOUND);
    assert.ok(pages.length >= 3, `${pages.length} pages for ${made.length} meetings of ~57 KB under ${BOUND} bytes`);
    assert.deepEqual(items(pages).map((m) => m.id), made.map((m) => m.id), 'every meeting once, in (starts_at, id) order');
    assert.deepEqual(items(pages)[0], made[0], 'an item is the meeting as created');
    // The bound holds whatever the limit: a small limit still pages by count.
    const few = await walk(srv, k, '/v1/meetings?limit=3', BOUND);
    assert.deepEqual(items(few).map((m) => m.id), made.map((m) => m.id));
    assert.ok(few.every((p) => p.items.length <= 3));
});

test('a single meeting bigger than the bound is a page of its own', async () => {
    const k = await tiny.createKey('pages-tiny');
    // As close to the 64 KiB body bound as it goes; its representation adds ids, times and the
    // reminders' state, which takes it past 65,536 bytes.
    const body = big(0, { reminders: [1, 2, 3, 4, 5].map((m) => ({ minutes_before: m })) });
    for (let n = 0; JSON.stringify(body).length < 65536 - 120; n++) {
        body.participants.push({ id: `q${n}`, name: pad('', 80) });
    }
    body.participants.pop();
    const made = [await create(tiny, k, body), await create(tiny, k, { ...body, title: 'second', starts_at: new Date(T0 + 60000).toISOString() })];
    assert.ok(Buffer.byteLength(JSON.stringify(made[0])) > SMALLEST, 'the meeting alone passes the bound');
    const pages = await walk(tiny, k, '/v1/meetings?limit=200', SMALLEST);
    assert.deepEqual(pages.map((p) => p.items.length), [1, 1]);
    assert.deepEqual(items(pages).map((m) => m.id), made.map((m) => m.id));
});

// A daily series of big meetings (30 occurrences) and 6 big single meetings among them.
async function calendar(k) {
    const s = await create(srv, k, big(100, {
        starts_at: new Date(T0).toISOString(), time_zone: 'UTC', recurrence: { rrule: 'FREQ=DAILY;COUNT=30' },
    }));
    const singles = [];
    for (let i = 0; i < 6; i++) {
        singles.push(await create(srv, k, big(200 + i, { starts_at: new Date(T0 + (i * 5 + 2) * 86400000 + 3600000).toISOString() })));
    }
    return { s, singles };
}

test('expand=true and the occurrences list: pages within the bound, every occurrence once', async () => {
    const k = await srv.createKey('pages-expand');
    const { s, singles } = await calendar(k);
    const from = new Date(T0).toISOString();
    const to = new Date(T0 + 40 * 86400000).toISOString();
    const occ = await walk(srv, k, `/v1/meetings/${s.id}/occurrences?limit=200&from=${from}&to=${to}`, BOUND);
    assert.deepEqual(items(occ).map((o) => o.original_start),
        Array.from({ length: 30 }, (_, d) => new Date(T0 + d * 86400000).toISOString()));
    const ex = await walk(srv, k, `/v1/meetings?expand=true&limit=200&from=${from}&to=${to}`, BOUND);
    const got = items(ex).map((m) => `${m.id}@${m.starts_at}`);
    const want = [
        ...Array.from({ length: 30 }, (_, d) => `${s.id}@${new Date(T0 + d * 86400000).toISOString()}`),
        ...singles.map((m) => `${m.id}@${m.starts_at}`),
    ].sort((a, b) => a.split('@')[1].localeCompare(b.split('@')[1]));
    assert.deepEqual(got, want, 'every occurrence and single meeting once, in time order');
    assert.ok(ex.length >= 8, `${ex.length} pages`);
});

test('GET /v1/meetings/{id}/deliveries pages by limit and cursor, within the bound', async () => {
    const k = await tiny.createKey('pages-deliveries');
    const m = await create(tiny, k, { title: 'delivered', starts_at: new Date(T0).toISOString() });
    const tenant = await h.sql("SELECT id FROM tenants WHERE name = 'pages-deliveries'");
    // 400 records of a reminder, each with a long last error: 900 bytes each, 360 KB in all.
    await h.sql(`INSERT INTO outbox (tenant_id, meeting_id, reminder_id, fire_at, channel, target, receiver,
                   status, attempts, last_error)
                 SELECT ${tenant}, '${m.id}', ${m.reminders[0].id}, now(), 'stream', 'pages-' || g, 'r',
                   'failed', 3, 'error ' || g || ' ' || repeat('e', 480)
                 FROM generate_series(1, 400) g`);
    const all = items(await walk(tiny, k, `/v1/meetings/${m.id}/deliveries?limit=200`, SMALLEST));
    assert.equal(all.length, 400);
    assert.equal(new Set(all.map((d) => d.id)).size, 400, 'every record once');
    assert.deepEqual(all.map((d) => Number(d.id)), all.map((d) => Number(d.id)).sort((a, b) => a - b), 'oldest first');
    const byTen = items(await walk(tiny, k, `/v1/meetings/${m.id}/deliveries?limit=10`, SMALLEST));
    assert.deepEqual(byTen, all);
    const first = await tiny.req('GET', `/v1/meetings/${m.id}/deliveries`, { key: k });
    assert.equal(first.json.items.length, 50, 'the default limit');
    for (const q of ['limit=0', 'limit=201', 'cursor=zz', 'from=2031-01-01T00:00:00Z', 'limit=1&limit=2']) {
        const r = await tiny.req('GET', `/v1/meetings/${m.id}/deliveries?${q}`, { key: k });
        assert.equal(r.status, 400, `${q}: ${r.text}`);
        assert.equal(r.json.code, 'bad_query');
    }
});

test('HTTP/1.0 and HEAD: a whole page, and no body', async () => {
    const k = await srv.createKey('pages-http10');
    const made = [];
    for (let i = 0; i < 6; i++) {
        made.push(await create(srv, k, big(i)));
    }
    const r = await srv.raw(`GET /v1/meetings?limit=200 HTTP/1.0\r\nAuthorization: Bearer ${k}\r\n\r\n`, { timeoutMs: 15000 });
    assert.equal(r.status, 200);
    assert.equal(r.header('transfer-encoding'), null, 'no chunked encoding for HTTP/1.0');
    assert.ok(Buffer.byteLength(r.text) <= BOUND);
    assert.deepEqual(r.json.items.map((m) => m.id), made.slice(0, r.json.items.length).map((m) => m.id));
    assert.ok(r.json.next_cursor, 'a cursor for the rest');
    const hd = await fetch(`${srv.base}/v1/meetings?limit=200`, { method: 'HEAD', headers: { Authorization: `Bearer ${k}` } });
    assert.equal(hd.status, 200);
    assert.equal((await hd.arrayBuffer()).byteLength, 0);
    assert.equal((await srv.req('GET', '/v1/meetings?limit=1', { key: k })).status, 200, 'the server goes on');
});

// ---- slow readers ---------------------------------------------------------------------------

const SLOW_READERS = 12; // above the HTTP threads of the server under test (2)
const HOLD_MS = 8000;
const PROBE_BOUND_MS = 2500; // generous: idle, such a request takes a few milliseconds

// Clients that send a request each with a 4 KiB receive buffer and never read (Node cannot set
// SO_RCVBUF: a Python child holds them), until close().
function slowReaders(port, n, path, k) {
    const py = `
import socket, sys
socks = []
for _ in range(${n}):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", ${port}))
    s.sendall(b"GET ${path} HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer ${k}\\r\\n\\r\\n")
    socks.append(s)
print("open", flush=True)
sys.stdin.readline()
`;
    const child = spawn('python3', ['-c', py], { stdio: ['pipe', 'pipe', 'inherit'] });
    children.add(child);
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    return {
        opened: async () => {
            while (!out.includes('open')) {
                assert.equal(child.exitCode, null, 'the slow readers are running');
                await sleep(20);
            }
        },
        close: () => new Promise((resolve) => {
            child.on('exit', resolve);
            child.stdin.end('\n');
            children.delete(child);
        }),
    };
}

test('clients that ask for big pages and never read do not hold up another tenant', async () => {
    const slow = await h.startServer({ TOCSIN_HTTP_THREADS: '2' });
    const hog = await slow.createKey('pages-hog');
    const other = await slow.createKey('pages-other');
    const first = await create(slow, hog, big(0));
    // 199 copies of it straight into the table: 200 meetings of ~57 KB, 11 MB for limit=200.
    await h.sql(`INSERT INTO meetings (id, tenant_id, title, description, starts_at, time_zone, location,
                   participants, metadata, version, created_at, updated_at)
                 SELECT gen_random_uuid(), tenant_id, title || ' ' || g, description,
                   starts_at + g * interval '1 minute', time_zone, location, participants, metadata,
                   version, created_at, updated_at
                 FROM meetings, generate_series(1, 199) g WHERE id = '${first.id}'`);
    await create(slow, other, { title: 'mine', starts_at: new Date(T0).toISOString() });
    const probe = async () => {
        const t0 = performance.now();
        const r = await slow.req('GET', '/v1/meetings?limit=1', { key: other, timeoutMs: 30000 });
        assert.equal(r.status, 200);
        assert.equal(r.json.items.length, 1);
        return performance.now() - t0;
    };
    await probe();
    const readers = slowReaders(slow.port, SLOW_READERS, '/v1/meetings?limit=200', hog);
    await readers.opened();
    const lat = [];
    const end = Date.now() + HOLD_MS;
    while (Date.now() < end) {
        lat.push(await probe());
        await sleep(100);
    }
    await readers.close();
    const worst = Math.max(...lat);
    assert.ok(worst < PROBE_BOUND_MS, `with ${SLOW_READERS} slow readers of big pages, another tenant waited ` +
        `up to ${worst.toFixed(0)} ms (${lat.length} requests)`);
    assert.ok(lat.length >= 10, `${lat.length} requests answered in ${HOLD_MS} ms`);
    // The slow readers' connections closed: the server goes on and lists the whole tenant.
    const all = items(await walk(slow, hog, '/v1/meetings?limit=200', 2 * 1024 * 1024));
    assert.equal(all.length, 200);
    await slow.stop();
});
