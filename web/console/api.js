// api.js -- the console's calls to the tocsin API on this origin, with the API key of this tab
// (sessionStorage: it goes when the tab closes). A 401 signs out (onUnauthorized); every other
// failure is an ApiError whose message is the problem's detail or title.
const KEY_ITEM = 'tocsin.console.key';

export class ApiError extends Error {
    constructor(status, problem) {
        super(problem?.detail || problem?.title || `HTTP ${status}`);
        this.status = status;
        this.code = problem?.code;
    }
}

let onUnauthorized = () => {};

export const session = {
    key: () => sessionStorage.getItem(KEY_ITEM),
    set: (k) => sessionStorage.setItem(KEY_ITEM, k),
    clear: () => sessionStorage.removeItem(KEY_ITEM),
    onUnauthorized: (fn) => { onUnauthorized = fn; },
};

// One request: path under this origin, optional JSON body (PATCH as a merge patch). Resolves to
// the parsed body (null for none).
export async function api(method, path, body, key = session.key()) {
    const headers = { Authorization: `Bearer ${key}`, Accept: 'application/json' };
    if (body !== undefined) {
        headers['Content-Type'] = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
    }
    let res;
    try {
        res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    } catch (e) {
        throw new ApiError(0, { title: `The server cannot be reached (${e.message})` });
    }
    const text = await res.text();
    let json = null;
    try {
        json = text ? JSON.parse(text) : null;
    } catch {
        json = null;
    }
    if (res.status === 401) {
        onUnauthorized(session.key() ? 'The server no longer accepts this API key (revoked?). Sign in again.'
            : 'The server refused this API key.');
        throw new ApiError(401, json);
    }
    if (!res.ok) {
        throw new ApiError(res.status, json);
    }
    return json;
}

// A query string of the parameters that have a value.
export function query(params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
        if (v !== undefined && v !== null && v !== '') {
            q.set(k, v);
        }
    }
    const s = q.toString();
    return s ? `?${s}` : '';
}
