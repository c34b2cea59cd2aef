// promql.mjs -- what the suite needs to know about the PromQL in deploy/ (alert rules, the Grafana
// dashboard) and about a /metrics scrape, to check the one against the other: the metric names an
// expression reads, the label names it matches or groups by, the literal label values it asks
// for; and a scrape's families with their types and samples. A reader, not a PromQL parser: it
// knows selectors, quoted strings, ranges, grouping clauses and function calls, which is all the
// expressions here use, and a name it cannot place counts as a metric name (so it gets checked).
// Also where promtool is.

import fs from 'node:fs';

// Prometheus's promtool: TOCSIN_PROMTOOL (scripts/test.sh fetches it) or the first on PATH. A
// missing promtool is an error, never a skip.
export function findPromtool() {
    const p = process.env.TOCSIN_PROMTOOL;
    if (p && fs.existsSync(p)) {
        return p;
    }
    const onPath = (process.env.PATH || '').split(':').map((d) => `${d}/promtool`).find((f) => fs.existsSync(f));
    if (!onPath) {
        throw new Error('promtool not found: set TOCSIN_PROMTOOL (scripts/test.sh fetches it) or put it on PATH; refusing to skip');
    }
    return onPath;
}

// Words of PromQL that look like names and are not metrics.
const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left',
    'group_right', 'bool', 'offset', 'inf', 'nan']);
const GROUPING = /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;
const NAME = /[A-Za-z_:][\w:]*/g;
const MATCHER = /\s*([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)\s*,?/y;

// The end of the quoted string that starts at s[i] (the index after its closing quote).
function skipString(s, i) {
    const q = s[i];
    let j = i + 1;
    while (j < s.length && s[j] !== q) {
        j += q !== '`' && s[j] === '\\' ? 2 : 1;
    }
    if (j >= s.length) {
        throw new Error(`unterminated string in ${s}`);
    }
    return j + 1;
}

function unquote(lit) {
    if (lit[0] === '`') {
        return lit.slice(1, -1);
    }
    return lit.slice(1, -1).replace(/\\(.)/g, '$1');
}

// Parses `name{matchers}` blocks out of expr. Returns { rest: expr with each block blanked,
// selectors: [{ name (or null for a bare {...}), matchers: [{ label, op, value }] }] }.
function selectors(expr) {
    const found = [];
    let rest = '';
    let i = 0;
    while (i < expr.length) {
        const c = expr[i];
        if (c === '"' || c === "'" || c === '`') {
            const j = skipString(expr, i);
            rest += ' '.repeat(j - i);
            i = j;
        } else if (c === '{') {
            const name = /([A-Za-z_:][\w:]*)\s*$/.exec(rest);
            const matchers = [];
            let j = i + 1;
            MATCHER.lastIndex = j;
            let m;
            while ((m = MATCHER.exec(expr)) !== null) {
                matchers.push({ label: m[1], op: m[2], value: unquote(m[3]) });
                j = MATCHER.lastIndex;
            }
            while (expr[j] === ' ') {
                j++;
            }
            if (expr[j] !== '}') {
                throw new Error(`cannot read the selector at ${JSON.stringify(expr.slice(i, i + 60))}`);
            }
            found.push({ name: name && !KEYWORDS.has(name[1]) ? name[1] : null, matchers });
            rest += ' '.repeat(j + 1 - i);
            i = j + 1;
        } else {
            rest += c;
            i++;
        }
    }
    return { rest, selectors: found };
}

// The parts of one PromQL expression: { names: Set of metric names, selectors (as above),
// grouping: Set of label names in by/without/on/ignoring/group_* clauses }. Grafana's variables
// ($job, ${x}, $__rate_interval) may stand where a string or a range goes.
export function promqlParts(expr) {
    const { rest, selectors: sel } = selectors(expr);
    const grouping = new Set();
    let s = rest.replace(GROUPING, (_, _kw, labels) => {
        for (const l of labels.split(',').map((x) => x.trim()).filter((x) => x !== '')) {
            grouping.add(l);
        }
        return ' ';
    });
    s = s.replace(/\[[^\]]*\]/g, ' ')          // ranges and subqueries
        .replace(/\$\{?\w+\}?/g, ' ')           // Grafana variables left outside strings
        .replace(/(^|[^\w:])\d[\w.]*/g, '$1 '); // numbers and durations (1e3, 0.99, 5m)
    const names = new Set(sel.map((x) => x.name).filter((x) => x !== null));
    for (const m of s.matchAll(NAME)) {
        const after = s.slice(m.index + m[0].length);
        if (!KEYWORDS.has(m[0].toLowerCase()) && !/^\s*\(/.test(after)) {
            names.add(m[0]);
        }
    }
    return { names, selectors: sel, grouping };
}

// A Prometheus text exposition: { families: Map name -> type, samples: Map sample name ->
// [labels object] }.
export function parseScrape(text) {
    const families = new Map();
    const samples = new Map();
    for (const line of text.split('\n')) {
        const t = /^# TYPE ([A-Za-z_:][\w:]*) (\w+)$/.exec(line);
        if (t) {
            families.set(t[1], t[2]);
            continue;
        }
        if (line === '' || line.startsWith('#')) {
            continue;
        }
        const m = /^([A-Za-z_:][\w:]*)/.exec(line);
        if (!m) {
            throw new Error(`not a sample line: ${JSON.stringify(line)}`);
        }
        const labels = {};
        let i = m[0].length;
        if (line[i] === '{') {
            const re = /\s*([A-Za-z_]\w*)="((?:[^"\\]|\\.)*)"\s*,?/y;
            re.lastIndex = i + 1;
            let l;
            while ((l = re.exec(line)) !== null) {
                labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
                i = re.lastIndex;
            }
            if (line[i] !== '}') {
                throw new Error(`cannot read the labels of ${JSON.stringify(line)}`);
            }
        }
        if (!samples.has(m[1])) {
            samples.set(m[1], []);
        }
        samples.get(m[1]).push(labels);
    }
    return { families, samples };
}

