// kubernetes.test.mjs -- deploy/kubernetes checked offline: rendered with `kubectl kustomize`
// (no cluster), every object validated against the Kubernetes API schemas of kubernetes-models,
// then what those schemas cannot see: unknown fields in containers and probes (the schemas allow
// them, so a typo would pass), probe paths that exist in the API contract, the container port of
// TOCSIN_HTTP_ADDR, selectors that match, a termination grace that covers the shutdown, settings
// that tocsin knows, and the migration Job wired as docs/deployment.md says. kubectl missing is a
// failure, never a skip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse } from 'yaml';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DIR = path.join(ROOT, 'deploy/kubernetes');
const MODELS = {
    'v1/ConfigMap': ConfigMap,
    'v1/Secret': Secret,
    'v1/Service': Service,
    'apps/v1/Deployment': Deployment,
    'batch/v1/Job': Job,
    'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};
// Fields of the Kubernetes API (core/v1 Container and Probe) that a manifest here may use.
const CONTAINER_FIELDS = new Set(['name', 'image', 'imagePullPolicy', 'command', 'args', 'workingDir',
    'ports', 'env', 'envFrom', 'resources', 'volumeMounts', 'livenessProbe', 'readinessProbe',
    'startupProbe', 'lifecycle', 'securityContext', 'terminationMessagePath',
    'terminationMessagePolicy', 'stdin', 'tty', 'restartPolicy', 'resizePolicy', 'volumeDevices']);
const PROBE_FIELDS = new Set(['httpGet', 'tcpSocket', 'exec', 'grpc', 'initialDelaySeconds',
    'periodSeconds', 'timeoutSeconds', 'successThreshold', 'failureThreshold',
    'terminationGracePeriodSeconds']);
const MARGIN_S = 5; // grace left over after the slowest orderly shutdown

function render() {
    let out;
    try {
        out = execFileSync('kubectl', ['kustomize', DIR], { encoding: 'utf8' });
    } catch (e) {
        throw new Error(`kubectl kustomize ${DIR} failed (kubectl is needed for this test): ${e.message}`);
    }
    const docs = parseAllDocuments(out).map((d) => {
        assert.deepEqual(d.errors, [], 'kustomize output is valid YAML');
        return d.toJS();
    });
    assert.ok(docs.length > 0, 'kustomize rendered nothing');
    return docs;
}

const docs = render();
const one = (kind, name) => {
    const found = docs.filter((d) => d.kind === kind && (name === undefined || d.metadata.name === name));
    assert.equal(found.length, 1, `exactly one ${kind}${name ? ` ${name}` : ''}`);
    return found[0];
};
const deployment = one('Deployment');
const job = one('Job');
const config = one('ConfigMap');
const secret = one('Secret');
const service = one('Service');
const pdb = one('PodDisruptionBudget');
const container = deployment.spec.template.spec.containers[0];
const settings = { ...config.data, ...secret.stringData };

// The configuration reference's tables: the settings tocsin reads (scripts/check_maps.py checks
// them against the code).
const documented = new Set([...fs.readFileSync(path.join(ROOT, 'docs/configuration.md'), 'utf8')
    .matchAll(/^\| `(TOCSIN_[A-Z0-9_]+)` \|/gm)].map((m) => m[1]));

test('every rendered object is valid against the Kubernetes API schema of its kind', () => {
    assert.deepEqual(docs.map((d) => `${d.apiVersion}/${d.kind}`).sort(), Object.keys(MODELS).sort());
    for (const d of docs) {
        const Model = MODELS[`${d.apiVersion}/${d.kind}`];
        assert.ok(Model, `no model for ${d.apiVersion}/${d.kind}`);
        assert.doesNotThrow(() => new Model(d).validate(), `${d.kind} ${d.metadata?.name}`);
    }
});

test('the schema check is not vacuous: a broken Deployment is refused', () => {
    const bad = structuredClone(deployment);
    bad.spec.replicas = 'three';
    assert.throws(() => new Deployment(bad).validate(), /replicas/);
    const noImage = structuredClone(deployment);
    delete noImage.spec.template.spec.containers[0].name;
    assert.throws(() => new Deployment(noImage).validate(), /name/);
});

test('containers and probes use only fields the API knows (the schemas would let a typo pass)', () => {
    for (const obj of [deployment, job]) {
        for (const c of obj.spec.template.spec.containers) {
            for (const k of Object.keys(c)) {
                assert.ok(CONTAINER_FIELDS.has(k), `${obj.kind} container field ${k}`);
            }
            for (const p of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
                for (const k of Object.keys(c[p] ?? {})) {
                    assert.ok(PROBE_FIELDS.has(k), `${obj.kind} ${p}.${k}`);
                }
            }
        }
    }
});

test('probes: paths from the API contract, on the port tocsin listens on', () => {
    const contract = parse(fs.readFileSync(path.join(ROOT, 'api/openapi.yaml'), 'utf8'));
    const port = Number(/:(\d+)$/.exec(settings.TOCSIN_HTTP_ADDR)?.[1]);
    const named = container.ports.find((p) => p.name === 'http');
    assert.equal(named?.containerPort, port, 'container port http = the port of TOCSIN_HTTP_ADDR');
    assert.equal(container.readinessProbe.httpGet.path, '/readyz');
    assert.equal(container.livenessProbe.httpGet.path, '/healthz');
    for (const p of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
        const g = container[p].httpGet;
        assert.ok(contract.paths[g.path]?.get, `${p} ${g.path} is in api/openapi.yaml`);
        assert.equal(g.port, 'http', `${p} uses the named port`);
    }
    // The startup probe must outlast the wait for PostgreSQL and the migrations.
    const s = container.startupProbe;
    assert.ok(s.periodSeconds * s.failureThreshold > Number(settings.TOCSIN_DB_WAIT_S),
        `startup probe window ${s.periodSeconds * s.failureThreshold} s vs TOCSIN_DB_WAIT_S`);
    assert.ok(container.livenessProbe.failureThreshold > container.readinessProbe.failureThreshold,
        'liveness gives up later than readiness');
});

test('termination: preStop, then a grace longer than the shutdown it allows for', () => {
    const pre = container.lifecycle.preStop.exec.command;
    assert.equal(pre[0], 'sleep');
    const sleepS = Number(pre[1]);
    const need = sleepS + Number(settings.TOCSIN_SHUTDOWN_GRACE_MS) / 1000 +
        Number(settings.TOCSIN_DELIVERY_TIMEOUT_MS) / 1000 + MARGIN_S;
    const grace = deployment.spec.template.spec.terminationGracePeriodSeconds;
    assert.ok(grace >= need, `terminationGracePeriodSeconds ${grace} < ${need}`);
    assert.ok(grace * 1000 > Number(settings.TOCSIN_SHUTDOWN_GRACE_MS), 'longer than TOCSIN_SHUTDOWN_GRACE_MS');
});

test('the Service and the PodDisruptionBudget select the Deployment\'s pods, and only those', () => {
    const labels = deployment.spec.template.metadata.labels;
    const matches = (sel) => Object.entries(sel).every(([k, v]) => labels[k] === v);
    assert.ok(matches(deployment.spec.selector.matchLabels));
    assert.ok(matches(service.spec.selector), 'Service selector');
    assert.ok(matches(pdb.spec.selector.matchLabels), 'PDB selector');
    const jobLabels = job.spec.template.metadata.labels;
    assert.ok(!Object.entries(service.spec.selector).every(([k, v]) => jobLabels[k] === v),
        'the migration Job\'s pod is not a Service endpoint');
    assert.equal(service.spec.ports[0].targetPort, 'http');
    assert.ok(pdb.spec.maxUnavailable === 1 && deployment.spec.replicas > 1);
});

test('settings: every TOCSIN_* key is one tocsin reads; the connection URLs are in the Secret', () => {
    assert.ok(documented.size > 20, 'docs/configuration.md tables found');
    for (const k of Object.keys(settings)) {
        assert.ok(documented.has(k), `${k} is not a setting of docs/configuration.md`);
    }
    assert.ok(secret.stringData.TOCSIN_DATABASE_URL && secret.stringData.TOCSIN_REDIS_URL);
    assert.equal(config.data.TOCSIN_DATABASE_URL, undefined, 'no password in the ConfigMap');
    for (const obj of [deployment, job]) {
        const from = obj.spec.template.spec.containers[0].envFrom;
        assert.deepEqual(from.map((f) => f.configMapRef?.name ?? f.secretRef?.name),
            [config.metadata.name, secret.metadata.name], `${obj.kind} reads both`);
    }
});

test('migrations: the Job runs `tocsin migrate` with the same image; serve does not migrate', () => {
    assert.equal(settings.TOCSIN_MIGRATE_ON_START, '0');
    const jc = job.spec.template.spec.containers[0];
    assert.deepEqual(jc.args, ['migrate']);
    assert.deepEqual(container.args, ['serve']);
    assert.equal(jc.image, container.image);
    assert.ok(job.spec.backoffLimit >= 1 && job.spec.ttlSecondsAfterFinished > 0);
    for (const spec of [deployment.spec.template.spec, job.spec.template.spec]) {
        assert.equal(spec.securityContext.runAsNonRoot, true);
        assert.equal(spec.securityContext.runAsUser, 10001, 'the numeric user of the Dockerfile');
    }
    assert.match(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'), /^USER 10001:10001$/m);
});
