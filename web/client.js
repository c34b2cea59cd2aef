// @ts-check
/**
 * tocsin's browser client, served as GET /v1/client.js: a participant's live reminders in a web
 * page. No dependencies; an ES module.
 *
 *   import { bootstrap } from 'https://tocsin.example.com/v1/client.js';
 *   const conn = await bootstrap({
 *     baseUrl: 'https://tocsin.example.com',
 *     getToken: async () => (await fetch('/my-backend/tocsin-token')).text(), // scope notifications
 *     onInbox: (inbox) => render(inbox.items),             // at start and after a reset
 *     onReminder: (n, { seq }) => show(n),                 // n.id is the webhook-id: dedupe on it
 *     onInboxChange: (c) => badge(c.unread_count),         // read or archived, in any tab
 *     onState: (state, detail) => badge(state, detail),
 *   });
 *
 * connect() reads GET /v1/stream with fetch() and an Authorization header (EventSource cannot
 * send one), parses the event stream itself by the WHATWG rules, keeps the cursor in
 * sessionStorage and resumes with Last-Event-ID, asks getToken() again on `reauth`, on 401 and
 * before the token expires, reconnects with exponential backoff and jitter (Retry-After on
 * 429/503), and treats a stream silent for 2.5 heartbeats as dead. The tabs of a browser share
 * one stream: the tab holding a Web Lock reads it and fans events out over a BroadcastChannel;
 * when that tab closes, another takes the lock and goes on from the shared cursor.
 *
 * Without this module, a plain EventSource works too (the token then travels in the URL and
 * must live at most 15 minutes; EventSource resumes by itself with Last-Event-ID but stops for
 * good on a 401, so open a new one with a new token on `reauth`):
 *
 *   const es = new EventSource(`${base}/v1/stream?access_token=${token}&last_event_id=${head}`);
 *   es.addEventListener('reminder', (e) => show(JSON.parse(e.data)));
 *   es.addEventListener('reset', () => reloadInbox());
 */

/** @typedef {import('./tocsin-api').components['schemas']} Schemas */
/** @typedef {Schemas['ReminderNotification']} ReminderNotification */
/** @typedef {Schemas['Inbox']} Inbox */
/** @typedef {Schemas['ResetData']} ResetData */
/** @typedef {Schemas['InboxMarks']} InboxMarks */
/** @typedef {Schemas['InboxUpTo']} InboxUpTo */
/** @typedef {Schemas['Preferences']} Preferences */
/** @typedef {'connecting' | 'open' | 'reconnecting' | 'failed' | 'closed'} State */
/** @typedef {'solo' | 'leader' | 'follower'} Role */
/**
 * @typedef {object} StateDetail
 * @property {Role} role this tab's part: `solo` reads its own stream, `leader` reads the shared
 *   one, `follower` gets the leader's events
 * @property {number} [retryInMs] the wait before the next attempt (`reconnecting`)
 * @property {string} [error] what went wrong (`reconnecting`, `failed`)
 */
/**
 * @typedef {object} ConnectOptions
 * @property {() => string | Promise<string>} getToken a browser token with the `notifications`
 *   scope, fresh from the app's backend; called at start, on `reauth`, on 401 and before `exp`
 * @property {string} [baseUrl] tocsin's base URL; default: where this module was loaded from
 * @property {(n: ReminderNotification, meta: { seq: number }) => void} [onReminder] each reminder
 *   once per tab, in `seq` order
 * @property {(reset: ResetData) => void} [onReset] the cursor could not be honoured: reload the
 *   inbox (`bootstrap` does)
 * @property {(change: InboxMarks | InboxUpTo, meta: { seq: number }) => void} [onInboxChange] the
 *   participant changed their marks (here, in another tab or on another device): one item's
 *   (`seq`, `read_at`, `archived_at`) or every item up to `up_to` read; with `unread_count`
 * @property {(state: State, detail: StateDetail) => void} [onState] connection state changes
 * @property {number | null} [cursor] start after this `seq` (an inbox's `head`); default: the
 *   cursor this tab kept in sessionStorage, or none (the stream starts at the head)
 * @property {boolean} [shareTabs] one stream for all tabs (default: where Web Locks and
 *   BroadcastChannel exist)
 * @property {string} [channel] what tabs share a stream by; default: the token's `sub`
 * @property {number} [heartbeatMs] the server's TOCSIN_STREAM_HEARTBEAT_MS (default 20000)
 * @property {number} [backoffBaseMs] first retry delay after an error (default 1000)
 * @property {number} [backoffMaxMs] longest retry delay (default 60000)
 * @property {typeof fetch} [fetch] for tests
 */
