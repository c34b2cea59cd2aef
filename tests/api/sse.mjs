// sse.mjs -- what the stream tests share: a small Server-Sent Events client over node:http (Node 18
// has no EventSource), browser tokens (minted by tocsin or signed here with `jose`), meetings whose
// reminders fire at once, and the database's view of what fired. Every wait has a bound and fails
// with a description of what it saw.
import http from 'node:http';
import assert from 'node:assert/strict';
import { SignJWT } from 'jose';
import { MIN } from './harness.mjs';
import { spec, templateFor } from './contract.mjs';

export const AUD = 'tocsin';
const CONNECT_TIMEOUT_MS = 15000; // until the response head arrives
const FRAMES_SHOWN = 12;          // in a failure message, the last frames seen

// ---------------------------------------------------------------- the client

const opened = new Set(); // streams not closed yet, for closeAll

// Closes every stream this process opened and has not closed (after each test, so that one
// failing test leaves no stream behind for the next).
export function closeAll() {
    for (const s of opened) {
        s.close();
    }
}

// One open GET /v1/stream (or a refusal). Frames are the event-stream's blocks as they arrived:
// {id, event, data, at, lastEventId}; id/event/data are null when the block had no such field, so
// that id-only blocks show. lastEventId follows the WHATWG rules (a complete block's id field sets
// it, also in a block with no data). Comments and the retry field are counted apart.
export class Stream {
    constructor(req, res) {
        this.req = req;
        this.res = res;
        this.status = res.statusCode;
        this.headers = res.headers;
        this.frames = [];
        this.received = [];
        this.comments = [];
        this.retry = null;
        this.lastEventId = '';
        this.body = '';
        this.end = null; // {how: 'end' | 'aborted' | 'error', at}
        this.waiters = new Set();
        this.pending = '';
        this.block = null;
        opened.add(this);
        this.ended = new Promise((resolve) => {
            const finish = (how) => {
                opened.delete(this);
                if (!this.end) {
                    this.end = { how, at: Date.now() };
                    this.poke();
                    resolve(this.end);
                }
            };
            res.on('end', () => finish('end'));
            res.on('aborted', () => finish('aborted'));
            res.on('error', () => finish('error'));
            res.on('close', () => finish(res.complete ? 'end' : 'aborted'));
            req.on('error', () => finish('error'));
        });
        res.setEncoding('utf8');
        res.on('data', (chunk) => this.take(chunk));
    }

    // The response body as JSON (refusals).
    get json() { return JSON.parse(this.body); }

    take(chunk) {
        if (this.status !== 200) {
            this.body += chunk;
            return;
        }
        this.pending += chunk;
        for (;;) {
            const m = /\r\n|\r|\n/.exec(this.pending);
            if (!m) {
                break;
            }
            const line = this.pending.slice(0, m.index);
            this.pending = this.pending.slice(m.index + m[0].length);
            this.line(line);
        }
        this.poke();
    }

    line(line) {
        if (line === '') {
            if (this.block) {
                // As EventSource: an id counts once its block is complete (a cut leaves a partial
                // frame whose id must not become the cursor).
                if (this.block.id !== null) {
                    this.lastEventId = this.block.id;
                }
                const b = { ...this.block, at: Date.now(), lastEventId: this.lastEventId };
                this.frames.push(b);
                this.block = null;
                if (b.event === 'reminder') { // parsed once: a reader that parses slowly is a slow reader
                    const body = JSON.parse(b.data);
                    this.received.push({ seq: Number(b.id), id: body.id, body, at: b.at });
                }
            }
            return;
        }
        if (line.startsWith(':')) {
            this.comments.push({ text: line.slice(1).trim(), at: Date.now() });
            return;
        }
        const i = line.indexOf(':');
        const name = i < 0 ? line : line.slice(0, i);
        let value = i < 0 ? '' : line.slice(i + 1);
        if (value.startsWith(' ')) {
            value = value.slice(1);
        }
        if (name === 'retry') {
            this.retry = Number(value);
            return;
        }
        this.block ??= { id: null, event: null, data: null };
        if (name === 'id') {
            this.block.id = value;
        } else if (name === 'event') {
            this.block.event = value;
        } else if (name === 'data') {
            this.block.data = this.block.data === null ? value : `${this.block.data}\n${value}`;
        } else {
            throw new Error(`unknown event-stream field ${JSON.stringify(name)}`);
        }
    }

