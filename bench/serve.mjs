// bench/serve.mjs -- a `tocsin serve` for a benchmark (bench/deliveries.mjs, bench/recover.mjs):
// started on a free port of 127.0.0.1 with the given environment, its output into a log file,
// resolved once /readyz answers 200.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

const READY_TRIES = 300;
const READY_STEP_MS = 100;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.once('error', reject);
        s.listen(0, '127.0.0.1', () => {
            const { port } = s.address();
            s.close(() => resolve(port));
        });
    });
}

// Resolves with { child, port, stop() }; env is added to process.env.
export async function startServer(bin, env, logFile) {
    const port = await freePort();
    const out = fs.openSync(logFile, 'w');
    const child = spawn(bin, ['serve'], {
        stdio: ['ignore', out, out],
        env: { ...process.env, TOCSIN_HTTP_ADDR: `127.0.0.1:${port}`, ...env },
    });
    const stop = async () => {
        child.kill('SIGTERM');
        await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    };
    for (let i = 0; i < READY_TRIES; i++) {
        try {
            if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) {
                return { child, port, stop };
            }
        } catch {
            // not listening yet
        }
        await sleep(READY_STEP_MS);
    }
    child.kill('SIGKILL');
    throw new Error(`the server did not become ready (see ${logFile})`);
}
