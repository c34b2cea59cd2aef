// launch.mjs -- Debian's Chromium for the browser tests, headless and quiet (no sync, no updates,
// no first-run pages), with a throw-away profile. A missing Chromium is a failure, never a skip.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

export const CHROMIUM = process.env.TOCSIN_TEST_CHROMIUM || '/usr/bin/chromium';
const LAUNCH_TIMEOUT_MS = 60000;

// Checked when a test file imports this, before it starts any server.
if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} does not exist: the browser tests need Debian's chromium (scripts/lib.sh installs it); refusing to skip`);
}

// Resolves to {browser, close()}: close() ends the browser and removes its profile.
export async function launchChromium(extraArgs = []) {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-chromium-'));
    const browser = await puppeteer.launch({
        executablePath: CHROMIUM,
        headless: true,
        userDataDir: profile,
        timeout: LAUNCH_TIMEOUT_MS,
        protocolTimeout: LAUNCH_TIMEOUT_MS,
        args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync',
            '--no-first-run', '--disable-dev-shm-usage', '--disable-gpu', '--no-default-browser-check', ...extraArgs],
    });
    return {
        browser,
        close: async () => {
            await browser.close();
            fs.rmSync(profile, { recursive: true, force: true });
        },
    };
}