/**
 * @typedef {object} Connection
 * @property {() => void} close stops reading (a follower takes over the shared stream)
 * @property {() => State} state
 * @property {() => Role} role
 * @property {() => number | null} cursor the last `seq` this tab has seen
 */
/**
 * @typedef {object} InboxOptions
 * @property {() => string | Promise<string>} getToken
 * @property {string} [baseUrl]
 * @property {number} [after] only items after this `seq`
 * @property {number} [limit] 1..200 (server default 50)
 * @property {boolean} [unread] true: unread items only; false: read ones only
 * @property {boolean} [archived] true: archived items only; false: the others only
 * @property {typeof fetch} [fetch]
 */
/**
 * @typedef {object} MarkOptions
 * @property {() => string | Promise<string>} getToken
 * @property {string} [baseUrl]
 * @property {typeof fetch} [fetch]
 */
/**
 * @typedef {object} EventStreamEvent
 * @property {string} type the `event:` field, or `message`
 * @property {string} data the `data:` lines joined with LF
 * @property {string} lastEventId the last event id when it was dispatched
 */

const HEARTBEAT_MS = 20000;
const WATCHDOG_BEATS = 2.5; // no byte for this many heartbeats: the connection is dead
const RENEW_LEAD_MS = 30000; // renew the token this long before exp (the server's reauth lead)
const RETRY_MS = 3000; // a clean end waits up to this (or the stream's retry:) before reconnecting
const STORAGE_PREFIX = 'tocsin:cursor:';

/**
 * An incremental event-stream parser by the WHATWG rules (HTML, "Server-sent events"): lines end
 * with CRLF, LF or CR; `:` starts a comment; one space after the colon is dropped; a blank line
 * dispatches. The last event id is set at every blank line, also by a block without data (so an
 * `id:`-only block moves the cursor: onId), and survives from event to event.
 * @param {{ onEvent: (e: EventStreamEvent) => void, onId?: (id: string) => void,
 *   onRetry?: (ms: number) => void }} handlers
 * @returns {{ push: (text: string) => void }} feed it decoded text in any chunks
 */
export function createEventStreamParser({ onEvent, onId, onRetry }) {
    let line = '', data = '', type = '', idBuffer = '', lastId = '', skipLF = false;

    function dispatch() {
        const moved = idBuffer !== lastId;
        lastId = idBuffer;
        if (data === '') { // no event; an id-only block still moves the last event id
            type = '';
            if (moved && onId) onId(lastId);
            return;
        }
        const e = { type: type || 'message', data: data.slice(0, -1), lastEventId: lastId };
        data = type = '';
        onEvent(e);
    }

    /** @param {string} l */
    function field(l) {
        if (l === '') return dispatch();
        if (l[0] === ':') return;
        const colon = l.indexOf(':');
        const name = colon < 0 ? l : l.slice(0, colon);
        let value = colon < 0 ? '' : l.slice(colon + 1);
        if (value[0] === ' ') value = value.slice(1);
        if (name === 'event') type = value;
        else if (name === 'data') data += value + '\n';
        else if (name === 'id' && !value.includes('\0')) idBuffer = value;
        else if (name === 'retry' && /^[0-9]+$/.test(value) && onRetry) onRetry(Number(value));
    }

    return {
        push(text) {
            let i = skipLF && text[0] === '\n' ? 1 : 0;
            skipLF = false;
            while (i < text.length) {
                const lf = text.indexOf('\n', i), cr = text.indexOf('\r', i);
                const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
                if (end < 0) {
                    line += text.slice(i);
                    return;
                }
                const l = line + text.slice(i, end);
                line = '';
                i = end + 1;
                if (text[end] === '\r') {
                    if (i === text.length) skipLF = true; // a CRLF split between two chunks
                    else if (text[i] === '\n') i++;
                }
                field(l);
            }
        },
    };
}