const HISTOGRAM_SUFFIXES = ['_bucket', '_sum', '_count'];

// The family a series name belongs to in scrape: { family, type }, or null. A histogram's
// series are its name with _bucket, _sum or _count; every other family's is its own name.
export function familyOf(scrape, name) {
    const type = scrape.families.get(name);
    if (type !== undefined && type !== 'histogram') {
        return { family: name, type };
    }
    for (const suffix of HISTOGRAM_SUFFIXES) {
        const base = name.endsWith(suffix) ? name.slice(0, -suffix.length) : null;
        if (base !== null && scrape.families.get(base) === 'histogram') {
            return { family: base, type: 'histogram' };
        }
    }
    return null;
}

// Labels Prometheus adds to every series it scrapes.
export const TARGET_LABELS = new Set(['job', 'instance']);

// What expr (from `where`) asks of scrape that scrape does not have: names of no family or with
// no sample, label names no sample of the metric carries, literal label values no sample has
// (an = matcher, or each alternative of an =~ made of plain alternatives), grouping labels none of
// the expression's metrics carries. Returns a list of sentences; empty when all is there.
export function missingFrom(scrape, expr, where) {
    const parts = promqlParts(expr);
    const problems = [];
    const labelsOf = (name) => scrape.samples.get(name) ?? [];
    for (const name of parts.names) {
        const f = familyOf(scrape, name);
        if (f === null) {
            problems.push(`${where}: ${name} is no metric family of /metrics`);
        } else if (labelsOf(name).length === 0) {
            problems.push(`${where}: ${name} (${f.type} ${f.family}) has no sample in /metrics`);
        }
    }
    const known = new Set(TARGET_LABELS);
    for (const name of parts.names) {
        for (const l of labelsOf(name)) {
            Object.keys(l).forEach((k) => known.add(k));
        }
    }
    for (const sel of parts.selectors) {
        if (sel.name === null) {
            problems.push(`${where}: a selector without a metric name`);
            continue;
        }
        const rows = labelsOf(sel.name);
        for (const m of sel.matchers) {
            if (TARGET_LABELS.has(m.label) || rows.length === 0) {
                continue;
            }
            if (!rows.some((r) => m.label in r)) {
                problems.push(`${where}: no sample of ${sel.name} has the label ${m.label}`);
                continue;
            }
            const wanted = m.op === '=' ? [m.value]
                : m.op === '=~' && /^[\w./{}-]+(\|[\w./{}-]+)*$/.test(m.value) ? m.value.split('|') : [];
            for (const v of wanted.filter((x) => !x.includes('$'))) {
                if (!rows.some((r) => r[m.label] === v)) {
                    problems.push(`${where}: no sample of ${sel.name} has ${m.label}="${v}"`);
                }
            }
        }
    }
    for (const l of parts.grouping) {
        if (!known.has(l)) {
            problems.push(`${where}: grouping by ${l}, which none of ${[...parts.names].join(', ')} carries`);
        }
    }
    return problems;
}