    poke() {
        for (const w of [...this.waiters]) {
            w();
        }
    }

    // Frames of one event type, data parsed as JSON.
    events(type) {
        return this.frames.filter((f) => f.event === type).map((f) => ({ ...f, json: JSON.parse(f.data) }));
    }

    // The reminders received: {seq, id (the body's id), body, at}.
    get reminders() {
        return this.received;
    }

    describe() {
        const last = this.frames.slice(-FRAMES_SHOWN).map((f) => `${f.id ?? '-'} ${f.event ?? '-'} ${(f.data ?? '').slice(0, 80)}`);
        return `status ${this.status}, ${this.frames.length} frames, ${this.comments.length} comments, ` +
            `end ${JSON.stringify(this.end)}; last frames:\n  ${last.join('\n  ')}`;
    }

    // Resolves when cond(this) is truthy (checked on every chunk and at the end); fails after
    // timeoutMs, or when the stream ended without it.
    until(cond, timeoutMs, what) {
        return new Promise((resolve, reject) => {
            let timer;
            const check = () => {
                let v;
                try {
                    v = cond(this);
                } catch (e) {
                    done();
                    reject(e);
                    return;
                }
                if (v) {
                    done();
                    resolve(v);
                } else if (this.end) {
                    done();
                    reject(new Error(`stream ended before ${what}: ${this.describe()}`));
                }
            };
            const done = () => {
                clearTimeout(timer);
                this.waiters.delete(check);
            };
            timer = setTimeout(() => {
                done();
                reject(new Error(`no ${what} within ${timeoutMs} ms: ${this.describe()}`));
            }, timeoutMs);
            this.waiters.add(check);
            check();
        });
    }

    // The first frame of type (after index from) within timeoutMs.
    next(type, timeoutMs, from = 0) {
        return this.until((s) => s.frames.slice(from).find((f) => f.event === type), timeoutMs, `event ${type}`);
    }

    // Waits until n reminders arrived.
    remindersAtLeast(n, timeoutMs) {
        return this.until((s) => s.received.length >= n && s.received, timeoutMs, `${n} reminders`);
    }

    // Stops reading: the kernel's buffers fill and then the server's.
    pause() {
        this.res.pause();
        this.res.socket?.pause();
    }

    // Cuts the connection from this side.
    close() {
        opened.delete(this);
        this.req.destroy();
        this.res.destroy();
    }
}

// Opens GET path (default /v1/stream) on base. opts: token (Authorization: Bearer), urlToken
// (?access_token=), lastEventId (header), cursor (?last_event_id=), query (more parameters),
// headers, localAddress (the source address: all of 127/8 reaches loopback). Resolves with a Stream once the response head arrived, whatever its status.
export function openStream(base, opts = {}) {
    const u = new URL(opts.path ?? '/v1/stream', base);
    if (opts.urlToken !== undefined) {
        u.searchParams.set('access_token', opts.urlToken);
    }
    if (opts.cursor !== undefined) {
        u.searchParams.set('last_event_id', String(opts.cursor));
    }
    for (const [k, v] of Object.entries(opts.query ?? {})) {
        u.searchParams.set(k, v);
    }
    const headers = { Accept: 'text/event-stream', ...(opts.headers ?? {}) };
    if (opts.token !== undefined) {
        headers.Authorization = `Bearer ${opts.token}`;
    }
    if (opts.lastEventId !== undefined) {
        headers['Last-Event-ID'] = String(opts.lastEventId);
    }
    return new Promise((resolve, reject) => {
        const req = http.request(u, { method: 'GET', headers, agent: false, localAddress: opts.localAddress });
        const timer = setTimeout(() => {
            req.destroy();
            reject(new Error(`GET ${u.pathname}: no response head within ${CONNECT_TIMEOUT_MS} ms`));
        }, CONNECT_TIMEOUT_MS);
        req.on('response', (res) => {
            clearTimeout(timer);
            resolve(new Stream(req, res));
        });
        req.on('error', (e) => {
            clearTimeout(timer);
            reject(e);
        });
        req.end();
    });
}

