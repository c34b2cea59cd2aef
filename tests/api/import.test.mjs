// import.test.mjs -- `tocsin import --tenant NAME FILE` (docs/operations.md): JSON lines through
// the batch of POST /v1/meetings/batch, failed lines reported by number with exit 1, a run again
// creating nothing twice, the reminders armed in Redis, standard input as '-'.
import { before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { harness, test, run, isoIn, HOUR } from './harness.mjs';

const h = await harness('import');
let srv;
let key;
let dir;

before(async () => {
    srv = await h.startServer();
    key = await srv.createKey('import-a');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-import-'));
});

const line = (title, extra = {}) => JSON.stringify({ title, starts_at: isoIn(2 * HOUR), reminders: [{ minutes_before: 10 }], ...extra });
const importFile = (file, tenant = 'import-a') =>
    run(h.env.bin, ['import', '--tenant', tenant, file], { env: srv.env });

async function titles() {
    const r = await srv.req('GET', '/v1/meetings?limit=100', { key });
    return r.json.items.map((m) => m.title).sort();
}

test('failed lines are named by number, the rest is created; a run again creates nothing', async () => {
    const file = path.join(dir, 'a.jsonl');
    fs.writeFileSync(file, [line('one'), '{"title": ', line(''), '', line('four', { idempotency_key: 'own-4' })].join('\n') + '\n');
    const r = await importFile(file);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^line 2: 400 bad_json/m);
    assert.match(r.stderr, /^line 3: 400 validation: title/m);
    assert.match(r.stderr, /2 created, 0 already there, 2 failed/);
    assert.deepEqual(await titles(), ['four', 'one']);
    const again = await importFile(file);
    assert.match(again.stderr, /0 created, 2 already there, 2 failed/);
    assert.deepEqual(await titles(), ['four', 'one'], 'nothing created twice');

    const good = path.join(dir, 'good.jsonl');
    fs.writeFileSync(good, line('one') + '\n' + line('five') + '\n');
    const ok = await importFile(good);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stderr, /1 created, 1 already there, 0 failed/);
    const list = await srv.req('GET', '/v1/meetings?limit=100', { key });
    const five = list.json.items.find((m) => m.title === 'five');
    const armed = await h.redis.keys(`${srv.prefix}:rem:${five.reminders[0].id}:*`);
    assert.equal(armed.length, 1, 'the reminder of an imported meeting is armed in Redis');
});

test("'-' reads standard input; usage errors exit 2", async () => {
    const child = spawn(h.env.bin, ['import', '--tenant', 'import-a', '-'], { env: srv.env });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    child.stdin.end(line('from stdin') + '\n');
    const code = await new Promise((resolve) => child.on('close', resolve));
    assert.equal(code, 0, stderr);
    assert.ok((await titles()).includes('from stdin'));
    const usage = await run(h.env.bin, ['import', 'x'], { env: srv.env });
    assert.equal(usage.code, 2);
});

test('--jobs 3: batches written at once, every line created once, failures reported in line order', async () => {
    // 2,600 lines are three batches of 1,000 in flight together; the bad lines fall in each.
    const bad = new Map([[10, '{"title": '], [1500, line('')], [2599, '[1]']]);
    const lines = [];
    for (let no = 1; no <= 2600; no++) {
        lines.push(bad.get(no) ?? line(`jobs ${no}`));
    }
    const file = path.join(dir, 'jobs.jsonl');
    fs.writeFileSync(file, lines.join('\n') + '\n');
    const count = async () => Number(await h.sql("SELECT count(*) FROM meetings WHERE title LIKE 'jobs %'"));
    const args = ['import', '--jobs', '3', '--tenant', 'import-a', file];
    const r = await run(h.env.bin, args, { env: srv.env });
    assert.equal(r.code, 1, r.stderr);
    const reported = [...r.stderr.matchAll(/^line (\d+): (\d+) /gm)].map((m) => [Number(m[1]), Number(m[2])]);
    assert.deepEqual(reported, [[10, 400], [1500, 400], [2599, 400]], r.stderr);
    assert.match(r.stderr, /2597 created, 0 already there, 3 failed/);
    assert.equal(await count(), 2597);
    const pending = await h.sql(`SELECT count(*) FROM reminders r JOIN meetings m ON m.id = r.meeting_id
        WHERE m.title LIKE 'jobs %' AND r.status = 'pending'`);
    assert.equal(Number(pending), 2597, 'every meeting has its reminder');

    const again = await run(h.env.bin, args, { env: srv.env });
    assert.equal(again.code, 1, again.stderr);
    assert.match(again.stderr, /0 created, 2597 already there, 3 failed/);
    assert.equal(await count(), 2597, 'a run again creates nothing');

    for (const jobs of ['0', '9', 'x']) {
        const usage = await run(h.env.bin, ['import', '--jobs', jobs, '--tenant', 'import-a', file], { env: srv.env });
        assert.equal(usage.code, 2, `--jobs ${jobs}: ${usage.stderr}`);
    }
    assert.equal(await count(), 2597, 'a usage error writes nothing');
});

test('--batch 100 --rate 500: a transaction a hundred lines, handed over no faster than the rate', async () => {
    const lines = [];
    for (let no = 1; no <= 250; no++) {
        lines.push(line(`rate ${no}`));
    }
    const file = path.join(dir, 'rate.jsonl');
    fs.writeFileSync(file, lines.join('\n') + '\n');
    const t0 = Date.now();
    const r = await run(h.env.bin, ['import', '--batch', '100', '--rate', '500', '--tenant', 'import-a', file], { env: srv.env });
    const took = Date.now() - t0;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /250 created, 0 already there, 0 failed/);
    // the third batch (lines 201..250) is handed over once 200 lines are within 500 a second
    assert.ok(took >= 400, `took ${took} ms`);
    const txs = await h.sql("SELECT count(DISTINCT xmin::text) FROM meetings WHERE title LIKE 'rate %'");
    assert.equal(Number(txs), 3, 'three transactions: 100, 100 and 50 lines');

    for (const bad of [['--batch', '0'], ['--batch', '1001'], ['--rate', '0'], ['--rate', '1000001'], ['--rate', 'x'], ['--batch']]) {
        const usage = await run(h.env.bin, ['import', ...bad, '--tenant', 'import-a', file], { env: srv.env });
        assert.equal(usage.code, 2, `${bad.join(' ')}: ${usage.stderr}`);
    }
    const count = await h.sql("SELECT count(*) FROM meetings WHERE title LIKE 'rate %'");
    assert.equal(Number(count), 250, 'nothing created twice, nothing by a usage error');
});
