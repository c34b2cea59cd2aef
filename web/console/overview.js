// overview.js -- #/overview: GET /v1/stats for the last hour or day (a switch): the counts, fire
// lateness (p50, p99, max; per channel) and the two charts of charts.js.
import { api } from './api.js';
import { h, put, loading, failure, fmtInt, fmtMs, empty } from './ui.js';
import { latencyChart, outcomeChart, drawInto } from './charts.js';

const WINDOWS = [['1h', 'Last hour'], ['24h', 'Last 24 hours']];
const CHANNELS = ['webhook', 'push', 'email', 'stream'];

function stat(label, value, tone, href) {
    const body = [h('span.stat-value', {}, value), h('span.stat-label', {}, label)];
    return href ? h(`a.stat.tone-${tone}`, { href }, body) : h(`div.stat.tone-${tone}`, {}, body);
}

function counts(st) {
    return h('div.stats', {},
        stat('Pending now', fmtInt(st.pending), 'info', '#/deliveries?status=pending'),
        stat('Due next hour', fmtInt(st.due_next_hour), 'muted'),
        stat('Fired', fmtInt(st.fired), 'muted'),
        stat('Delivered', fmtInt(st.delivered), 'ok', '#/deliveries?status=delivered'),
        stat('Failed', fmtInt(st.failed), st.failed > 0 ? 'bad' : 'muted', '#/deliveries?status=failed'),
        stat('Skipped', fmtInt(st.skipped), 'muted'));
}

function lateness(st) {
    const l = st.lateness_ms;
    return h('div.card', {},
        h('h2', {}, 'Fire lateness'),
        h('p.muted', {}, 'How long after its due time each reminder fired.'),
        h('dl.kv.kv-row', {},
            h('div', {}, h('dt', {}, 'p50'), h('dd', {}, fmtMs(l.p50))),
            h('div', {}, h('dt', {}, 'p99'), h('dd', {}, fmtMs(l.p99))),
            h('div', {}, h('dt', {}, 'max'), h('dd', {}, fmtMs(l.max)))),
        h('div.table-wrap', {}, h('table', {},
            h('caption.sr', {}, 'Per channel'),
            h('thead', {}, h('tr', {}, ['Channel', 'Pending', 'Delivered', 'Failed', 'Skipped', 'p99'].map((c, i) => h(`${i ? 'th.num' : 'th'}${i === 4 ? '.hide-sm' : ''}`, { scope: 'col' }, c)))),
            h('tbody', {}, CHANNELS.map((c) => {
                const x = st.channels[c];
                return h('tr', {}, h('th', { scope: 'row' }, c), h('td.num', {}, fmtInt(x.pending)), h('td.num', {}, fmtInt(x.delivered)),
                    h('td.num', {}, fmtInt(x.failed)), h('td.num.hide-sm', {}, fmtInt(x.skipped)), h('td.num', {}, fmtMs(x.lateness_ms.p99)));
            })))));
}

function chartCard(title, hint, legend, make, buckets) {
    const box = h('div.chart-box');
    const card = h('div.card', {}, h('h2', {}, title), h('p.muted', {}, hint),
        h('ul.legend', {}, legend.map(([cls, text]) => h('li', {}, h(`span.key.${cls}`, { 'aria-hidden': 'true' }), text))), box);
    if (buckets.every((b) => b.fired === 0 && b.delivered === 0 && b.failed === 0 && b.skipped === 0)) {
        box.replaceWith(empty('Nothing fired in this window', 'The chart fills as reminders fire.'));
    } else {
        queueMicrotask(() => drawInto(box, (w) => make(w, buckets)));
    }
    return card;
}

export function overview(view, params) {
    const win = params.get('window') === '24h' ? '24h' : '1h';
    const body = h('div.stack');
    const head = h('div.view-head', {},
        h('div', {}, h('h1', {}, 'Overview'), h('p.muted', {}, 'What fired and what was delivered, from PostgreSQL.')),
        h('div.segmented', { role: 'group', 'aria-label': 'Window' }, WINDOWS.map(([w, label]) =>
            h('a', { href: `#/overview?window=${w}`, 'aria-current': w === win ? 'true' : undefined }, label))));
    put(view, head, body);
    const load = async () => {
        put(body, loading('stats'));
        try {
            const st = await api('GET', `/v1/stats?window=${win}`);
            put(body, counts(st),
                h('div.grid-2', {},
                    chartCard('Lateness over time', `p50 and p99 per ${win === '1h' ? '5 minutes' : 'hour'}.`, [['p50', 'p50'], ['p99', 'p99']], latencyChart, st.buckets),
                    chartCard('Delivery outcomes', `Per ${win === '1h' ? '5 minutes' : 'hour'}.`, [['tone-ok', 'Delivered'], ['tone-bad', 'Failed'], ['tone-muted', 'Skipped']], outcomeChart, st.buckets)),
                lateness(st));
        } catch (e) {
            if (e.status !== 401) put(body, failure(e, load));
        }
    };
    load();
}
