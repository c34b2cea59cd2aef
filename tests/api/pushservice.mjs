// pushservice.mjs -- a stand-in for a browser's push service (RFC 8030) on 127.0.0.1, for tests
// and benchmarks: it mints subscriptions as a browser would (a P-256 key pair from node's crypto
// and 16 random auth bytes; endpoint http://127.0.0.1:<port>/push/<n>), and for every POST to an
// endpoint it records the headers and the time, decrypts the body with the npm `http_ece` library
// using the subscriber's private key, and verifies the VAPID Authorization with `jose` (ES256, the
// key from k=, aud = this origin, exp at most 24 h ahead). Each endpoint answers as the test
// programs it: 201 by default, or any status (with Retry-After, after a delay), or never; the
// most requests open at once is kept in maxOpen. With deferChecks (for
// benchmarks: node checks about 2,000 messages a second on one core, slower than tocsin sends
// them) each request is answered at once and checked later by checkAll(), every one of them.
import http from 'node:http';
import { createECDH, randomBytes } from 'node:crypto';
import ece from 'http_ece';
import { decodeJwt, importJWK, jwtVerify } from 'jose';

const DAY_S = 86400;

// The public key of a k= value as a JWK (65 bytes, uncompressed).
function jwkOf(k) {
    const raw = Buffer.from(k, 'base64url');
    if (raw.length !== 65 || raw[0] !== 4) throw new Error(`k= is not an uncompressed P-256 point: ${k}`);
    return { kty: 'EC', crv: 'P-256', x: raw.subarray(1, 33).toString('base64url'), y: raw.subarray(33).toString('base64url') };
}

// Verifies a VAPID Authorization value for origin; returns { k, claims } or throws.
async function verifyVapid(value, origin) {
    const m = /^vapid t=([\w-]+\.[\w-]+\.[\w-]+), k=([\w-]+)$/.exec(value ?? '');
    if (!m) throw new Error(`Authorization is not vapid t=..., k=...: ${value}`);
    const [, token, k] = m;
    const { payload } = await jwtVerify(token, await importJWK(jwkOf(k), 'ES256'), {
        algorithms: ['ES256'], audience: origin, requiredClaims: ['exp', 'sub'],
    });
    if (payload.exp > Date.now() / 1000 + DAY_S + 5) throw new Error(`exp more than 24 h ahead: ${payload.exp}`);
    return { k, claims: payload, unverified: decodeJwt(token) };
}

export class PushService {
    constructor({ deferChecks = false } = {}) {
        this.deferChecks = deferChecks;
        this.verified = new Map(); // VAPID Authorization value -> its verification (a JWT is reused)
        this.subs = new Map(); // n -> { ecdh, auth, plan, got: [] }
        this.serial = 0;
        this.all = []; // every request to any endpoint, in arrival order
        this.open = 0; // requests received and not answered yet
        this.maxOpen = 0;
        this.server = http.createServer((req, res) => this.#handle(req, res));
    }

    async start() {
        await new Promise((r) => this.server.listen(0, '127.0.0.1', r));
        this.origin = `http://127.0.0.1:${this.server.address().port}`;
        return this;
    }

    stop() {
        return new Promise((r) => { this.server.closeAllConnections(); this.server.close(() => r()); });
    }

    // A browser-side subscription: what PushSubscription.toJSON() gives, plus its record.
    // plan(n) answers the n-th request (from 1): a status, { status, retryAfter, location,
    // delayMs }, or 'hang'.
    subscribe(plan = () => 201) {
        const n = ++this.serial;
        const ecdh = createECDH('prime256v1');
        ecdh.generateKeys();
        const auth = randomBytes(16);
        const sub = { n, ecdh, auth, plan, got: [] };
        this.subs.set(String(n), sub);
        sub.json = {
            endpoint: `${this.origin}/push/${n}`,
            expirationTime: null,
            keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') },
        };
        return sub;
    }

    // Decrypts rec's body with the subscriber's key and verifies its VAPID header: sets
    // rec.vapid, rec.plaintext and rec.message, or rec.error.
    async #check(rec) {
        try {
            const auth = rec.headers.authorization;
            if (!this.verified.has(auth)) this.verified.set(auth, verifyVapid(auth, this.origin));
            rec.vapid = await this.verified.get(auth);
            if (rec.vapid.claims.exp < rec.at / 1000) throw new Error('VAPID JWT expired');
            rec.plaintext = ece.decrypt(rec.body, { version: 'aes128gcm', privateKey: rec.sub.ecdh, authSecret: rec.sub.auth }).toString();
            rec.message = JSON.parse(rec.plaintext);
        } catch (e) {
            rec.error = String(e && e.message ? e.message : e);
        }
        delete rec.body;
        delete rec.sub;
    }

    // Checks every request deferred so far (deferChecks).
    async checkAll() {
        for (const rec of this.all) {
            if (rec.body) await this.#check(rec);
        }
    }

    async #handle(req, res) {
        const chunks = [];
        for await (const c of req) chunks.push(c);
        const at = Date.now();
        const m = /^\/push\/(\d+)$/.exec(req.url);
        const sub = m && this.subs.get(m[1]);
        if (req.method !== 'POST' || !sub) {
            res.writeHead(404).end();
            return;
        }
        const body = Buffer.concat(chunks);
        const rec = { at, headers: req.headers, size: body.length, body, sub };
        this.maxOpen = Math.max(this.maxOpen, ++this.open);
        if (!this.deferChecks) await this.#check(rec);
        sub.got.push(rec);
        this.all.push(rec);
        let answer = sub.plan(sub.got.length);
        if (answer === 'hang') return; // never answers (the socket stays open until stop())
        if (typeof answer === 'number') answer = { status: answer };
        if (rec.error && answer.status < 300) answer = { status: 400 }; // what a real service does
        if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
        this.open--;
        const headers = {};
        if (answer.retryAfter !== undefined) headers['Retry-After'] = String(answer.retryAfter);
        if (answer.location !== undefined) headers.Location = answer.location;
        res.writeHead(answer.status, headers).end();
    }
}

export async function pushService() {
    return new PushService().start();
}