/** @param {string | undefined} baseUrl */
function base(baseUrl) {
    return (baseUrl ?? new URL('..', import.meta.url).href).replace(/\/+$/, '');
}

/** The JWT claims, unverified (only to read sub and exp). @param {string} token */
function claims(token) {
    try {
        const bin = atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'));
        return JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0))));
    } catch {
        return {};
    }
}

/** Calls an app's callback; its exceptions are reported, never break the stream. @param {Function | undefined} fn @param {...any} args */
function call(fn, ...args) {
    try {
        if (fn) fn(...args);
    } catch (e) {
        setTimeout(() => { throw e; });
    }
}

/** An HTTP failure with the problem's code and the server's Retry-After. */
class HttpError extends Error {
    /** @param {Response} res @param {any} problem */
    constructor(res, problem) {
        super(`${res.status} ${problem?.code ?? res.statusText}${problem?.detail ? `: ${problem.detail}` : ''}`);
        this.status = res.status;
        const ra = Number(res.headers.get('Retry-After'));
        this.retryAfterMs = Number.isFinite(ra) && ra > 0 ? ra * 1000 : 0;
    }
}

/** @param {Response} res */
async function httpError(res) {
    return new HttpError(res, await res.json().catch(() => null));
}

/** @param {number} ms @param {AbortSignal} signal */
function sleep(ms, signal) {
    return new Promise((resolve) => {
        const t = setTimeout(resolve, ms);
        signal.addEventListener('abort', () => { clearTimeout(t); resolve(undefined); }, { once: true });
    });
}

/**
 * GET /v1/me/notifications: the participant's recent reminders and the stream's head.
 * @param {InboxOptions} o
 * @returns {Promise<Inbox>}
 */
export async function fetchInbox(o) {
    const q = new URLSearchParams();
    if (o.after != null) q.set('after', String(o.after));
    if (o.limit != null) q.set('limit', String(o.limit));
    if (o.unread != null) q.set('unread', String(o.unread));
    if (o.archived != null) q.set('archived', String(o.archived));
    const query = q.toString();
    const res = await (o.fetch ?? fetch)(`${base(o.baseUrl)}/v1/me/notifications${query ? `?${query}` : ''}`, {
        headers: { Authorization: `Bearer ${await o.getToken()}`, Accept: 'application/json' },
        credentials: 'omit',
        cache: 'no-store',
    });
    if (!res.ok) throw await httpError(res);
    return res.json();
}

/**
 * A write of the participant's marks: the answer's JSON, or an HttpError.
 * @param {MarkOptions} o @param {string} method @param {string} path @param {string} type
 * @param {object} body
 */
async function markRequest(o, method, path, type, body) {
    const res = await (o.fetch ?? fetch)(`${base(o.baseUrl)}${path}`, {
        method,
        headers: { Authorization: `Bearer ${await o.getToken()}`, Accept: 'application/json', 'Content-Type': type },
        body: JSON.stringify(body),
        credentials: 'omit',
        cache: 'no-store',
    });
    if (!res.ok) throw await httpError(res);
    return res.json();
}

/**
 * PATCH /v1/me/notifications/{seq}: marks one item read (or, with read false, unread) and/or
 * archived. Every tab and device of the participant gets onInboxChange.
 * @param {MarkOptions} o @param {number} seq @param {{ read?: boolean, archived?: boolean }} marks
 * @returns {Promise<InboxMarks>}
 */
export function markNotification(o, seq, marks) {
    return markRequest(o, 'PATCH', `/v1/me/notifications/${seq}`, 'application/merge-patch+json', marks);
}

/**
 * POST /v1/me/notifications/read: marks every item up to `upTo` (an inbox's `head` marks all) read.
 * @param {MarkOptions} o @param {number} upTo
 * @returns {Promise<{ up_to: number, marked: number, unread_count: number }>}
 */
export function markAllRead(o, upTo) {
    return markRequest(o, 'POST', '/v1/me/notifications/read', 'application/json', { up_to: upTo });
}

/**
 * GET /v1/me/preferences: the participant's channels, quiet hours and own reminders.
 * @param {MarkOptions} o
 * @returns {Promise<Preferences>}
 */
