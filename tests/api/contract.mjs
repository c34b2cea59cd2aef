// contract.mjs -- checks HTTP responses against api/openapi.yaml (the API contract).
// OpenAPI 3.1 schemas are JSON Schema 2020-12, so the document is handed to Ajv2020 as a whole and
// each response schema is compiled by JSON pointer. A response must use a documented status (or
// fall under the operation's 4XX/default entry), its documented content type and schema (an event
// stream frame by frame, as StreamFrame), carry the headers documented as required, and every
// documented header it carries must match its schema.
import fs from 'node:fs';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import YAML from 'yaml';

const SPEC_PATH = fileURLToPath(new URL('../../api/openapi.yaml', import.meta.url));
const DOC_ID = 'urn:tocsin:openapi';

export const spec = YAML.parse(fs.readFileSync(SPEC_PATH, 'utf8'));

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ ...spec, $id: DOC_ID });

const compiled = new Map();
function validatorAt(pointer) {
    let v = compiled.get(pointer);
    if (!v) {
        v = ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
        compiled.set(pointer, v);
    }
    return v;
}

const esc = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');

function deref(obj, pointer) {
    let p = pointer;
    let o = obj;
    while (o && o.$ref) {
        p = o.$ref.slice(1);
        o = p.split('/').slice(1).reduce((a, k) => a[k.replace(/~1/g, '/').replace(/~0/g, '~')], spec);
    }
    return { obj: o, pointer: p };
}

// Validates value against components/schemas/<name>; returns the list of errors (empty = valid).
export function schemaErrors(name, value) {
    const v = validatorAt(`/components/schemas/${esc(name)}`);
    return v(value) ? [] : v.errors;
}

const templates = Object.keys(spec.paths).map((t) => ({
    template: t,
    re: new RegExp('^' + t.replace(/\{[^}]+\}/g, '[^/]+') + '$'),
}));

// Finds the OpenAPI path template for an actual request path (query removed), or null.
export function templateFor(urlPath) {
    const p = urlPath.split('?')[0];
    return templates.find((t) => t.re.test(p))?.template ?? null;
}

const fail = (ctx, msg) => assert.fail(`${ctx}: ${msg}`);

function pickResponse(op, status) {
    const r = op.responses;
    if (r[String(status)]) {
        return String(status);
    }
    const range = `${String(status)[0]}XX`;
    if (r[range]) {
        return range;
    }
    return r.default ? 'default' : null;
}

function checkHeaders(ctx, res, respObj, respPointer) {
    for (const [name, h] of Object.entries(respObj.headers || {})) {
        const value = res.header(name);
        const { obj: header, pointer } = deref(h, `${respPointer}/headers/${esc(name)}`);
        // A header marked required must be there; any documented header that is there must match.
        if (value === null || value === undefined) {
            if (header.required) {
                fail(ctx, `missing header ${name}`);
            }
            continue;
        }
        const v = validatorAt(`${pointer}/schema`);
        if (!v(value)) {
            fail(ctx, `header ${name}: ${JSON.stringify(value)} ${ajv.errorsText(v.errors)}`);
        }
    }
}

// Splits Server-Sent Events text into frames per the WHATWG parsing rules (lines end with CRLF, LF
// or CR; a blank line ends a frame; ":" starts a comment; one space after the colon is dropped;
// data lines join with LF). Each frame is {id?, event?, data?, retry?} with the raw field values;
// a frame still open at the end of the text is left out, as an EventSource would.
export function parseEventStream(text) {
    const frames = [];
    let cur = {};
    let any = false;
    for (const line of text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/).slice(0, -1)) {
        if (line === '') {
            if (any) {
                frames.push(cur);
            }
            cur = {};
            any = false;
            continue;
        }
        if (line.startsWith(':')) {
            continue;
        }
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        let value = i < 0 ? '' : line.slice(i + 1);
        if (value.startsWith(' ')) {
            value = value.slice(1);
        }
        if (field === 'data') {
            cur.data = cur.data === undefined ? value : `${cur.data}\n${value}`;
        } else if (field === 'id' || field === 'event' || field === 'retry') {
            cur[field] = value;
        }
        any = true;
    }
    return frames;
}