// Opens a stream that must be accepted: 200, text/event-stream, retry first, then hello or reset.
// Resolves with the stream once its first event (hello or reset) arrived.
export async function openLive(base, opts, timeoutMs = 10000) {
    const s = await openStream(base, opts);
    if (s.status !== 200) {
        await s.ended;
        assert.fail(`GET /v1/stream: ${s.status} ${s.body}`);
    }
    assert.match(s.headers['content-type'], /^text\/event-stream/);
    await s.until((x) => x.frames.some((f) => f.event === 'hello' || f.event === 'reset'), timeoutMs, 'hello or reset');
    return s;
}

// Reads a participant's stream as EventSource would: when a connection ends, it opens the next
// with Last-Event-ID (here at once), until `count` reminders arrived. Resolves with the reminders
// and the streams it used.
export async function follow(base, opts, count, timeoutMs) {
    const end = Date.now() + timeoutMs;
    const streams = [];
    const got = [];
    let lastEventId = opts.lastEventId;
    for (;;) {
        const s = await openLive(base, { ...opts, lastEventId });
        streams.push(s);
        const left = end - Date.now();
        const done = s.until((x) => x.end || got.length + x.reminders.length >= count, Math.max(left, 1), `${count} reminders`)
            .catch((e) => e);
        const r = await done;
        got.push(...s.reminders);
        if (r instanceof Error || got.length >= count) {
            if (r instanceof Error) {
                throw new Error(`${got.length} of ${count} reminders over ${streams.length} connections: ${r.message}`);
            }
            return { reminders: got, streams };
        }
        if (s.lastEventId !== '') { // as EventSource: a connection that brought no id keeps the last one
            lastEventId = s.lastEventId;
        }
    }
}

// A refused stream: resolves with {status, headers, json} once the body is in.
export async function refused(base, opts) {
    const s = await openStream(base, opts);
    await s.ended;
    return s;
}

// Asserts the 401 of a bad token.
export function assertInvalidToken(res, what) {
    const status = res.status;
    const header = typeof res.header === 'function' ? res.header('www-authenticate') : res.headers['www-authenticate'];
    const body = typeof res.header === 'function' ? res.json : JSON.parse(res.body);
    assert.equal(status, 401, `${what}: status`);
    assert.match(header ?? '', /^Bearer\b.*\berror="invalid_token"/, `${what}: WWW-Authenticate`);
    assert.equal(body.code, 'invalid_token', `${what}: problem code`);
}

// ---------------------------------------------------------------- tokens

// POST /v1/browser-tokens with the tenant's API key; the whole 201 body.
export async function mintToken(srv, key, { sub, scope = 'notifications', ttl_s, mtg } = {}) {
    const json = { sub, scope };
    if (ttl_s !== undefined) {
        json.ttl_s = ttl_s;
    }
    if (mtg !== undefined) {
        json.mtg = mtg;
    }
    const r = await srv.req('POST', '/v1/browser-tokens', { key, json, validate: documented('POST', '/v1/browser-tokens') });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

// A token signed here with jose under a signing key ({id, secret}); claims win over the defaults.
export function signToken(signingKey, claims = {}, header = {}) {
    const iat = Math.floor(Date.now() / 1000);
    return new SignJWT({ aud: AUD, iat, exp: iat + 600, scope: 'notifications', ...claims })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: signingKey.id, ...header })
        .sign(new TextEncoder().encode(signingKey.secret));
}

