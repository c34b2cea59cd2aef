// deliveries.js -- #/deliveries: the tenant-wide search (GET /v1/deliveries: q, status, channel,
// from, to, webhook_id, meeting_id), newest first, "Load more" following next_cursor; a row opens
// the detail (GET /v1/deliveries/{id}) with its attempts and, for a failed or delivered one, the
// button that sends it again (POST /v1/deliveries/{id}/retry). The filters live in the hash, so a
// search is a link (the overview's counts link here).
import { api, query } from './api.js';
import { h, put, badge, timeEl, clockEl, loading, empty, failure, field, pager, note, localToIso, isoToLocal, shortId, fmtTime } from './ui.js';

const PAGE = 50;
const REFRESH_MS = 1000; // after a retry, the detail is read again this often while pending
const REFRESH_TRIES = 10;
const STATUSES = ['failed', 'pending', 'delivered', 'skipped'];
const CHANNELS = ['webhook', 'push', 'email', 'stream'];

function select(id, label, options, value) {
    return h(`select#${id}`, { name: id }, h('option', { value: '' }, label), options.map((o) => h('option', { value: o, selected: o === value }, o)));
}

function target(d) {
    if (d.channel === 'webhook') return h('span.mono', { title: d.webhook_id }, `webhook ${shortId(d.webhook_id)}`);
    return d.recipient ?? '—';
}

function filters(params, onSearch) {
    const q = h('input#q', { type: 'search', name: 'q', value: params.get('q') ?? '', placeholder: 'Meeting title, recipient or error', autocomplete: 'off', maxlength: 200 });
    const status = select('status', 'Any status', STATUSES, params.get('status'));
    const channel = select('channel', 'Any channel', CHANNELS, params.get('channel'));
    const from = h('input#from', { type: 'datetime-local', name: 'from', value: params.get('from') ? isoToLocal(params.get('from')) : undefined });
    const to = h('input#to', { type: 'datetime-local', name: 'to', value: params.get('to') ? isoToLocal(params.get('to')) : undefined });
    const form = h('form.filters', { role: 'search', on: { submit: (e) => {
        e.preventDefault();
        onSearch({ q: q.value.trim(), status: status.value, channel: channel.value, from: localToIso(from.value), to: localToIso(to.value),
            webhook_id: params.get('webhook_id'), meeting_id: params.get('meeting_id') });
    } } },
    field('Search deliveries', q, '.field-grow'), field('Status', status), field('Channel', channel), field('Fired from', from), field('Fired before', to),
    h('div.field.field-action', {}, h('button.btn.btn-primary', { type: 'submit' }, 'Search')));
    return form;
}

function row(d, open) {
    const title = d.meeting_title ?? '(meeting deleted)';
    return h('tr', { 'data-id': d.id, 'data-status': d.status },
        h('td', {}, badge(d.status)),
        h('td', {}, h('button.link', { type: 'button', 'aria-label': `${title}, delivery ${d.id}`, on: { click: () => open(d.id) } }, title)),
        h('td', {}, d.channel),
        h('td.hide-sm', {}, target(d)),
        h('td.hide-sm', {}, timeEl(d.fire_at)),
        h('td.num', {}, d.attempt_count ?? d.attempts), // a detail (after a retry) or a list item
        h('td.error-cell', {}, d.status === 'failed' || d.status === 'pending' ? d.last_error ?? '' : ''));
}

function attemptsTable(attempts) {
    if (attempts.length === 0) return empty('No attempt yet', 'A pending delivery is tried when it is due.');
    return h('div.table-wrap', {}, h('table.attempts', {},
        h('caption', {}, 'Attempts, oldest first'),
        h('thead', {}, h('tr', {}, ['#', 'At', 'Outcome', 'HTTP', 'Took', 'Replica'].map((c, i) => h(`th${i === 0 || i === 3 || i === 4 ? '.num' : ''}${i === 5 ? '.hide-sm' : ''}`, { scope: 'col' }, c)))),
        attempts.map((a) => h('tbody', {}, h('tr', {},
            h('td.num', {}, a.n), h('td', {}, clockEl(a.at)), h('td', {}, badge(a.status)), h('td.num', {}, a.http_status ?? '—'),
            h('td.num', {}, `${a.duration_ms} ms`), h('td.mono.hide-sm', {}, a.instance)),
        a.error && a.status === 'failed' ? h('tr.error-row', {}, h('td'), h('td.error-cell', { colspan: 5 }, a.error)) : null))));
}

// The detail panel of delivery id, in panel; onChange(d) after a retry changes it.
async function detail(panel, id, close, onChange) {
    put(panel, loading('the delivery'));
    let d;
    try {
        d = await api('GET', `/v1/deliveries/${encodeURIComponent(id)}`);
    } catch (e) {
        if (e.status !== 401) put(panel, h('div.panel-head', {}, h('h2', {}, `Delivery ${id}`), closeButton(close)), failure(e, () => detail(panel, id, close, onChange)));
        return;
    }
    const result = h('div.result', { 'aria-live': 'polite' });
    const action = d.status === 'pending' || d.channel === 'stream' ? null
        : h('button.btn.btn-primary', { type: 'button', on: { click: () => retry(panel, d, result, close, onChange) } }, d.status === 'failed' ? 'Retry' : 'Resend');
    put(panel,
        h('div.panel-head', {}, h('div', {}, h('p.eyebrow', {}, `Delivery ${d.id}`), h('h2', {}, d.meeting_title ?? '(meeting deleted)')), closeButton(close)),
        h('div.panel-status', {}, badge(d.status), action,
            d.status === 'pending' ? h('span.muted', {}, `Next attempt ${d.next_attempt_at ? fmtTime(d.next_attempt_at) : 'soon'}`) : null,
            d.channel === 'stream' ? h('span.muted', {}, 'Written with the fire: nothing to send again.') : null),
        result,
        h('dl.kv', {},
            kv('Channel', d.channel), kv('Target', target(d)), kv('Fired', timeEl(d.fire_at)),
            kv('Delivered', timeEl(d.delivered_at)), kv('Attempts', String(d.attempt_count)),
            kv('Last HTTP status', d.last_status ?? '—'), kv('Last error', d.last_error ?? '—'),
            kv('Meeting', h('a', { href: `#/meetings/${d.meeting_id}` }, 'Open its timeline'))),
        attemptsTable(d.attempts));
    return d;
}

