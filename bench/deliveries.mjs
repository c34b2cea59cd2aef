// bench/deliveries.mjs -- GET /v1/deliveries (the tenant-wide search) timed against one server over
// the data bench/deliveries_seed.sql wrote: each query below BENCH_REQUESTS times, one request
// after another on a keep-alive connection, over the tenants whose keys it is given in turn; a
// query with a cursor asks for the page after the first page of its tenant. Prints p50, p99 and
// the slowest per query, and the rows each first page held. Configured by the environment
// bench/deliveries.sh exports: TOCSIN_BIN, BENCH_DB_URL, BENCH_REDIS_URL, BENCH_KEYS
// (space-separated), BENCH_DIR; BENCH_REQUESTS (500), BENCH_PLANS_ONLY (1: one request per
// query, for the plans auto_explain logs).
import http from 'node:http';
import path from 'node:path';

import { startServer } from './serve.mjs';

const env = (name, def) => process.env[name] ?? def;
const KEYS = env('BENCH_KEYS', '').split(/\s+/).filter(Boolean);
const REQUESTS = Number(env('BENCH_REQUESTS', '500'));
const PLANS_ONLY = env('BENCH_PLANS_ONLY', '0') === '1';
const DIR = env('BENCH_DIR', '.');

// The queries: q words from the seed's list (each in ~6 of a tenant's 1,000 meeting titles), a
// last error (a fifth of the failed rows) and a word in no title.
export const QUERIES = [
    { name: 'status=failed, q=title word, first page', query: 'status=failed&q=planning&limit=20' },
    { name: 'status=failed, q=title word, cursor', query: 'status=failed&q=planning&limit=20', cursor: true },
    { name: 'status=failed, q=other word, cursor', query: 'status=failed&q=word123&limit=20', cursor: true },
    { name: 'status=failed, q=last error, cursor', query: 'status=failed&q=REFUSED&limit=50', cursor: true },
    { name: 'status=delivered, q=title word, cursor', query: 'status=delivered&q=Quarterly&limit=50', cursor: true },
    { name: 'no status, q=title word, cursor', query: 'q=planning&limit=50', cursor: true },
    { name: 'status=failed, no q, cursor', query: 'status=failed&limit=50', cursor: true },
    { name: 'status=failed, q=matching nothing', query: 'status=failed&q=zzzz&limit=50' },
    // GET /v1/stats over the same rows (issue 37): the tenant's counts, lateness and buckets.
    { name: 'stats, window=1h', path: '/v1/stats', query: 'window=1h' },
    { name: 'stats, window=24h', path: '/v1/stats', query: 'window=24h' },
];
// Which queries run: BENCH_QUERIES=search, stats or all (default).
const WHICH = env('BENCH_QUERIES', 'all');
const RUN = QUERIES.filter((q) => WHICH === 'all' || (WHICH === 'stats') === (q.path === '/v1/stats'));
const url = (q) => `${q.path ?? '/v1/deliveries'}?${q.query}`;

const log = (msg) => process.stderr.write(`==> ${msg}\n`);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function get(port, key, pathAndQuery) {
    return new Promise((resolve, reject) => {
        const t0 = process.hrtime.bigint();
        const req = http.get({ host: '127.0.0.1', port, path: pathAndQuery, agent,
            headers: { Authorization: `Bearer ${key}` } }, (res) => {
            const chunks = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString(),
                ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
        });
        req.on('error', reject);
        req.setTimeout(30000, () => req.destroy(new Error('timed out')));
    });
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

async function main() {
    const { port, stop } = await startServer(env('TOCSIN_BIN'), {
        TOCSIN_DATABASE_URL: env('BENCH_DB_URL'), TOCSIN_REDIS_URL: env('BENCH_REDIS_URL'),
        TOCSIN_LOG_LEVEL: 'warn', TOCSIN_TENANT_RATE: '0',
    }, path.join(DIR, PLANS_ONLY ? 'tocsin-plans.log' : 'tocsin.log'));
    try {
        // The first page of each query and tenant: its cursor, and a warm cache as in steady use.
        const cursors = new Map();
        let planned = 0;
        for (const q of RUN) {
            for (const key of KEYS) {
                const r = await get(port, key, url(q));
                if (r.status !== 200) {
                    throw new Error(`${q.query}: ${r.status} ${r.body}`);
                }
                const page = JSON.parse(r.body);
                cursors.set(`${q.name}|${key}`, { cursor: page.next_cursor, items: page.items?.length ?? 0 });
                if (PLANS_ONLY) {
                    console.log(`plan ${++planned}: ${url(q)} (first page)`);
                    break;
                }
            }
        }
        const rows = [];
        for (const q of RUN) {
            const times = [];
            let items = 0;
            let pages = 0;
            const n = PLANS_ONLY ? (q.cursor ? 1 : 0) : REQUESTS;
            for (let i = 0; i < n; i++) {
                const key = KEYS[i % KEYS.length];
                const c = cursors.get(`${q.name}|${key}`);
                if (q.cursor && !c.cursor) {
                    continue; // this tenant's first page was its last
                }
                const r = await get(port, key, `${url(q)}${q.cursor ? `&cursor=${c.cursor}` : ''}`);
                if (r.status !== 200) {
                    throw new Error(`${q.query}: ${r.status} ${r.body}`);
                }
                times.push(r.ms);
                items += JSON.parse(r.body).items?.length ?? 0;
                if (PLANS_ONLY) {
                    console.log(`plan ${++planned}: ${url(q)}${q.cursor ? ' (page after the first)' : ''}`);
                }
                pages++;
            }
            if (PLANS_ONLY) {
                continue;
            }
            times.sort((a, b) => a - b);
            const first = KEYS.map((k) => cursors.get(`${q.name}|${k}`).items);
            rows.push({ query: q.name, requests: times.length, p50_ms: pct(times, 50).toFixed(1),
                p99_ms: pct(times, 99).toFixed(1), max_ms: times[times.length - 1].toFixed(1),
                items_per_page: (items / Math.max(pages, 1)).toFixed(1),
                first_page_items: `${Math.min(...first)}..${Math.max(...first)}` });
        }
        if (!PLANS_ONLY) {
            console.table(rows);
            const worst = Math.max(...rows.filter((r) => !/nothing/.test(r.query)).map((r) => Number(r.p99_ms)));
            console.log(`worst p99 of the queries with a cursor or a match: ${worst.toFixed(1)} ms (goal <= 50 ms)`);
        }
    } finally {
        await stop();
        agent.destroy();
    }
}

main().catch((e) => {
    log(e.stack || String(e));
    process.exit(1);
});
