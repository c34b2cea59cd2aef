// example.ts -- a web app's use of the types generated from api/openapi.yaml
// (web/tocsin-api.d.ts) together with the client module (web/client.js). It is type-checked by
// `npm run types:check` in tests/ (part of scripts/test.sh), never run: a change of the contract
// or of the client that breaks code like this fails CI. The @ts-expect-error lines prove that the
// types are real (they would be unused, an error, if a type fell back to any).
import { bootstrap, connect, createEventStreamParser, fetchInbox } from '../../web/client.js';
import type { Connection, StateDetail } from '../../web/client.js';
import type { components, paths } from '../../web/tocsin-api';

type Schemas = components['schemas'];
type Meeting = Schemas['Meeting'];
type Notification = Schemas['ReminderNotification'];
type MeetingPage = paths['/v1/meetings']['get']['responses'][200]['content']['application/json'];
type TokenRequest = paths['/v1/browser-tokens']['post']['requestBody']['content']['application/json'];
type Problem = Schemas['Problem'];

// The participant's upcoming meetings (a token with meetings:read).
export async function upcoming(base: string, token: string): Promise<Meeting[]> {
    const res = await fetch(`${base}/v1/meetings?from=${encodeURIComponent(new Date().toISOString())}`, {
        headers: { Authorization: `Bearer ${token}` },
    });
    if (!res.ok) {
        const p: Problem = await res.json();
        throw new Error(p.code === 'insufficient_scope' ? 'the token lacks meetings:read' : p.detail);
    }
    const page: MeetingPage = await res.json();
    return page.items;
}

export function describe(n: Notification): string {
    const r = n.data.reminder; // null when the meeting's reminders changed since it fired
    const lead = r === null ? '' : ` in ${r.minutes_before} min`;
    // @ts-expect-error a reminder has no title; the meeting has
    void r?.title;
    return `${n.data.meeting.title}${lead} (${n.data.meeting.starts_at})`;
}

// What a parsed stream frame can be: the compiler narrows the union by its event.
export function frameText(f: Schemas['StreamFrame']): string {
    if (!('event' in f)) {
        return `cursor ${f.id}`;
    }
    switch (f.event) {
        case 'hello':
            return f.data.resumed ? `resumed, ${f.data.replayed} replayed` : `head ${f.data.seq}`;
        case 'reminder':
            return describe(f.data);
        case 'reset':
            return `reset (${f.data.reason}) to ${f.data.head}`;
        case 'inbox':
            return 'up_to' in f.data ? `read up to ${f.data.up_to}` : `marks of ${f.data.seq}, ${f.data.unread_count} unread`;
        case 'reauth':
            return `token ends ${f.data.expires_at}`;
    }
}

// What the app's backend sends to POST /v1/browser-tokens.
export const tokenRequest: TokenRequest = { sub: 'u1', scope: 'notifications meetings:read', ttl_s: 900 };

export async function page(base: string, getToken: () => Promise<string>): Promise<Connection> {
    const shown = new Map<string, number>(); // occurrence id -> seq
    const conn = await bootstrap({
        baseUrl: base,
        getToken,
        limit: 20,
        onInbox: (inbox) => inbox.items.forEach((item) => shown.set(item.id, item.seq)),
        onReminder: (n, { seq }) => {
            shown.set(n.id, seq);
            // @ts-expect-error the notification is typed, not any
            void n.data.meeting.organizer;
        },
        onState: (state, detail: StateDetail) => {
            const text: string = state === 'reconnecting' ? `retry in ${detail.retryInMs ?? 0} ms` : state;
            document.title = `${text} (${detail.role})`;
        },
    });
    const inbox: Schemas['Inbox'] = await fetchInbox({ baseUrl: base, getToken, after: conn.cursor() ?? 0 });
    shown.set('head', inbox.head);
    return conn;
}

// The lower layers: a stream without tab sharing, and the parser on its own.
export function plain(base: string, token: string): Connection {
    const events: string[] = [];
    const parser = createEventStreamParser({ onEvent: (e) => events.push(`${e.type}:${e.lastEventId}`) });
    parser.push('id: 1\nevent: hello\ndata: {}\n\n');
    return connect({ baseUrl: base, getToken: () => token, shareTabs: false, heartbeatMs: 20000, onReset: (r) => events.push(r.reason) });
}
