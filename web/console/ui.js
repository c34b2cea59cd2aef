// ui.js -- small DOM helpers shared by the views: an element builder (text only, never HTML
// strings, so nothing from the API is ever parsed as markup), status badges (a word and a colour),
// times, the loading, empty and error states, and the paging of a list.
import { api } from './api.js';

// h('tag.class#id', {attrs, on: {event: fn}}, ...children): children are nodes, strings or
// arrays of them; null and false are skipped.
export function h(spec, attrs = {}, ...children) {
    const [, tag, rest] = /^([a-z0-9]+)(.*)$/.exec(spec);
    const el = tag === 'svg' || attrs.svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
    for (const m of rest.matchAll(/([.#])([\w-]+)/g)) {
        if (m[1] === '.') el.classList.add(m[2]);
        else el.id = m[2];
    }
    for (const [k, v] of Object.entries(attrs ?? {})) {
        if (k === 'on') {
            for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
        } else if (k === 'svg' || v === undefined || v === null || v === false) {
            continue;
        } else if (k === 'text') {
            el.textContent = v;
        } else if (k in el && !(el instanceof SVGElement) && typeof v !== 'string') {
            el[k] = v;
        } else {
            el.setAttribute(k, v === true ? '' : String(v));
        }
    }
    append(el, children);
    return el;
}

function append(el, children) {
    for (const c of children) {
        if (c === null || c === undefined || c === false) continue;
        if (Array.isArray(c)) append(el, c);
        else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
}

// An SVG element (charts.js).
export const s = (tag, attrs = {}, ...children) => h(tag, { ...attrs, svg: true }, ...children);

// Status words and their tone (the colour). Every status is shown by its word too.
const TONES = {
    delivered: 'ok', healthy: 'ok', fired: 'ok', closed: 'ok',
    pending: 'info', queued: 'info',
    failed: 'bad', open: 'bad', missed: 'bad',
    failing: 'warn', skipped: 'muted', cancelled: 'muted', disabled: 'muted', stream: 'muted',
};

export function badge(word, label = word) {
    return h(`span.badge.tone-${TONES[word] ?? 'muted'}`, { 'data-status': word }, label);
}

// A 24-hour clock whatever the locale: operators compare times across tools and logs.
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium', hourCycle: 'h23' });
const shortTime = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });

export const fmtTime = (iso) => (iso ? dateTime.format(new Date(iso)) : '—');
export const fmtShort = (iso) => (iso ? shortTime.format(new Date(iso)) : '—');
export const fmtClock = (iso) => (iso ? clock.format(new Date(iso)) : '—');

// "3 min ago", "in 2 h": for lists, with the exact time in the title.
export function ago(iso) {
    if (!iso) return '—';
    const d = (Date.parse(iso) - Date.now()) / 1000;
    const a = Math.abs(d);
    const [n, u] = a < 60 ? [Math.round(a), 's'] : a < 3600 ? [Math.round(a / 60), 'min'] : a < 86400 ? [Math.round(a / 3600), 'h'] : [Math.round(a / 86400), 'd'];
    return d < 0 ? `${n} ${u} ago` : `in ${n} ${u}`;
}

export const clockEl = (iso) => h('time', { datetime: iso ?? undefined, title: iso ? fmtTime(iso) : undefined }, fmtClock(iso));
export const timeEl = (iso) => h('time', { datetime: iso ?? undefined, title: iso ? fmtTime(iso) : undefined }, iso ? fmtShort(iso) : '—');

// Lateness in ms as people read it.
export function fmtMs(ms) {
    if (ms === null || ms === undefined) return '—';
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 60000) return `${Number((ms / 1000).toFixed(ms < 10000 ? 2 : 1))} s`;
    return `${Number((ms / 60000).toFixed(1))} min`;
}

export const fmtInt = (n) => (n === null || n === undefined ? '—' : new Intl.NumberFormat().format(n));

// A value of <input type=datetime-local> (local time) as an ISO instant, or '' when empty.
export function localToIso(v) {
    if (!v) return '';
    const t = new Date(v);
    return Number.isNaN(t.getTime()) ? '' : t.toISOString();
}

// An instant as a datetime-local value (local time, minutes).
export function isoToLocal(iso) {
    const d = new Date(iso);
    const pad = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export const loading = (what) => h('div.state.state-loading', { role: 'status' }, h('span.spinner', { 'aria-hidden': 'true' }), `Loading ${what}…`);
export const empty = (title, hint) => h('div.state.state-empty', {}, h('p.state-title', {}, title), hint ? h('p.muted', {}, hint) : null);
export function failure(err, retry) {
    return h('div.state.state-error', { role: 'alert' },
        h('p.state-title', {}, 'Could not load this'),
        h('p', {}, err.message),
        retry ? h('button.btn', { type: 'button', on: { click: retry } }, 'Try again') : null);
}

// Replaces the children of el.
export function put(el, ...children) {
    el.replaceChildren();
    append(el, children);
    return el;
}

// A labelled field: label text and its control (the control's id ties them).
export function field(label, control, extra = '') {
    return h(`div.field${extra}`, {}, h('label', { for: control.id }, label), control);
}

// A result line under an action: tone ok, bad or info.
export const note = (tone, text) => h(`p.msg.msg-${tone}`, { role: tone === 'bad' ? 'alert' : 'status' }, text);

export const shortId = (id) => (id && id.length > 13 ? `${id.slice(0, 8)}…` : id ?? '—');

// The pages of a list endpoint: url(cursor) is the page's URL; the first page's items go to
// first(items), which returns what box shows (an empty state when there are none), each page's to
// add(items); "Load more" in more follows next_cursor. Loading and error states go where the page
// goes (box for the first, more for the others).
export function pager(box, more, what, url, first, add) {
    const page = async (cursor) => {
        put(cursor ? more : box, loading(what));
        let r;
        try {
            r = await api('GET', url(cursor));
        } catch (e) {
            if (e.status !== 401) put(cursor ? more : box, failure(e, () => page(cursor)));
            return;
        }
        if (!cursor) put(box, first(r.items));
        add(r.items);
        put(more, r.next_cursor ? h('button.btn', { type: 'button', on: { click: () => page(r.next_cursor) } }, 'Load more') : null);
    };
    page(null);
}