// Asserts that every frame of an event stream (text as received) is a StreamFrame of the contract,
// and that the text starts with the retry line. Returns the frames, data parsed.
export function checkEventStream(ctx, text) {
    const frames = parseEventStream(text);
    if (!/^retry: [0-9]+\n\n/.test(text)) {
        fail(ctx, `the stream does not start with a retry line: ${JSON.stringify(text.slice(0, 80))}`);
    }
    const out = [];
    for (const f of frames.slice(1)) {
        const frame = { ...f };
        if (frame.retry !== undefined) {
            fail(ctx, `a retry field after the first frame: ${JSON.stringify(f)}`);
        }
        if (frame.data !== undefined) {
            try {
                frame.data = JSON.parse(frame.data);
            } catch (e) {
                fail(ctx, `frame data is not JSON (${e.message}): ${frame.data.slice(0, 200)}`);
            }
        }
        const errs = schemaErrors('StreamFrame', frame);
        if (errs.length > 0) {
            fail(ctx, `stream frame does not match StreamFrame: ${ajv.errorsText(errs)}\n${JSON.stringify(f).slice(0, 500)}`);
        }
        out.push(frame);
    }
    return out;
}

// Asserts that res (wrapped response) is what api/openapi.yaml promises for method + urlPath.
export function checkResponse(method, urlPath, res) {
    const ctx = `${method} ${urlPath.slice(0, 120)} -> ${res.status}`;
    if (res.status >= 500 && res.status !== 503) {
        fail(ctx, `server error: ${res.text.slice(0, 300)}`);
    }
    const template = templateFor(urlPath);
    const pathItem = template ? spec.paths[template] : null;
    const op = pathItem ? pathItem[method.toLowerCase()] : null;
    if (!op) {
        // Unknown path or method: a problem (404 / 405 with Allow, 414, ...).
        checkProblem(ctx, res);
        if (template && res.status === 405 && !res.header('allow')) {
            fail(ctx, '405 without an Allow header');
        }
        return;
    }
    const key = pickResponse(op, res.status);
    if (!key) {
        fail(ctx, `status not documented for ${method} ${template}: ${res.text.slice(0, 300)}`);
    }
    const opPointer = `/paths/${esc(template)}/${method.toLowerCase()}/responses/${esc(key)}`;
    const { obj: respObj, pointer: respPointer } = deref(op.responses[key], opPointer);
    checkHeaders(ctx, res, respObj, respPointer);
    if (!respObj.content) {
        if (res.text.length !== 0) {
            fail(ctx, `expected no body, got ${JSON.stringify(res.text.slice(0, 200))}`);
        }
        return;
    }
    const ct = (res.contentType || '').split(';')[0].trim().toLowerCase();
    if (!respObj.content[ct]) {
        fail(ctx, `content type ${JSON.stringify(res.contentType)} not in ${Object.keys(respObj.content)}; body ${res.text.slice(0, 200)}`);
    }
    if (ct === 'text/event-stream') {
        checkEventStream(ctx, res.text);
        return;
    }
    if (ct === 'text/javascript' || ct === 'text/html') {
        return; // the browser files: any text
    }
    const v = validatorAt(`${respPointer}/content/${esc(ct)}/schema`);
    if (!v(res.json)) {
        fail(ctx, `body does not match the contract: ${ajv.errorsText(v.errors)}\n${res.text.slice(0, 500)}`);
    }
    if (ct === 'application/problem+json' && res.json.status !== res.status) {
        fail(ctx, `problem status ${res.json.status} != HTTP status`);
    }
}

// Asserts a problem+json error body that matches components/schemas/Problem.
export function checkProblem(ctx, res) {
    if (res.status < 400) {
        fail(ctx, `expected an error status, body ${res.text.slice(0, 200)}`);
    }
    const ct = (res.contentType || '').split(';')[0].trim().toLowerCase();
    if (ct !== 'application/problem+json') {
        fail(ctx, `content type ${JSON.stringify(res.contentType)}, want application/problem+json; body ${res.text.slice(0, 200)}`);
    }
    const errs = schemaErrors('Problem', res.json);
    if (errs.length > 0) {
        fail(ctx, `problem body does not match the contract: ${ajv.errorsText(errs)}\n${res.text.slice(0, 500)}`);
    }
    if (res.json.status !== res.status) {
        fail(ctx, `problem status ${res.json.status} != HTTP status`);
    }
}
