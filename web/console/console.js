// console.js -- the operator console's entry (GET /console, docs/console.md): sign-in with an API
// key kept in sessionStorage, the hash router (#/overview, #/deliveries, #/endpoints,
// #/meetings[/id], each with its query after '?') and sign-out. The views are their own modules.
import { api, session, ApiError } from './api.js';
import { overview } from './overview.js';
import { deliveries } from './deliveries.js';
import { endpoints } from './endpoints.js';
import { meetings } from './meetings.js';

const VIEWS = { overview, deliveries, endpoints, meetings };
const $ = (sel) => document.querySelector(sel);

function showSignIn(message, tone = 'bad') {
    session.clear();
    $('#app').hidden = true;
    $('#view').replaceChildren();
    $('#signin').hidden = false;
    const msg = $('#signin-msg');
    msg.hidden = !message;
    msg.textContent = message ?? '';
    msg.className = `msg msg-${tone}`;
    $('#key').value = '';
    $('#key').focus();
}

function route() {
    if (!session.key()) {
        showSignIn();
        return;
    }
    $('#signin').hidden = true;
    $('#app').hidden = false;
    const [path, qs] = (location.hash.replace(/^#\/?/, '') || 'overview').split('?');
    const [name, id] = path.split('/');
    const view = VIEWS[name] ? name : 'overview';
    for (const a of document.querySelectorAll('.tabs a')) {
        if (a.dataset.view === view) a.setAttribute('aria-current', 'page');
        else a.removeAttribute('aria-current');
    }
    const main = $('#view');
    main.className = `view view-${view}`;
    document.title = `${view[0].toUpperCase()}${view.slice(1)} · tocsin console`;
    VIEWS[view](main, new URLSearchParams(qs ?? ''), id ? decodeURIComponent(id) : undefined);
}

async function signIn(e) {
    e.preventDefault();
    const key = $('#key').value.trim();
    const btn = $('#signin-form button');
    const msg = $('#signin-msg');
    if (!key) {
        msg.hidden = false;
        msg.className = 'msg msg-bad';
        msg.textContent = 'Enter an API key (tocsin keys create --tenant NAME prints one).';
        return;
    }
    btn.disabled = true;
    try {
        await api('GET', '/v1/stats?window=1h', undefined, key); // checks the key
        session.set(key);
        if (!location.hash) location.hash = '#/overview';
        route();
        $('#view').focus();
    } catch (err) {
        if (!(err instanceof ApiError) || err.status !== 401) {
            msg.hidden = false;
            msg.className = 'msg msg-bad';
            msg.textContent = err.status === 403 ? 'This is not an API key (a browser token cannot use the console).' : err.message;
        }
    } finally {
        btn.disabled = false;
    }
}

session.onUnauthorized((message) => showSignIn(message));
$('#signin-form').addEventListener('submit', signIn);
$('#signout').addEventListener('click', () => {
    showSignIn('Signed out: the key is gone from this tab.', 'info');
});
window.addEventListener('hashchange', () => {
    route();
    $('#view').focus({ preventScroll: true });
});
route();
