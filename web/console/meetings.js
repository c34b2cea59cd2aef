// meetings.js -- #/meetings: find meetings by title (GET /v1/meetings?q=) or by start time (from,
// to); #/meetings/{id}: one meeting's timeline, in time order: its reminders, its occurrences (a
// series: GET .../occurrences) and its deliveries (GET /v1/deliveries?meeting_id=).
import { api, query } from './api.js';
import { h, put, badge, timeEl, loading, empty, failure, field, pager, localToIso, isoToLocal, fmtTime, shortId } from './ui.js';

const PAGE = 25;
const OCCURRENCES = 10;
const OCCURRENCES_BACK_MS = 24 * 3600 * 1000; // a series' timeline starts a day back
const DELIVERIES = 100;

function finder(params) {
    const q = h('input#mq', { type: 'search', value: params.get('q') ?? '', placeholder: 'Part of the title', autocomplete: 'off', maxlength: 200 });
    const from = h('input#mfrom', { type: 'datetime-local', value: params.get('from') ? isoToLocal(params.get('from')) : undefined });
    const to = h('input#mto', { type: 'datetime-local', value: params.get('to') ? isoToLocal(params.get('to')) : undefined });
    return h('form.filters', { role: 'search', on: { submit: (e) => {
        e.preventDefault();
        location.hash = `#/meetings${query({ q: q.value.trim(), from: localToIso(from.value), to: localToIso(to.value) })}`;
    } } }, field('Title', q, '.field-grow'), field('Starts from', from), field('Starts before', to),
    h('div.field.field-action', {}, h('button.btn.btn-primary', { type: 'submit' }, 'Find')));
}

function meetingRow(m) {
    const fired = m.reminders.filter((r) => r.status === 'fired').length;
    return h('li.meeting-row', {}, h('a', { href: `#/meetings/${m.id}` },
        h('span.meeting-title', {}, m.title),
        h('span.muted', {}, fmtTime(m.starts_at), m.recurrence ? ' · repeats' : '', m.location ? ` · ${m.location}` : '')),
    h('span.meeting-meta', {}, `${m.participants.length} ${m.participants.length === 1 ? 'participant' : 'participants'} · ${fired}/${m.reminders.length} reminders fired`));
}

function list(view, params) {
    const out = h('div.card.card-flush');
    const more = h('div.more');
    put(view, h('div.view-head', {}, h('div', {}, h('h1', {}, 'Meetings'),
        h('p.muted', {}, 'Find a meeting by a part of its title or by when it starts, then open its timeline.'))),
    finder(params), out, more);
    const ul = h('ul.meetings');
    const base = { q: params.get('q'), from: params.get('from'), to: params.get('to') };
    pager(out, more, 'meetings', (cursor) => `/v1/meetings${query({ ...base, limit: PAGE, cursor })}`,
        (items) => (items.length === 0
            ? empty('No meeting matches', base.q ? 'Titles are matched case-insensitively, anywhere in the title.' : 'Meetings show here once created.')
            : ul),
        (items) => ul.append(...items.map(meetingRow)));
}

// A reminder of an occurrence, on the occurrence's entry.
const occurrenceReminder = (r) => h('div.tl-sub', {}, `Reminder ${r.minutes_before} min before, `, timeEl(r.fire_at), r.status ? badge(r.status) : null);

// The timeline's entries: [{at, kind, label, status, extra, sub}].
function entries(m, occurrences, deliveries) {
    const out = [];
    if (m.recurrence) {
        for (const o of occurrences) {
            out.push({ at: o.starts_at, kind: 'Occurrence', label: o.title, status: o.cancelled ? 'cancelled' : null, sub: o.reminders.map(occurrenceReminder) });
        }
    } else {
        out.push({ at: m.starts_at, kind: 'Starts', label: m.title, status: null });
        if (m.ends_at) out.push({ at: m.ends_at, kind: 'Ends', label: m.title, status: null });
        for (const r of m.reminders) out.push({ at: r.fire_at, kind: 'Reminder', label: `${r.minutes_before} min before on ${r.channels?.join(', ') || 'the default channels'}`, status: r.status });
    }
    for (const d of deliveries) {
        out.push({ at: d.delivered_at ?? d.fire_at, kind: 'Delivery', status: d.status,
            label: h('a', { href: `#/deliveries${query({ meeting_id: m.id })}` }, d.channel === 'webhook' ? `Webhook ${shortId(d.webhook_id)}`
                : d.channel === 'stream' ? 'The live stream' : `${d.channel === 'push' ? 'Web Push' : 'Email'} to ${d.recipient}`),
            extra: d.last_error });
    }
    return out.sort((a, b) => Date.parse(a.at) - Date.parse(b.at) || (a.kind === 'Delivery') - (b.kind === 'Delivery'));
}

