// The shell blocks of README.md, docs/recurring.md and the webhook how-to of docs/channels.md, run
// as written. A block to run carries a mark on the line before it:
//   <!-- readme-test: dev -->              run here against a server set up as scripts/dev.sh sets
//                                          one up (its own Redis with the default key prefix, the
//                                          tenant's key in a file), after the substitutions of
//                                          DEV_SUBSTITUTIONS (each must occur: a document that
//                                          drifts from scripts/dev.sh fails here too);
//   <!-- readme-test: file NAME -->        written to NAME in the folder the dev blocks run in;
//   <!-- readme-test: the two commands --> the README's two commands, which CI runs itself in a
//                                          bare Debian 12 (scripts/debian12.sh).
// Every ```sh block of the README must carry one. Comments ending in `# NNN` name the status a
// line prints: they must come out, in order.
import { before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { harness, test, run, freePort } from './harness.mjs';

const h = await harness('readme');
const read = (doc) => fs.readFileSync(new URL(`../../${doc}`, import.meta.url), 'utf8');
const MARK = /<!-- readme-test: (dev|file [\w.]+|the two commands) -->\n```\w+\n([\s\S]*?)\n```/g;
const SCRIPT_TIMEOUT_MS = 60000;

let srv;
let redis;
let keyFile;
let hookPort;

// What scripts/dev.sh fixes that a test server cannot share: its address, its Redis port, where
// its key lives; and the receiver's port of the webhook how-to.
const DEV_SUBSTITUTIONS = () => [
    ['http://127.0.0.1:8080', srv.base],
    ['redis-cli -p 63799', `redis-cli -p ${redis.port}`],
    ['$(cat .local/dev/api_key)', `$(cat ${keyFile})`],
    ['127.0.0.1:9000', `127.0.0.1:${hookPort}`],
    ["9000, '127.0.0.1'", `${hookPort}, '127.0.0.1'`],
    ["('127.0.0.1', 9000)", `('127.0.0.1', ${hookPort})`],
];

before(async () => {
    // A plain Redis as scripts/dev.sh starts one, also in the TLS run: the README's redis-cli
    // lines talk to it without TLS (and the server is given no CA).
    redis = await h.startRedis(null);
    srv = await h.startServer({
        TOCSIN_REDIS_URL: redis.url,
        TOCSIN_REDIS_TLS_CA: undefined,
        TOCSIN_REDIS_PREFIX: 'tocsin',
        TOCSIN_WEBHOOK_ALLOW_NETS: '127.0.0.0/8,::1',
        TOCSIN_DEMO: '1',
    });
    keyFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-readme-')), 'api_key');
    fs.writeFileSync(keyFile, `${await srv.createKey('dev')}\n`, { mode: 0o600 });
    hookPort = await freePort();
});

function blocks(doc) {
    return [...read(doc).matchAll(MARK)].map((m) => ({ kind: m[1], text: m[2] }));
}

// Applies the substitutions that occur in text.
function substitute(text) {
    for (const [from, to] of DEV_SUBSTITUTIONS()) {
        text = text.split(from).join(to);
    }
    return { text };
}

// Runs one dev block in dir as a user's shell would: no -e (a stream's curl ends by its
// --max-time, exit 28, as at a prompt), but a failing pipe is seen and every status checked.
async function runDev(block, dir, script = block.text) {
    const { text } = substitute(script);
    const r = await run('bash', ['-o', 'pipefail', '-c', text], {
        cwd: dir, timeout: SCRIPT_TIMEOUT_MS,
        env: { PATH: process.env.PATH, HOME: process.env.HOME ?? '/tmp', LANG: 'C', TOKEN: fs.readFileSync(keyFile, 'utf8').trim(), URL: srv.base },
    });
    const last = script.trim().split('\n').at(-1);
    const ok = /--max-time/.test(last) ? [0, 28] : [0];
    assert.ok(ok.includes(r.code), `the block failed (exit ${r.code}):\n${r.stderr}\n--- stdout ---\n${r.stdout}`);
    assert.doesNotMatch(r.stderr, /parse error|syntax error|command not found|Traceback|Error:/, r.stderr);
    let at = 0;
    for (const status of [...script.matchAll(/#\s*(\d{3})\b[^\n]*$/gm)].map((m) => m[1])) {
        const i = r.stdout.indexOf(status, at);
        assert.ok(i >= 0, `"${status}" (a comment's status) missing after offset ${at}:\n${r.stdout}`);
        at = i + status.length;
    }
    return r;
}

test('every shell block of the README is marked: run here, or run by CI itself', () => {
    const all = read('README.md').match(/^```sh$/gm) ?? [];
    const marked = blocks('README.md');
    assert.ok(all.length >= 2, 'the README has its two commands and a curl session');
    assert.equal(marked.length, all.length, 'a ```sh block without a readme-test mark');
    assert.ok(marked.some((b) => b.kind === 'the two commands' && /scripts\/dev\.sh/.test(b.text)
        && /scripts\/test\.sh/.test(b.text)));
});

test("the README's curl session runs as pasted against a dev instance and prints what its comments say", async () => {
    const dev = blocks('README.md').filter((x) => x.kind === 'dev');
    assert.ok(dev.length >= 1);
    for (const b of dev) {
        assert.ok(b.text.includes('$(cat .local/dev/api_key)') && b.text.includes('http://127.0.0.1:8080'),
            'the session starts from what scripts/dev.sh prints: update this test and dev.sh together');
        const r = await runDev(b, fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-readme-')));
        if (/\/v1\/stream/.test(b.text)) {
            assert.match(r.stdout, /^event: reminder$/m, `the stream replayed the reminder:\n${r.stdout}`);
        }
        if (/redis-cli/.test(b.text)) {
            assert.match(r.stdout, /^tocsin:rem:\d+:\d+ expires at \d{13}$/m, `a reminder key and its expiry:\n${r.stdout}`);
        }
    }
});

test('the webhook how-to of docs/channels.md: its Node and its Python receiver each see a signed delivery', async () => {
    const all = blocks('docs/channels.md');
    const files = all.filter((b) => b.kind.startsWith('file '));
    const dev = all.filter((b) => b.kind === 'dev');
    assert.deepEqual(files.map((b) => b.kind).sort(), ['file receiver.mjs', 'file receiver.py']);
    assert.equal(dev.length, 1);
    assert.match(dev[0].text, /node receiver\.mjs/);
    for (const [cmd, run] of [['node receiver.mjs', 'node receiver.mjs'], ['python3 receiver.py', 'python3 receiver.py']]) {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-hook-'));
        // `npm install standardwebhooks` done: the suite's own copy (tests/package.json).
        fs.symlinkSync(new URL('../node_modules', import.meta.url).pathname, path.join(dir, 'node_modules'));
        for (const f of files) {
            fs.writeFileSync(path.join(dir, f.kind.slice(5)), substitute(f.text).text);
        }
        const r = await runDev(dev[0], dir, dev[0].text.split('node receiver.mjs').join(run));
        assert.match(r.stdout, /^signed rem_\d+_\d{13}$/m, `${cmd} printed a signed delivery:\n${r.stdout}\n${r.stderr}`);
        assert.doesNotMatch(r.stdout, /bad signature/);
    }
});

test('the curl example of docs/recurring.md runs as written: wall-clock 09:00 across the DST change', async () => {
    const dev = blocks('docs/recurring.md').filter((x) => x.kind === 'dev');
    assert.equal(dev.length, 1);
    const r = await runDev(dev[0], fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-recurring-')));
    assert.match(r.stdout, /"starts_at":"2027-03-29T07:00:00.000Z","starts_at_local":"2027-03-29T09:00:00.000\+02:00"/, r.stdout);
    assert.match(r.stdout, /"starts_at_local":"2027-03-15T09:00:00.000\+01:00"/, r.stdout);
    assert.match(r.stdout, /"title":"Weekly sync \(Tuesday\)"/, r.stdout);
});
