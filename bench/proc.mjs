// bench/proc.mjs -- what the benches read from /proc about a process: its stat fields, its CPU
// time and resident set. Shared by bench/stream_rig.mjs and bench/engine.mjs, and by
// tests/api/deliver_faults.test.mjs (no dependencies: the tests import it as it is).
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

// The process's CPU time (user + system, ms) and resident set (KiB).
export function procStat(pid) {
    const cpuMs = cpuMsOf(statFields(pid));
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'latin1'))[1]);
    return { cpuMs, rss };
}
