// endpoints.js -- #/endpoints: the tenant's webhooks (GET /v1/webhooks) with their health (a word
// and a colour), circuit, last hour's success rate and last error; per webhook: turn it off or on
// (PATCH), send again what failed since a time (POST .../recover, the count queued shown), and
// rotate its secret (POST .../rotate-secret, the new secret shown once with a copy button).
import { api } from './api.js';
import { h, put, badge, timeEl, loading, empty, failure, note, field, localToIso, isoToLocal } from './ui.js';

const RECOVER_DEFAULT_MS = 24 * 3600 * 1000; // "since" starts a day back

const pct = (r) => (r === null || r === undefined ? '—' : `${(r * 100).toFixed(r === 1 || r === 0 ? 0 : 1)} %`);

function health(w) {
    const x = w.health;
    const circuit = x.state === 'open' ? 'open' : x.state === 'disabled' ? 'disabled' : 'closed';
    return h('dl.kv.kv-grid', {},
        h('div', {}, h('dt', {}, 'Circuit'), h('dd', {}, badge(circuit, circuit === 'open' ? 'open (paused)' : circuit))),
        h('div', {}, h('dt', {}, 'Success, last hour'), h('dd', {}, `${pct(x.success_rate_1h)} of ${x.attempts_1h}`)),
        h('div', {}, h('dt', {}, 'Last success'), h('dd', {}, timeEl(x.last_success_at))),
        h('div', {}, h('dt', {}, 'Last failure'), h('dd', {}, timeEl(x.last_failure_at))),
        h('div.kv-wide', {}, h('dt', {}, 'Last error'), x.last_error ? h('dd.error-cell', {}, x.last_error) : h('dd', {}, '—')));
}

// The secret shown once, with a copy button.
function secretBox(secret) {
    const out = h('code.secret', {}, secret);
    const status = h('span.muted', { 'aria-live': 'polite' });
    const copy = h('button.btn', { type: 'button', on: { click: async () => {
        try {
            await navigator.clipboard.writeText(secret);
            status.textContent = 'Copied.';
        } catch {
            getSelection().selectAllChildren(out);
            status.textContent = 'Selected: press Ctrl+C to copy.';
        }
    } } }, 'Copy');
    return h('div.secret-box', {}, h('p', {}, h('strong', {}, 'New signing secret. '),
        'It is shown only now. Until the overlap ends each request carries both signatures, so receivers can switch without losing one.'),
    h('div.secret-row', {}, out, copy), status);
}

function card(w, reload) {
    const result = h('div.result', { 'aria-live': 'polite' });
    const run = async (btn, fn) => {
        btn.disabled = true;
        try {
            await fn();
        } catch (e) {
            if (e.status !== 401) put(result, note('bad', e.message));
        } finally {
            btn.disabled = false;
        }
    };
    const toggle = h('button.btn', { type: 'button', on: { click: () => run(toggle, async () => {
        const now = await api('PATCH', `/v1/webhooks/${w.id}`, { disabled: !w.disabled });
        reload(now, note('ok', now.disabled ? 'Turned off: its deliveries are recorded failed, for a recover later.' : 'Turned on.'));
    }) } }, w.disabled ? 'Enable' : 'Disable');
    const sinceId = `since-${w.id}`;
    const since = h(`input#${sinceId}`, { type: 'datetime-local', value: isoToLocal(new Date(Date.now() - RECOVER_DEFAULT_MS).toISOString()) });
    const recover = h('button.btn', { type: 'submit', disabled: w.disabled }, 'Recover');
    const recoverForm = h('form.inline-form', { on: { submit: (e) => {
        e.preventDefault();
        run(recover, async () => {
            const iso = localToIso(since.value);
            if (!iso) throw new Error('Choose a time to recover from.');
            const r = await api('POST', `/v1/webhooks/${w.id}/recover`, { since: iso });
            put(result, note('ok', r.queued === 0 ? 'Nothing failed since then: none queued.' : `Queued ${r.queued} failed ${r.queued === 1 ? 'delivery' : 'deliveries'} again, in fire order.`));
        });
    } } }, field('Recover failed since', since), recover);
    const rotate = h('button.btn', { type: 'button', on: { click: () => run(rotate, async () => {
        const r = await api('POST', `/v1/webhooks/${w.id}/rotate-secret`);
        put(result, secretBox(r.secret));
    }) } }, 'Rotate secret');
    return h('article.card.endpoint', { 'data-id': w.id, 'data-state': w.health.state },
        h('div.endpoint-head', {},
            h('div.endpoint-title', {}, h('h2.url', {}, w.url), h('p.muted', {}, w.description ?? 'No description', ' · ', h('span.mono', {}, w.id))),
            badge(w.health.state)),
        health(w),
        h('div.endpoint-foot', {}, h('div.actions', {}, toggle, rotate, h('a.btn.btn-quiet', { href: `#/deliveries?webhook_id=${w.id}` }, 'Its deliveries')),
            recoverForm),
        w.disabled ? h('p.muted.small', {}, 'Turn it on to recover its failed deliveries.') : null,
        result);
}

export function endpoints(view) {
    const list = h('div.stack');
    put(view, h('div.view-head', {}, h('div', {}, h('h1', {}, 'Endpoints'),
        h('p.muted', {}, 'Webhooks and what their recent attempts say, from every replica.'))), list);
    const load = async () => {
        put(list, loading('webhooks'));
        let ws;
        try {
            ws = (await api('GET', '/v1/webhooks')).items;
        } catch (e) {
            if (e.status !== 401) put(list, failure(e, load));
            return;
        }
        if (ws.length === 0) {
            put(list, empty('No webhooks yet', 'Create one with POST /v1/webhooks; it shows here with its health.'));
            return;
        }
        const cards = ws.map((w) => {
            let c = card(w, swap);
            function swap(now, msg) {
                const next = card(now, swap);
                c.replaceWith(next);
                c = next;
                put(next.querySelector('.result'), msg);
                next.querySelector('.actions button')?.focus();
            }
            return c;
        });
        put(list, cards);
    };
    load();
}
