/*
 * tocsin's service worker part, served as GET /v1/sw.js: shows the meeting reminders tocsin sends
 * by Web Push while no page of the app is open.
 *
 * In the app's own service worker (a worker must come from the app's origin):
 *
 *   self.tocsin = {                                   // all optional
 *     url: (r) => `/meetings/${r.meeting_id}`,        // what a click opens (default: r.url, the
 *                                                     // meeting's metadata.url, else the scope)
 *     notification: (r) => ({ body: '…' }),           // more showNotification() options
 *   };
 *   importScripts('https://tocsin.example.com/v1/sw.js');
 *
 * A page served by tocsin itself (the demo) may register this file as it is (it is sent with
 * Service-Worker-Allowed: /).
 *
 * The push message is JSON: {"type":"meeting.reminder","id","meeting_id","title","starts_at",
 * "minutes_before","url"?}. The notification's tag is the reminder's id (the webhook-id), so a
 * message the push service delivers twice replaces its own notification instead of showing a
 * second one. Open pages of the app get {type:"tocsin.reminder", reminder} by postMessage once the
 * notification is up.
 * Push messages of another shape are left to the app's own handlers.
 */
/* eslint-env serviceworker */
(() => {
    const hooks = () => self.tocsin || {};

    /** The reminder a push carries, or null when the message is not tocsin's. */
    function reminderOf(event) {
        try {
            const r = event.data ? event.data.json() : null;
            return r && r.type === 'meeting.reminder' && typeof r.id === 'string' ? r : null;
        } catch {
            return null;
        }
    }

    function body(r) {
        const start = new Date(r.starts_at);
        const at = Number.isNaN(start.getTime()) ? '' :
            start.toLocaleTimeString(undefined, { hour: 'numeric', minute: '2-digit' });
        const m = r.minutes_before;
        if (typeof m === 'number' && m > 0) return `Starts in ${m} min${at ? ` (${at})` : ''}`;
        return at ? `Starts now (${at})` : 'Starts now';
    }

    async function show(r) {
        try {
            const extra = typeof hooks().notification === 'function' ? hooks().notification(r) : {};
            await self.registration.showNotification(r.title || 'Meeting reminder', {
                body: body(r),
                tag: r.id,
                data: { tocsin: r },
                timestamp: Date.parse(r.starts_at) || Date.now(),
                ...extra,
            });
        } finally {
            // Pages hear of it once the notification is up, so that one showing the reminder
            // itself can find it (getNotifications({tag: id})) and close it.
            const pages = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
            for (const page of pages) page.postMessage({ type: 'tocsin.reminder', reminder: r });
        }
    }

    function target(r) {
        const custom = typeof hooks().url === 'function' ? hooks().url(r) : null;
        return new URL(custom || r.url || self.registration.scope, self.registration.scope).href;
    }

    async function open(r) {
        const url = target(r);
        const pages = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
        const same = pages.find((p) => p.url === url);
        if (same) return same.focus();
        if (self.clients.openWindow) return self.clients.openWindow(url);
        return undefined;
    }

    self.addEventListener('push', (event) => {
        const r = reminderOf(event);
        if (r) event.waitUntil(show(r));
    });

    self.addEventListener('notificationclick', (event) => {
        const r = event.notification.data && event.notification.data.tocsin;
        if (!r) return;
        event.notification.close();
        event.waitUntil(open(r));
    });

    // Registered as it is (not imported into an app's worker, whose life cycle is the app's):
    // take over at once, so that a first subscription works without a reload.
    if (/\/v1\/sw\.js$/.test(self.location.pathname)) {
        self.addEventListener('install', () => self.skipWaiting());
        self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
    }
})();
