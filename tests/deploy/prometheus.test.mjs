// prometheus.test.mjs -- deploy/prometheus and deploy/grafana checked offline with Prometheus's
// own promtool: the rules pass `promtool check rules` and their unit tests
// (`promtool test rules alerts.test.yaml`); every rule says how long, how bad and what to check
// (for, severity, summary, description, a runbook that is a heading of the document it names); every alert
// has a unit test that fires it and one that expects silence; every dashboard expression is
// valid PromQL (checked as a recording rule) and reads its data source from the dashboard's
// variable. That the names they read exist is tests/api/dashboards.test.mjs's part (it needs a
// running tocsin). promtool missing is a failure, never a skip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { findPromtool } from '../api/promql.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const RULES = path.join(ROOT, 'deploy/prometheus/alerts.yaml');
const RULE_TESTS = path.join(ROOT, 'deploy/prometheus/alerts.test.yaml');
const DASHBOARD = path.join(ROOT, 'deploy/grafana/tocsin.json');
const SEVERITIES = new Set(['critical', 'warning']);
const PROMTOOL_TIMEOUT_MS = 60000;
// What Grafana puts for its variables, for promtool to parse the expressions.
const GRAFANA_VARIABLES = { __rate_interval: '5m', job: 'tocsin', instance: '.*' };

const tool = findPromtool();
const rules = parse(fs.readFileSync(RULES, 'utf8')).groups.flatMap((g) => g.rules);
const ruleTests = parse(fs.readFileSync(RULE_TESTS, 'utf8'));
const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8'));

function promtool(args) {
    return new Promise((resolve) => {
        execFile(tool, args, { timeout: PROMTOOL_TIMEOUT_MS }, (err, stdout, stderr) => {
            resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, out: `${stdout}${stderr}` });
        });
    });
}

// GitHub's anchor of a Markdown heading: lower case, punctuation but - and _ dropped, spaces as -.
function anchor(heading) {
    return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
}

test('promtool check rules passes on deploy/prometheus/alerts.yaml', async () => {
    const r = await promtool(['check', 'rules', RULES]);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, new RegExp(`SUCCESS: ${rules.length} rules found`), r.out);
});

test('promtool test rules passes on deploy/prometheus/alerts.test.yaml', async () => {
    const r = await promtool(['test', 'rules', RULE_TESTS]);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /SUCCESS/, r.out);
});

test('every rule is an alert with for, a severity, a summary, a description and a runbook that is a heading of the document it names', () => {
    assert.ok(rules.length > 0, 'no rules');
    const docs = new Map();
    const headings = (file) => {
        if (!docs.has(file)) {
            const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
            docs.set(file, new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]))));
        }
        return docs.get(file);
    };
    const names = new Set();
    for (const r of rules) {
        assert.ok(typeof r.alert === 'string' && /^Tocsin[A-Za-z]+$/.test(r.alert), `not an alert named Tocsin...: ${JSON.stringify(r)}`);
        assert.ok(!names.has(r.alert), `${r.alert} twice`);
        names.add(r.alert);
        assert.match(String(r.for), /^\d+[smh]$/, `${r.alert}: for`);
        assert.ok(SEVERITIES.has(r.labels?.severity), `${r.alert}: severity ${r.labels?.severity}`);
        for (const k of ['summary', 'description', 'runbook']) {
            assert.ok(typeof r.annotations?.[k] === 'string' && r.annotations[k].length > 0, `${r.alert}: annotation ${k}`);
        }
        assert.match(r.annotations.description, /check first/i, `${r.alert}: the description says what to check first`);
        const [file, section] = r.annotations.runbook.split('#');
        assert.ok(section && fs.existsSync(path.join(ROOT, file)), `${r.alert}: runbook ${r.annotations.runbook}`);
        assert.ok(headings(file).has(section), `${r.alert}: no heading #${section} in ${file}`);
    }
});

test('every alert has a unit test that fires it and one that expects none at some time', () => {
    const fired = new Set();
    const silent = new Set();
    for (const t of ruleTests.tests) {
        for (const a of t.alert_rule_test ?? []) {
            (a.exp_alerts && a.exp_alerts.length > 0 ? fired : silent).add(a.alertname);
            for (const e of a.exp_alerts ?? []) {
                assert.ok(e.exp_labels?.severity && e.exp_annotations?.summary,
                    `${a.alertname} at ${a.eval_time}: expect the labels and annotations exactly`);
            }
        }
    }
    for (const r of rules) {
        assert.ok(fired.has(r.alert), `${r.alert}: no test where it fires`);
        assert.ok(silent.has(r.alert), `${r.alert}: no test where it must not fire`);
    }
    const known = new Set(rules.map((r) => r.alert));
    for (const a of [...fired, ...silent]) {
        assert.ok(known.has(a), `alerts.test.yaml tests ${a}, which alerts.yaml does not have`);
    }
});

// Every target's expression of every panel, and the variables' queries.
function dashboardQueries() {
    const out = [];
    const walk = (panels) => {
        for (const p of panels ?? []) {
            for (const t of p.targets ?? []) {
                out.push({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr, panel: p, target: t });
            }
            walk(p.panels);
        }
    };
    walk(dashboard.panels);
    return out;
}

test('the dashboard reads its data source from a variable and every panel expression is valid PromQL', async () => {
    const vars = dashboard.templating?.list ?? [];
    const ds = vars.find((v) => v.type === 'datasource');
    assert.ok(ds && ds.query === 'prometheus', 'a data source variable of type prometheus');
    const dsRef = `\${${ds.name}}`;
    const queries = dashboardQueries();
    assert.ok(queries.length >= 20, `only ${queries.length} expressions`);
    const ids = new Set();
    const walk = (panels) => {
        for (const p of panels ?? []) {
            assert.ok(!ids.has(p.id), `panel id ${p.id} twice`);
            ids.add(p.id);
            assert.ok(p.gridPos && p.gridPos.x + p.gridPos.w <= 24, `panel "${p.title}": gridPos`);
            if (p.type !== 'row') {
                assert.equal(p.datasource?.uid, dsRef, `panel "${p.title}": data source`);
                assert.ok(p.description, `panel "${p.title}": a description`);
            }
            walk(p.panels);
        }
    };
    walk(dashboard.panels);
    for (const q of queries) {
        assert.equal(q.target.datasource?.uid, dsRef, `${q.where}: data source`);
    }
    for (const v of vars.filter((x) => x.type === 'query')) {
        assert.equal(v.datasource?.uid, dsRef, `variable ${v.name}: data source`);
    }
    // promtool parses PromQL in rule files only: each expression becomes a recording rule.
    const fill = (e) => e.replace(/\$\{?(\w+)\}?/g, (m, name) => {
        assert.ok(name in GRAFANA_VARIABLES, `unknown variable ${m} in ${e}`);
        return GRAFANA_VARIABLES[name];
    });
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tocsin-dashboard-')), 'panels.yaml');
    try {
        fs.writeFileSync(file, stringify({
            groups: [{
                name: 'dashboard',
                rules: queries.map((q, i) => ({ record: `dashboard:expr_${i}`, expr: fill(q.expr) })),
            }],
        }));
        const r = await promtool(['check', 'rules', file]);
        assert.equal(r.code, 0, `${r.out}\n${fs.readFileSync(file, 'utf8')}`);
    } finally {
        fs.rmSync(path.dirname(file), { recursive: true, force: true });
    }
});