export async function getPreferences(o) {
    const res = await (o.fetch ?? fetch)(`${base(o.baseUrl)}/v1/me/preferences`, {
        headers: { Authorization: `Bearer ${await o.getToken()}`, Accept: 'application/json' },
        credentials: 'omit',
        cache: 'no-store',
    });
    if (!res.ok) throw await httpError(res);
    return res.json();
}

/**
 * PUT /v1/me/preferences: replaces them whole (a member left out takes its default) and
 * resolves with what is kept; a bad body is an HttpError (400) and changes nothing.
 * @param {MarkOptions} o @param {Preferences} prefs
 * @returns {Promise<Preferences>}
 */
export function setPreferences(o, prefs) {
    return markRequest(o, 'PUT', '/v1/me/preferences', 'application/json', prefs);
}

/**
 * Page-load bootstrap: loads the inbox (onInbox), then streams from its head, so that nothing
 * is lost or shown twice in between; after a reset it loads the inbox again.
 * @param {ConnectOptions & { limit?: number, onInbox?: (inbox: Inbox) => void }} o
 * @returns {Promise<Connection>}
 */
export async function bootstrap(o) {
    const inbox = await fetchInbox(o);
    call(o.onInbox, inbox);
    return connect({
        ...o,
        cursor: inbox.head,
        onReset: (r) => {
            call(o.onReset, r);
            fetchInbox(o).then((i) => call(o.onInbox, i), () => {}); // failed: the stream goes on
        },
    });
}

/**
 * Opens the live stream (shared by the tabs of this browser where it can be).
 * @param {ConnectOptions} o
 * @returns {Connection}
 */