const kv = (k, v) => h('div', {}, h('dt', {}, k), h('dd', {}, v));
const closeButton = (close) => h('button.btn.btn-quiet.close', { type: 'button', 'aria-label': 'Close the detail', on: { click: close } }, '×');

async function retry(panel, d, result, close, onChange) {
    const btn = panel.querySelector('.panel-status button');
    btn.disabled = true;
    put(result, note('info', d.status === 'failed' ? 'Retrying…' : 'Resending…'));
    try {
        await api('POST', `/v1/deliveries/${encodeURIComponent(d.id)}/retry`);
    } catch (e) {
        btn.disabled = false;
        if (e.status !== 401) put(result, note('bad', `Not queued: ${e.message}`));
        return;
    }
    // Queued: read it again until its new attempt is recorded.
    for (let i = 0; i < REFRESH_TRIES; i++) {
        await new Promise((r) => setTimeout(r, REFRESH_MS));
        if (!panel.isConnected) return;
        const now = await api('GET', `/v1/deliveries/${encodeURIComponent(d.id)}`).catch(() => null);
        if (now && now.status !== 'pending') {
            const fresh = await detail(panel, d.id, close, onChange);
            panel.querySelector('.panel-status button')?.focus();
            const r = panel.querySelector('.result');
            put(r, now.status === 'delivered' ? note('ok', `Sent again: delivered (attempt ${now.attempt_count}).`)
                : note('bad', `Sent again: failed (attempt ${now.attempt_count}): ${now.last_error ?? 'no answer'}.`));
            onChange(fresh ?? now);
            return;
        }
    }
    put(result, note('info', 'Queued: the new attempt is not recorded yet. It shows here when it is.'));
}

export function deliveries(view, params) {
    const tbody = h('tbody');
    const list = h('div.list');
    const more = h('div.more');
    const panel = h('aside.panel', { 'aria-label': 'Delivery detail', tabindex: '-1', hidden: true });
    let openId = null;
    // Focus goes back to the row the detail was opened from (redrawn, after a retry).
    const close = () => {
        panel.hidden = true;
        panel.replaceChildren();
        view.classList.remove('with-panel');
        tbody.querySelector(`tr[data-id="${CSS.escape(openId)}"] button`)?.focus();
    };
    const open = async (id) => {
        openId = id;
        panel.hidden = false;
        view.classList.add('with-panel');
        for (const tr of tbody.children) tr.classList.toggle('selected', tr.dataset.id === id);
        const p = detail(panel, id, close, (d) => {
            const old = tbody.querySelector(`tr[data-id="${CSS.escape(d.id)}"]`);
            old?.replaceWith(row(d, open));
        });
        panel.focus();
        await p;
    };
    // Escape closes the detail wherever the focus is (a retry redraws the panel under it).
    const onKey = (e) => {
        if (!view.isConnected) document.removeEventListener('keydown', onKey);
        else if (e.key === 'Escape' && !panel.hidden) close();
    };
    document.addEventListener('keydown', onKey);
    const search = (f) => { location.hash = `#/deliveries${query(f)}`; };
    const scoped = params.get('webhook_id') || params.get('meeting_id');
    put(view,
        h('div.view-head', {}, h('div', {}, h('h1', {}, 'Deliveries'),
            h('p.muted', {}, 'Every notification of the tenant, newest first. Search matches the meeting title, the recipient and the last error.'))),
        filters(params, search),
        scoped ? h('p.scope', {}, params.get('webhook_id') ? `Only webhook ${params.get('webhook_id')}. ` : `Only meeting ${params.get('meeting_id')}. `,
            h('a', { href: `#/deliveries${query({ q: params.get('q'), status: params.get('status') })}` }, 'Show all')) : null,
        h('div.split', {}, h('div.card.card-flush', {}, list, more), panel));
    const base = Object.fromEntries(['q', 'status', 'channel', 'from', 'to', 'webhook_id', 'meeting_id'].map((k) => [k, params.get(k)]));
    const table = () => h('div.table-wrap', {}, h('table.deliveries', {},
        h('caption.sr', {}, 'Deliveries'),
        h('thead', {}, h('tr', {}, ['Status', 'Meeting', 'Channel', 'Target', 'Fired', 'Tries', 'Error'].map((c, i) =>
            h(`th${i === 3 || i === 4 ? '.hide-sm' : ''}${i === 5 ? '.num' : ''}`, { scope: 'col' }, c)))),
        tbody));
    pager(list, more, 'deliveries', (cursor) => `/v1/deliveries${query({ ...base, limit: PAGE, cursor })}`,
        (items) => (items.length === 0
            ? empty('No deliveries match', base.q || base.status ? 'Try another search or clear the filters.' : 'Deliveries appear here once reminders fire.')
            : table()),
        (items) => tbody.append(...items.map((d) => row(d, open))));
}