// POST /v1/signing-keys: {id, secret, created_at}.
export async function createSigningKey(srv, key) {
    const r = await srv.req('POST', '/v1/signing-keys', { key, validate: documented('POST', '/v1/signing-keys') });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

// Whether api/openapi.yaml describes method + path yet: the contract check runs where it does.
export function documented(method, urlPath) {
    const t = templateFor(urlPath);
    return Boolean(t && spec.paths[t][method.toLowerCase()]);
}

// ---------------------------------------------------------------- reminders that fire now

// Creates a meeting (API key, or a browser token with meetings:write) starting in two minutes with
// n (1..5) reminders whose times are already past: the engine fires them at once, one stream event
// each. Returns the meeting.
export async function meetingFiringNow(srv, auth, { participants = [{ id: 'u1' }], n = 1, organizer_id, title = 'now' } = {}) {
    const json = {
        title,
        starts_at: new Date(Date.now() + 2 * MIN).toISOString(),
        participants,
        reminders: Array.from({ length: n }, (_, i) => ({ minutes_before: 3 + i })),
    };
    if (organizer_id !== undefined) {
        json.organizer_id = organizer_id;
    }
    const r = await srv.req('POST', '/v1/meetings', { key: auth, json });
    assert.equal(r.status, 201, r.text);
    return r.json;
}

// Fires `count` reminders for participants over meetings of up to 5 reminders, `parallel` creates
// at a time, round-robin over servers. Returns the meetings.
export async function fireMany(servers, auth, count, { participants = [{ id: 'u1' }], parallel = 8 } = {}) {
    const sizes = [];
    for (let left = count; left > 0; left -= 5) {
        sizes.push(Math.min(5, left));
    }
    const made = [];
    for (let i = 0; i < sizes.length; i += parallel) {
        made.push(...await Promise.all(sizes.slice(i, i + parallel).map((n, j) =>
            meetingFiringNow(servers[(i + j) % servers.length], auth, { participants, n }))));
    }
    return made;
}

// The value of a counter or gauge without labels on a server's /metrics.
export async function metric(srv, name) {
    const r = await srv.req('GET', '/metrics', { validate: false });
    const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(r.text);
    assert.ok(m, `no ${name} in /metrics`);
    return Number(m[1]);
}

// The tenant's stream head in PostgreSQL.
export async function dbHead(h, tenantId) {
    return Number(await h.sql(`SELECT coalesce((SELECT seq FROM stream_heads WHERE tenant_id = ${tenantId}), 0)`)) || 0;
}

// Waits until the tenant's head reaches seq.
export async function dbHeadAtLeast(h, tenantId, seq, timeoutMs) {
    const end = Date.now() + timeoutMs;
    let head = 0;
    while (Date.now() < end) {
        head = await dbHead(h, tenantId);
        if (head >= seq) {
            return head;
        }
        await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail(`stream head ${head} did not reach ${seq} within ${timeoutMs} ms`);
}

// The tenant's reminder events (not inbox changes) for sub after seq: [{seq, rid, fired_ms}],
// ascending.
export async function dbEvents(h, tenantId, sub, after = 0) {
    const out = await h.sql(`SELECT seq, reminder_id, (extract(epoch FROM fired_at) * 1000)::bigint
        FROM stream_events WHERE tenant_id = ${tenantId} AND seq > ${after}
        AND kind = 0 AND '${sub.replace(/'/g, "''")}' = ANY (audience) ORDER BY seq`);
    return out === '' ? [] : out.split('\n').map((l) => {
        const [seq, rid, fired] = l.split('|').map(Number);
        return { seq, rid, firedMs: fired };
    });
}

export async function tenantIdOf(h, name) {
    return Number(await h.sql(`SELECT id FROM tenants WHERE name = '${name}'`));
}

// Asserts seqs strictly increasing and no reminder id twice.
export function assertOrderedUnique(reminders, what) {
    for (let i = 1; i < reminders.length; i++) {
        assert.ok(reminders[i].seq > reminders[i - 1].seq,
            `${what}: seq ${reminders[i].seq} after ${reminders[i - 1].seq}`);
    }
    assert.equal(new Set(reminders.map((r) => r.id)).size, reminders.length, `${what}: a reminder came twice`);
}