async function timeline(view, id) {
    put(view, h('p.back', {}, h('a', { href: '#/meetings' }, '← Meetings')), loading('the meeting'));
    let m, occ = [], dels;
    try {
        m = await api('GET', `/v1/meetings/${encodeURIComponent(id)}`);
        [occ, dels] = await Promise.all([
            m.recurrence ? api('GET', `/v1/meetings/${encodeURIComponent(id)}/occurrences${query({ from: new Date(Date.now() - OCCURRENCES_BACK_MS).toISOString(), limit: OCCURRENCES })}`).then((r) => r.items) : [],
            api('GET', `/v1/deliveries${query({ meeting_id: id, limit: DELIVERIES })}`).then((r) => r.items),
        ]);
    } catch (e) {
        if (e.status !== 401) put(view, h('p.back', {}, h('a', { href: '#/meetings' }, '← Meetings')), failure(e, () => timeline(view, id)));
        return;
    }
    const items = entries(m, occ, dels);
    const now = Date.now();
    put(view,
        h('p.back', {}, h('a', { href: '#/meetings' }, '← Meetings')),
        h('div.view-head', {}, h('div', {}, h('p.eyebrow', {}, m.recurrence ? `Series · ${m.recurrence.rrule}` : 'Meeting'), h('h1', {}, m.title),
            h('p.muted', {}, fmtTime(m.starts_at), m.time_zone ? ` (${m.time_zone})` : '', m.location ? ` · ${m.location}` : ''))),
        h('div.grid-2.grid-side', {},
            h('section.card', { 'aria-labelledby': 'tl-h' }, h('h2#tl-h', {}, 'Timeline'),
                m.recurrence ? h('p.muted', {}, `${OCCURRENCES} occurrences from a day ago on, with their reminders, and the series' deliveries.`) : null,
                items.length === 0 ? empty('Nothing on the timeline') : h('ol.timeline', {}, items.map((e) =>
                    h(`li.tl.tl-${e.kind.toLowerCase()}${Date.parse(e.at) > now ? '.tl-future' : ''}`, {},
                        h('span.tl-dot', { 'aria-hidden': 'true' }),
                        h('div.tl-body', {}, h('div.tl-line', {}, h('span.tl-kind', {}, e.kind), e.status ? badge(e.status) : null, timeEl(e.at)),
                            h('div.tl-label', {}, e.label), e.sub, e.extra ? h('div.error-cell', {}, e.extra) : null))))),
            h('section.card', {}, h('h2', {}, 'Details'), h('dl.kv', {},
                h('div', {}, h('dt', {}, 'Organizer'), h('dd', {}, m.organizer_id ?? '—')),
                h('div', {}, h('dt', {}, 'Participants'), h('dd', {}, m.participants.length ? m.participants.map((p) => p.name ?? p.id).join(', ') : '—')),
                h('div', {}, h('dt', {}, 'Reminders'), h('dd', {}, m.reminders.map((r) => `${r.minutes_before} min`).join(', ') || '—')),
                h('div', {}, h('dt', {}, 'Deliveries'), h('dd', {}, h('a', { href: `#/deliveries${query({ meeting_id: m.id })}` }, `${dels.length}${dels.length === DELIVERIES ? '+' : ''} in the delivery log`))),
                h('div', {}, h('dt', {}, 'Id'), h('dd.mono', {}, m.id))))));
}

export function meetings(view, params, id) {
    if (id) timeline(view, id);
    else list(view, params);
}
