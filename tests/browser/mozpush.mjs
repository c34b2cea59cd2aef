// mozpush.mjs -- a local stand-in for Mozilla's push service, enough for a real Firefox to
// subscribe and receive Web Push offline. One port on 127.0.0.1 speaks both sides:
//   - to Firefox, the WebSocket protocol its PushServiceWebSocket uses (subprotocol
//     "push-notification"): hello -> a UAID, register -> a channel and its push endpoint,
//     unregister, and "notification" messages carrying the encrypted body, which Firefox decrypts
//     itself and acknowledges with "ack";
//   - to the application server (tocsin), the push endpoints: POST /wpush/<channelID> with an
//     aes128gcm body and a TTL -> 201, and the body goes to the browser as it is; an unknown
//     channel -> 410; a VAPID header that does not hold (as Mozilla's service checks it: k= the
//     key the subscription was made with, an ES256 JWT by that key, aud = this origin, exp at
//     most 24 h ahead) -> 401.
// Firefox is pointed at it with dom.push.serverURL = ws://127.0.0.1:<port>/ and
// dom.push.testing.allowInsecureServerURL = true. It keeps what it saw for the test to check.
import crypto from 'node:crypto';
import http from 'node:http';
import { importJWK, jwtVerify } from 'jose';
import { WebSocketServer } from 'ws';

const BODY_MAX = 4096 + 1024; // RFC 8030 push services take >= 4096 bytes; more is a bug here
const VAPID_EXP_MAX_S = 24 * 3600;

// Why the Authorization header of a push to a channel made with key `registered` (base64url of
// the application server's P-256 point, padded or not) does not hold, or null when it does.
async function vapidProblem(header, registered, origin) {
    const m = /^vapid t=([A-Za-z0-9_.-]+), *k=([A-Za-z0-9_-]+=*)$/.exec(header ?? '');
    if (!m) return `no vapid t=, k= in ${JSON.stringify(header)}`;
    const k = Buffer.from(m[2], 'base64url');
    if (!registered || !k.equals(Buffer.from(registered, 'base64url'))) return 'k is not the subscription\'s key';
    if (k.length !== 65 || k[0] !== 4) return 'k is not an uncompressed P-256 point';
    try {
        const key = await importJWK({ kty: 'EC', crv: 'P-256', x: k.subarray(1, 33).toString('base64url'),
            y: k.subarray(33).toString('base64url') }, 'ES256');
        const { payload } = await jwtVerify(m[1], key, { algorithms: ['ES256'], audience: origin });
        if (typeof payload.exp !== 'number' || payload.exp > Date.now() / 1000 + VAPID_EXP_MAX_S) return 'exp missing or more than 24 h ahead';
        if (!/^(mailto:|https:)/.test(String(payload.sub))) return 'sub is neither mailto: nor https:';
    } catch (e) {
        return `JWT: ${e.message}`;
    }
    return null;
}

export async function startMozPush() {
    const channels = new Map(); // channelID -> { socket, key }
    const pushes = [];          // every POST to an endpoint: { channelID, status, problem, headers, bytes, at }
    const acks = [];            // { channelID, version, code } from Firefox
    const log = [];             // every WebSocket message in both directions, for failure messages
    let sockets = 0;
    let version = 0;

    const server = http.createServer((req, res) => {
        const m = /^\/wpush\/([0-9a-f-]{36})$/.exec(req.url);
        if (req.method !== 'POST' || !m) {
            res.writeHead(404).end();
            return;
        }
        const parts = [];
        let size = 0;
        req.on('data', (d) => {
            size += d.length;
            if (size <= BODY_MAX) parts.push(d);
        });
        req.on('end', async () => {
            const channelID = m[1];
            const body = Buffer.concat(parts);
            const ch = channels.get(channelID);
            const { port } = server.address();
            let status = 201;
            let problem = null;
            if (!ch || ch.socket.readyState !== ch.socket.OPEN) status = 410;
            else if (size > BODY_MAX) status = 413;
            else if (req.headers['content-encoding'] !== 'aes128gcm' || !/^\d+$/.test(req.headers.ttl ?? '')) status = 400;
            else if ((problem = await vapidProblem(req.headers.authorization, ch.key, `http://127.0.0.1:${port}`))) status = 401;
            pushes.push({ channelID, status, problem, headers: req.headers, bytes: size, at: Date.now() });
            if (status === 201) {
                version += 1;
                const msg = {
                    messageType: 'notification',
                    channelID,
                    version: `v${version}`,
                    data: body.toString('base64url'),
                    headers: { encoding: 'aes128gcm' },
                };
                log.push(['out', msg]);
                ch.socket.send(JSON.stringify(msg));
            }
            res.writeHead(status, status === 201 ? { Location: `/m/${version}` } : {}).end();
        });
    });

    const wss = new WebSocketServer({ server });
    wss.on('connection', (socket) => {
        sockets += 1;
        const send = (msg) => {
            log.push(['out', msg]);
            socket.send(JSON.stringify(msg));
        };
        socket.on('message', (raw) => {
            let msg;
            try {
                msg = JSON.parse(raw.toString());
            } catch {
                socket.close(1002, 'not JSON');
                return;
            }
            log.push(['in', msg]);
            switch (msg.messageType) {
            case 'hello':
                send({
                    messageType: 'hello',
                    uaid: msg.uaid || crypto.randomUUID().replace(/-/g, ''),
                    status: 200,
                    use_webpush: true,
                    broadcasts: {},
                });
                break;
            case 'register': {
                const { port } = server.address();
                channels.set(msg.channelID, { socket, key: msg.key ?? null });
                send({
                    messageType: 'register',
                    channelID: msg.channelID,
                    status: 200,
                    pushEndpoint: `http://127.0.0.1:${port}/wpush/${msg.channelID}`,
                });
                break;
            }
            case 'unregister':
                channels.delete(msg.channelID);
                send({ messageType: 'unregister', channelID: msg.channelID, status: 200 });
                break;
            case 'ack':
                for (const u of msg.updates ?? []) acks.push(u);
                break;
            case 'ping':
                send({ messageType: 'ping' });
                break;
            default:
                break;
            }
        });
    });

    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address();
    return {
        port,
        url: `ws://127.0.0.1:${port}/`,
        channels,
        pushes,
        acks,
        log,
        connections: () => sockets,
        close: async () => {
            for (const c of wss.clients) c.terminate();
            await new Promise((resolve) => wss.close(resolve));
            server.closeAllConnections?.();
            await new Promise((resolve) => server.close(resolve));
        },
    };
}
