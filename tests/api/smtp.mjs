// smtp.mjs -- a real SMTP server for tests (tests/api/smtp_server.py: Debian's python3-aiosmtpd)
// on 127.0.0.1, started and stopped by PID. Every accepted message comes back parsed by parsers
// that are not tocsin's (Python's email package, python3-icalendar). A missing python3-aiosmtpd
// is a failure, never a skip.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, waitFor } from './harness.mjs';

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'smtp_server.py');
// Debian's own python3, for which python3-aiosmtpd and python3-icalendar are installed.
const PYTHON = process.env.TOCSIN_TEST_PYTHON ?? '/usr/bin/python3';
const START_MS = 15000;

function listening(port) {
    return new Promise((resolve) => {
        const s = net.connect(port, '127.0.0.1');
        s.once('connect', () => { s.destroy(); resolve(true); });
        s.once('error', () => resolve(false));
    });
}

// An SMTP server on a port of its own, kept across stop() and start() (a server down, then up).
export class SmtpServer {
    constructor(port, dir) {
        this.port = port;
        this.dir = dir;
        this.out = path.join(dir, 'messages.jsonl');
        this.child = null;
        this.log = '';
    }

    get url() {
        return `smtp://127.0.0.1:${this.port}`;
    }

    // refuse: '451' (try later) or '550' (refused for good) answers every RCPT so.
    async start({ refuse } = {}) {
        const args = [SCRIPT, '--port', String(this.port), '--out', this.out, ...(refuse ? ['--refuse', refuse] : [])];
        const child = spawn(PYTHON, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        this.child = child;
        this.exit = new Promise((r) => child.once('exit', (code, sig) => r(code ?? sig)));
        child.stdout.on('data', (d) => { this.log += d; });
        child.stderr.on('data', (d) => { this.log += d; });
        const up = await waitFor(async () => child.exitCode !== null || await listening(this.port), START_MS, 50);
        if (up !== true || child.exitCode !== null) {
            throw new Error(`SMTP server did not start on ${this.port}: ${this.log}`);
        }
        return this;
    }

    async stop() {
        if (this.child && this.child.exitCode === null) {
            process.kill(this.child.pid, 'SIGTERM');
            await this.exit;
        }
        this.child = null;
    }

    // Every message accepted so far, oldest first.
    messages() {
        if (!fs.existsSync(this.out)) return [];
        return fs.readFileSync(this.out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    }
}

// A started SMTP server in a directory of its own; cleanup() stops it and removes the directory
// (a test file calls it from a top-level after()).
export async function smtpServer(opts) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-smtp-'));
    const s = new SmtpServer(await freePort(), dir);
    s.cleanup = async () => {
        await s.stop();
        fs.rmSync(dir, { recursive: true, force: true });
    };
    return s.start(opts);
}

// The value of header name (case-insensitive) of a parsed message, or undefined.
export function header(msg, name) {
    const h = msg.headers.find(([k]) => k.toLowerCase() === name.toLowerCase());
    return h ? h[1] : undefined;
}
