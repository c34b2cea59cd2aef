// bench/proc.mjs -- what the benches read from /proc about a process: its stat fields, its CPU
// time and resident set. Shared by bench/stream_rig.mjs, bench/engine.mjs and bench/bullmq.mjs,
// and by tests/api/deliver_faults.test.mjs (no dependencies: the tests import it as it is).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

// The fields of /proc/PID/stat after the command name (f[0] is the state, f[1] the parent's
// pid, f[11] and f[12] utime and stime in clock ticks). Throws when the process is gone.
export function statFields(pid) {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

// CPU time so far (user + system, ms) of a stat's fields.
export const cpuMsOf = (f) => ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;

// CPU seconds (user + system) of a process so far; 0 once it is gone.
export function cpuSecondsOf(pid) {
    try {
        return cpuMsOf(statFields(pid)) / 1000;
    } catch {
        return 0;
    }
}

// The process's CPU time (user + system, ms) and resident set (KiB).
export function procStat(pid) {
    const cpuMs = cpuMsOf(statFields(pid));
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'latin1'))[1]);
    return { cpuMs, rss };
}

// CPU time so far (ms) of a process and its children, living and reaped: what a server that
// forks a process per connection, as PostgreSQL does, has used in all.
export function treeCpuMs(pid) {
    const f = statFields(pid);
    let ms = cpuMsOf(f) + ((Number(f[13]) + Number(f[14])) * 1000) / CLK_TCK;
    for (const d of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(d)) {
            continue;
        }
        try {
            const c = statFields(d);
            if (c[1] === String(pid)) {
                ms += cpuMsOf(c);
            }
        } catch {
            // gone meanwhile: its time is in the parent's reaped total, or soon will be
        }
    }
    return ms;
}
