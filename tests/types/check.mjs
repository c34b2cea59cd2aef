// check.mjs -- the TypeScript checks of the browser side, run by scripts/test.sh (and by
// `npm run types:check` in tests/): (1) web/tocsin-api.d.ts is exactly what openapi-typescript
// makes of api/openapi.yaml (regenerate with `npm run types:generate` after changing the
// contract); (2) tsc --noEmit over tests/types/example.ts, which uses those types with the client,
// and over web/client.js itself (// @ts-check with JSDoc types). Exits non-zero on drift or on a
// type error. Offline: both tools are local devDependencies.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const tests = fileURLToPath(new URL('..', import.meta.url));
const committed = path.join(tests, '..', 'web', 'tocsin-api.d.ts');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-types-'));
const fresh = path.join(dir, 'tocsin-api.d.ts');
let failed = false;

const run = (script, args) => execFileSync(process.execPath, [path.join(tests, 'node_modules', script), ...args],
    { cwd: tests, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });

try {
    run('openapi-typescript/bin/cli.js', ['../api/openapi.yaml', '-o', fresh]);
    if (!fs.readFileSync(fresh).equals(fs.readFileSync(committed))) {
        const a = fs.readFileSync(committed, 'utf8').split('\n'), b = fs.readFileSync(fresh, 'utf8').split('\n');
        const i = a.findIndex((line, k) => line !== b[k]);
        console.error(`web/tocsin-api.d.ts differs from what api/openapi.yaml generates (first at line ${i + 1}):\n` +
            `  committed: ${JSON.stringify(a[i])}\n  generated: ${JSON.stringify(b[i])}\n` +
            'run `npm run types:generate` in tests/ and commit the result');
        failed = true;
    } else {
        console.log('web/tocsin-api.d.ts matches api/openapi.yaml');
    }
} finally {
    fs.rmSync(dir, { recursive: true, force: true });
}

try {
    run('typescript/bin/tsc', ['-p', 'types/tsconfig.json']);
    console.log('tsc --noEmit: tests/types/example.ts and web/client.js type-check');
} catch (e) {
    console.error(`tsc --noEmit failed:\n${e.stdout}${e.stderr}`);
    failed = true;
}
process.exit(failed ? 1 : 0);
