// demo-screenshot.mjs OUT.png -- the picture of the demo page in docs/browsers.md, taken by
// scripts/demo-screenshot.sh (which provides TOCSIN_BIN, TOCSIN_DATABASE_URL, TOCSIN_REDIS_URL).
// Starts tocsin with TOCSIN_DEMO=1 on a free loopback port, creates a participant's meetings
// (two reminders fire at once and fill the inbox), opens /demo#token=... in headless Chromium,
// then creates a meeting whose reminder fires while the page is open and takes the screenshot
// when it is on the page. Stops everything it started.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const OUT = process.argv[2];
const { TOCSIN_BIN: BIN, TOCSIN_DATABASE_URL, TOCSIN_REDIS_URL } = process.env;
if (!OUT || !BIN || !TOCSIN_DATABASE_URL || !TOCSIN_REDIS_URL) {
    throw new Error('usage: TOCSIN_BIN=... TOCSIN_DATABASE_URL=... TOCSIN_REDIS_URL=... node demo-screenshot.mjs OUT.png');
}
const MIN = 60000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const port = await new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = s.address();
        s.close(() => resolve(p));
    });
});
const base = `http://127.0.0.1:${port}`;
const env = { ...process.env, TOCSIN_HTTP_ADDR: `127.0.0.1:${port}`, TOCSIN_DEMO: '1', TOCSIN_LOG_LEVEL: 'warn' };
const server = spawn(BIN, ['serve'], { env, stdio: ['ignore', 'inherit', 'inherit'] });
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-shot-'));
let browser = null;

async function api(method, p, key, body) {
    const res = await fetch(base + p, {
        method,
        headers: { Authorization: `Bearer ${key}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
    return json;
}

// A meeting of Ada's starting in `inMin` minutes (on the minute), or on day `inDays` at
// `atHour` UTC, with the given reminders.
function meeting(title, inMin, extra = {}) {
    const day = new Date();
    day.setUTCHours(extra.atHour ?? 0, 0, 0, 0);
    const start = extra.inDays ? day.getTime() + extra.inDays * 1440 * MIN : Math.ceil((Date.now() + inMin * MIN) / MIN) * MIN;
    return {
        title,
        starts_at: new Date(start).toISOString(),
        ends_at: new Date(start + (extra.length ?? 30) * MIN).toISOString(),
        location: extra.location,
        participants: [{ id: 'ada', name: 'Ada Lovelace' }, ...(extra.others ?? [])],
        reminders: (extra.reminders ?? [10]).map((m) => ({ minutes_before: m })),
    };
}

try {
    for (let i = 0; ; i++) {
        try {
            if ((await fetch(`${base}/healthz`)).ok) break;
        } catch { /* not up yet */ }
        if (i > 200) throw new Error('tocsin did not start');
        await sleep(50);
    }
    const key = execFileSync(BIN, ['keys', 'create', '--tenant', 'demo'], { env, encoding: 'utf8' }).trim();
    const grace = { id: 'grace', name: 'Grace Hopper' };
    const alan = { id: 'alan', name: 'Alan Turing' };
    // Due already: these fire at once and are the inbox when the page loads.
    await api('POST', '/v1/meetings', key, meeting('Weekly sync', 8, { location: 'Room 2', others: [grace, alan], reminders: [10] }));
    await api('POST', '/v1/meetings', key, meeting('1:1 with Grace', 12, { others: [grace], reminders: [15] }));
    await api('POST', '/v1/meetings', key, meeting('Quarterly planning', 0, { inDays: 1, atHour: 10, length: 90, location: 'Main hall', others: [grace, alan], reminders: [10, 1440] }));
    await api('POST', '/v1/meetings', key, meeting('Customer call: Northwind', 0, { inDays: 2, atHour: 15, others: [alan], reminders: [5] }));
    const { token } = await api('POST', '/v1/browser-tokens', key, { sub: 'ada', scope: 'notifications meetings:read', ttl_s: 900 });
    await sleep(1500); // the two due reminders are recorded fired

    browser = await puppeteer.launch({
        executablePath: '/usr/bin/chromium',
        headless: true,
        userDataDir: profile,
        args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
            '--no-default-browser-check', '--disable-background-networking', '--lang=en-GB'],
    });
    const page = await browser.newPage();
    await page.emulateTimezone('Europe/London');
    await page.setViewport({ width: 1100, height: 700, deviceScaleFactor: 1 });
    await page.goto(`${base}/demo#token=${token}&api=${encodeURIComponent(base)}`);
    await page.waitForSelector('#state[data-state="open"]', { timeout: 15000 });
    await page.waitForSelector('li.reminder', { timeout: 15000 });
    // Fires at once, while the page is open: it arrives on the stream.
    await api('POST', '/v1/meetings', key, meeting('Design review', 4, { location: 'Zoom', others: [grace], reminders: [5] }));
    await page.waitForSelector('li.reminder[data-live="true"]', { timeout: 15000 });
    await sleep(400);
    await page.screenshot({ path: OUT, type: 'png', fullPage: true });
    console.log(`${OUT}: ${fs.statSync(OUT).size} bytes`);
} finally {
    if (browser) await browser.close();
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    fs.rmSync(profile, { recursive: true, force: true });
}