export function connect(o) {
    const url = `${base(o.baseUrl)}/v1/stream`;
    const doFetch = o.fetch ?? fetch.bind(globalThis);
    const watchdogMs = (o.heartbeatMs ?? HEARTBEAT_MS) * WATCHDOG_BEATS;
    const backoffBase = o.backoffBaseMs ?? 1000, backoffMax = o.backoffMaxMs ?? 60000;
    const share = o.shareTabs ?? (typeof navigator !== 'undefined' && !!navigator.locks &&
        typeof BroadcastChannel !== 'undefined');
    const stop = new AbortController();
    const storageKey = STORAGE_PREFIX + url;
    /** @type {State} */ let state = 'connecting';
    /** @type {Role} */ let role = share ? 'follower' : 'solo';
    /** @type {Omit<StateDetail, 'role'>} */ let detail = {};
    /** @type {number | null} the last seq this tab has seen */ let seen = null;
    /** @type {number | null} where the stream is (the leader's cursor) */ let shared = null;
    /** @type {string | null} */ let token = null;
    let expMs = 0, retryMs = RETRY_MS, opened = false;
    /** @type {BroadcastChannel | null} */ let bc = null;
    /** @type {(() => void) | null} ends the current connection so that the next starts at once */
    let reopen = null;

    /** @param {number} seq */
    function see(seq) {
        seen = seq;
        try { sessionStorage.setItem(storageKey, String(seq)); } catch { /* no storage: memory only */ }
    }
    try {
        const v = o.cursor ?? sessionStorage.getItem(storageKey);
        if (v != null && /^[0-9]+$/.test(String(v))) see(Number(v));
    } catch { /* no storage (a sandboxed frame) */ }

    /** @param {State} s @param {Omit<StateDetail, 'role'>} [d] */
    function setState(s, d = {}) {
        state = s;
        detail = d;
        if (role !== 'follower' && bc && s !== 'closed') bc.postMessage({ t: 'state', state, detail });
        call(o.onState, s, { role, ...d });
    }

    // What the stream says, applied in this tab: from the stream, or from the leader's channel.
    /** @param {{ t: string, seq?: number, data?: any, state?: State, detail?: any }} m */
    function apply(m) {
        const seq = m.seq ?? 0;
        if (m.t === 'reminder') {
            shared = seq;
            if (seen === null || seq > seen) { // dedupe: a tab may have it from its inbox
                see(seq);
                call(o.onReminder, m.data, { seq });
            }
        } else if (m.t === 'inbox') {
            shared = seq;
            if (seen === null || seq > seen) {
                see(seq);
                call(o.onInboxChange, m.data, { seq });
            }
        } else if (m.t === 'cursor') {
            shared = seq;
            if (seen === null || seq > seen) see(seq);
        } else if (m.t === 'reset') {
            shared = seq;
            see(seq);
            call(o.onReset, m.data);
        } else if (m.t === 'sync' && role === 'follower') {
            shared = seq;
            if (seen === null) see(seq);
        } else if (m.t === 'state' && role === 'follower' && m.state) {
            setState(m.state, m.detail);
        }
    }

    /** @param {{ t: string, seq: number, data?: any }} m */
    function emit(m) {
        apply(m);
        if (bc) bc.postMessage(m);
    }

    /** @param {boolean} force */
    async function tokenFor(force) {
        if (force || token === null || (expMs > 0 && expMs - Date.now() < RENEW_LEAD_MS)) {
            token = await o.getToken();
            expMs = (claims(token).exp ?? 0) * 1000;
        }
        return token;
    }

    // reauth, or exp is near: a new token, then a new connection from the cursor (the old one
    // ends at exp). A getToken that returns no later token changes nothing.
    function renew() {
        const old = expMs;
        tokenFor(true).then(() => { if (expMs > old && reopen) reopen(); }, () => {});
    }

    /** @param {Response} res @param {AbortController} ctl @param {() => void} alive */
    async function read(res, ctl, alive) {
        if (!res.body) throw new Error('no response body');
        const reader = res.body.getReader(), decoder = new TextDecoder();
        const parser = createEventStreamParser({
            onRetry: (ms) => { retryMs = ms; },
            onId: (id) => { if (/^[0-9]+$/.test(id)) emit({ t: 'cursor', seq: Number(id) }); },
            onEvent: (e) => {
                const seq = /^[0-9]+$/.test(e.lastEventId) ? Number(e.lastEventId) : null;
                if (e.type === 'reminder' && seq !== null) emit({ t: 'reminder', seq, data: JSON.parse(e.data) });
                else if (e.type === 'reset' && seq !== null) emit({ t: 'reset', seq, data: JSON.parse(e.data) });
                else if (e.type === 'inbox' && seq !== null) emit({ t: 'inbox', seq, data: JSON.parse(e.data) });
                else if (seq !== null && seq !== shared) emit({ t: 'cursor', seq }); // hello's head
                if (e.type === 'hello' || e.type === 'reset') { // the stream's first event
                    opened = true;
                    if (state !== 'open') setState('open');
                } else if (e.type === 'reauth') {
                    renew();
                }
            },
        });
        for (;;) {
            const { done, value } = await reader.read();
            if (done || ctl.signal.aborted) return;
            alive();
            parser.push(decoder.decode(value, { stream: true }));
        }
    }

    // One connection, from fetch to its end. Resolves with the wait before the next one after a
    // clean or planned end; throws on anything else. force: get a new token first (after a 401).
    /** @param {boolean} force */
    async function once(force) {
        const ctl = new AbortController(), end = () => ctl.abort();
        let planned = false, silent = false, lastByte = Date.now();
        /** @type {ReturnType<typeof setTimeout> | undefined} */ let watchdog, renewTimer;
        const alive = () => { lastByte = Date.now(); };
        const check = () => {
            const idle = Date.now() - lastByte;
            if (idle < watchdogMs) watchdog = setTimeout(check, watchdogMs - idle);
            else { silent = true; ctl.abort(); }
        };
        stop.signal.addEventListener('abort', end, { once: true });
        reopen = () => { planned = true; ctl.abort(); };
        opened = false;
        try {
            const t = await tokenFor(force);
            if (expMs > 0) renewTimer = setTimeout(renew, Math.max(0, expMs - Date.now() - RENEW_LEAD_MS));
            const from = shared ?? seen;
            /** @type {Record<string, string>} */
            const headers = { Authorization: `Bearer ${t}`, Accept: 'text/event-stream' };
            if (from !== null) headers['Last-Event-ID'] = String(from);
            alive();
            watchdog = setTimeout(check, watchdogMs);
            const res = await doFetch(url, { headers, signal: ctl.signal, credentials: 'omit', cache: 'no-store' });
            if (!res.ok) throw await httpError(res);
            await read(res, ctl, alive);
            if (silent) throw new Error(`no data for ${watchdogMs / 1000} s`);
            return planned ? 0 : Math.random() * retryMs; // a clean end: spread the reconnects
        } catch (e) {
            if (stop.signal.aborted || planned) return 0;
            throw silent ? new Error(`no data for ${watchdogMs / 1000} s`) : e;
        } finally {
            clearTimeout(watchdog);
            clearTimeout(renewTimer);
            reopen = null;
            stop.signal.removeEventListener('abort', end);
        }
    }

    // Reads the stream until close(), reconnecting after every end: at once after a first 401
    // (with a new token) or a planned end, soon after a clean end, with backoff after errors.
    async function lead() {
        let failures = 0, after401 = false;
        while (!stop.signal.aborted) {
            if (state === 'reconnecting') setState('reconnecting', { error: detail.error }); // trying now
            let wait;
            try {
                wait = await once(after401);
                after401 = false;
                if (opened) failures = 0;
            } catch (e) {
                const err = /** @type {any} */ (e);
                const status = err instanceof HttpError ? err.status : 0;
                if (opened) failures = 0; // it was healthy until it broke
                if (status >= 400 && status < 500 && ![401, 408, 429].includes(status)) {
                    setState('failed', { error: String(err.message) }); // retrying cannot help
                    return;
                }
                const delay = Math.min(backoffMax, backoffBase * 2 ** failures) * (0.5 + Math.random() / 2);
                wait = Math.max(status === 401 && !after401 ? 0 : delay, err.retryAfterMs ?? 0);
                after401 = status === 401;
                failures++;
                setState('reconnecting', { retryInMs: Math.round(wait), error: String(err.message ?? err) });
            }
            await sleep(wait, stop.signal);
        }
    }

    // With tab sharing: the channel is named after the token's sub, so tabs of different users
    // never mix; the tab that gets the lock leads until it closes.
    async function start() {
        if (!share) return lead();
        let sub = o.channel;
        for (let n = 0; sub === undefined; n++) {
            try {
                sub = String(claims(await tokenFor(false)).sub ?? '');
            } catch (e) {
                const wait = Math.min(backoffMax, backoffBase * 2 ** n);
                setState('reconnecting', { retryInMs: wait, error: String(/** @type {any} */ (e)?.message ?? e) });
                await sleep(wait, stop.signal);
                if (stop.signal.aborted) return;
            }
        }
        const name = `tocsin:${url}:${sub}`;
        bc = new BroadcastChannel(name);
        bc.onmessage = (e) => {
            if (e.data.t !== 'ask') apply(e.data);
            else if (role === 'leader' && bc) {
                bc.postMessage({ t: 'state', state, detail });
                if (shared !== null) bc.postMessage({ t: 'sync', seq: shared });
            }
        };
        bc.postMessage({ t: 'ask' });
        await navigator.locks.request(name, { signal: stop.signal }, async () => {
            role = 'leader';
            setState('connecting');
            await lead();
            if (state === 'failed') await sleep(2 ** 31 - 1, stop.signal); // keep the lock: others would fail too
        });
    }

    setState('connecting');
    start().catch((e) => {
        if (!stop.signal.aborted) setState('failed', { error: String(e?.message ?? e) });
    });

    return {
        close() {
            if (stop.signal.aborted) return;
            stop.abort();
            setState('closed');
            if (bc) bc.close();
        },
        state: () => state,
        role: () => role,
        cursor: () => seen,
    };
}

/**
 * @typedef {object} PushOptions
 * @property {() => string | Promise<string>} getToken a browser token with the `push` scope
 * @property {string} [baseUrl] tocsin's base URL; default: where this module was loaded from
 * @property {ServiceWorkerRegistration} [registration] the app's own service worker, which
 *   `importScripts()` /v1/sw.js; default: /v1/sw.js registered as it is, which a browser allows
 *   only when the page comes from tocsin's own origin (the demo page)
 * @property {string} [scope] the scope of that default registration (default: the page's path)
 * @property {number} [timeoutMs] how long `enablePush` waits for the browser's push service to
 *   answer `pushManager.subscribe()` (default 30 s)
 * @property {typeof fetch} [fetch]
 */
const PUSH_STORAGE_PREFIX = 'tocsin:push:';
// A browser that cannot reach its push service may never settle subscribe(): Chromium with no
// way to Google's left it pending for the 90 s we waited. Past this the caller gets an error to
// show instead of a toggle stuck half-way.
const PUSH_SUBSCRIBE_TIMEOUT_MS = 30000;

/** @param {PushOptions} o @returns {Promise<ServiceWorkerRegistration>} */
async function pushRegistration(o) {
    if (o.registration) return o.registration;
    const scope = o.scope ?? location.pathname;
    const reg = await navigator.serviceWorker.register(`${base(o.baseUrl)}/v1/sw.js`, { scope });
    const worker = reg.installing ?? reg.waiting ?? reg.active;
    if (worker && worker.state !== 'activated') {
        await new Promise((resolve) => {
            worker.addEventListener('statechange', () => {
                if (worker.state === 'activated' || worker.state === 'redundant') resolve(undefined);
            });
        });
    }
    return reg;
}

/** base64url text to bytes. @param {string} text */
function fromBase64Url(text) {
    const bin = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
    return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/** @param {PushOptions} o @param {string} method @param {string} path @param {unknown} [body] */
async function pushCall(o, method, path, body) {
    const headers = /** @type {Record<string, string>} */ ({
        Authorization: `Bearer ${await o.getToken()}`, Accept: 'application/json' });
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await (o.fetch ?? fetch)(`${base(o.baseUrl)}${path}`, {
        method, headers, credentials: 'omit', cache: 'no-store',
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok && res.status !== 404) throw await httpError(res);
    return res.status === 204 || res.status === 404 ? null : res.json();
}

/**
 * Subscribes this browser to the token's participant's reminders by Web Push (shown by /v1/sw.js
 * while no page is open). Asks for the notification permission: call it from a click. Subscribing
 * again is harmless (the same browser keeps one subscription). Rejects when the browser's push
 * service does not answer within `timeoutMs`.
 * @param {PushOptions} o
 * @returns {Promise<{ id: string, subscription: PushSubscription }>}
 */
export async function enablePush(o) {
    if (!('serviceWorker' in navigator) || typeof PushManager === 'undefined') {
        throw new Error('this browser has no Web Push');
    }
    if ((await Notification.requestPermission()) !== 'granted') {
        throw new Error('notifications are not allowed for this site');
    }
    const reg = await pushRegistration(o);
    const { key } = await pushCall(o, 'GET', '/v1/push/vapid-public-key');
    const applicationServerKey = fromBase64Url(key);
    let sub = await reg.pushManager.getSubscription();
    const had = sub?.options.applicationServerKey;
    if (sub && had && new Uint8Array(had).join() !== applicationServerKey.join()) {
        await sub.unsubscribe(); // made for another tenant's key
        sub = null;
    }
    if (!sub) {
        const ms = o.timeoutMs ?? PUSH_SUBSCRIBE_TIMEOUT_MS;
        let timer;
        const late = /** @type {Promise<never>} */ (new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(
                `the browser's push service did not answer within ${Math.ceil(ms / 1000)} s`)), ms);
        }));
        try {
            sub = await Promise.race([
                reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey }), late]);
        } finally {
            clearTimeout(timer);
        }
    }
    const { id } = await pushCall(o, 'POST', '/v1/push/subscriptions', sub.toJSON());
    localStorage.setItem(PUSH_STORAGE_PREFIX + sub.endpoint, id);
    return { id, subscription: sub };
}

/**
 * Ends this browser's Web Push reminders: removes the subscription from tocsin and from the
 * browser.
 * @param {PushOptions} o
 */
export async function disablePush(o) {
    const reg = o.registration ?? (await navigator.serviceWorker.getRegistration(o.scope ?? location.pathname));
    const sub = reg ? await reg.pushManager.getSubscription() : null;
    if (!sub) return;
    const id = localStorage.getItem(PUSH_STORAGE_PREFIX + sub.endpoint);
    if (id) await pushCall(o, 'DELETE', `/v1/push/subscriptions/${encodeURIComponent(id)}`);
    localStorage.removeItem(PUSH_STORAGE_PREFIX + sub.endpoint);
    await sub.unsubscribe();
}

/**
 * Whether this browser has a Web Push subscription for these options' worker.
 * @param {PushOptions} o
 */
export async function pushEnabled(o) {
    if (!('serviceWorker' in navigator)) return false;
    const reg = o.registration ?? (await navigator.serviceWorker.getRegistration(o.scope ?? location.pathname));
    return !!(reg && (await reg.pushManager.getSubscription()));
}
