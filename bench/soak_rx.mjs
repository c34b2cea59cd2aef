// bench/soak_rx.mjs -- what the soak (bench/soak.sh) receives with: a webhook receiver of its own
// (one healthy path that the fault schedule makes answer 500 or hang for a while, one that never
// answers at all) and a stream client per participant that follows GET /v1/stream across replica
// deaths by resuming with Last-Event-ID on the next replica. Each keeps every receipt with its
// arrival time, for the ledger (bench/soak_ledger.mjs).
import http from 'node:http';

const RECONNECT_MS = 500;

// A webhook receiver on 127.0.0.1:port. /ok answers 204 unless mode is '500' or 'hang'; /never
// never answers (tocsin's delivery timeout ends each attempt).
export class Receiver {
    constructor(port) {
        this.port = port;
        this.mode = 'ok';
        this.got = []; // { path, id, at, status, body }
        this.server = http.createServer((req, res) => this.#handle(req, res));
    }

    start() {
        return new Promise((r) => this.server.listen(this.port, '127.0.0.1', () => r(this)));
    }

    stop() {
        return new Promise((r) => { this.server.closeAllConnections(); this.server.close(() => r()); });
    }

    #handle(req, res) {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
            const at = Date.now();
            const path = req.url;
            const hang = path === '/never' || this.mode === 'hang';
            const status = hang ? 0 : this.mode === '500' ? 500 : 204;
            let body = null;
            try {
                body = JSON.parse(Buffer.concat(chunks).toString());
            } catch {
                body = null;
            }
            this.got.push({ path, id: req.headers['webhook-id'], at, status, body });
            if (!hang) res.writeHead(status).end();
        });
    }
}

// One participant's stream, reconnecting forever (until close()) to ports in turn.
export class StreamFollower {
    constructor(ports, token, sub) {
        this.ports = ports;
        this.token = token;
        this.sub = sub;
        this.turn = 0;
        this.lastId = null;
        this.got = []; // { id (occurrence id), seq, at }
        this.resets = []; // { at, lastId }: cursors the server could not honour
        this.connects = 0;
        this.open = true;
        this.req = null;
    }

    start() {
        this.#connect();
        return this;
    }

    close() {
        this.open = false;
        if (this.req) this.req.destroy();
    }

    #again() {
        if (!this.open) return;
        this.req = null;
        setTimeout(() => this.#connect(), RECONNECT_MS);
    }

    #connect() {
        if (!this.open) return;
        const port = this.ports[this.turn++ % this.ports.length];
        const headers = { authorization: `Bearer ${this.token}`, accept: 'text/event-stream' };
        if (this.lastId !== null) headers['last-event-id'] = this.lastId;
        const req = http.get({ host: '127.0.0.1', port, path: '/v1/stream', headers });
        this.req = req;
        // Once per connection, however it ends: a replica killed mid-stream resets the socket,
        // which ends the response with an error and no 'end' (the 30-minute soak's followers all
        // stopped so at the first kill of the replica they were on).
        let ended = false;
        const again = () => {
            if (ended) return;
            ended = true;
            this.#again();
        };
        req.on('response', (res) => {
            res.on('close', again);
            if (res.statusCode !== 200) {
                res.resume();
                return;
            }
            this.connects++;
            let buf = '';
            res.setEncoding('utf8');
            res.on('data', (d) => {
                buf += d;
                let cut;
                while ((cut = buf.indexOf('\n\n')) >= 0) {
                    this.#frame(buf.slice(0, cut));
                    buf = buf.slice(cut + 2);
                }
            });
            res.on('error', () => {});
        });
        req.on('error', again);
    }

    #frame(block) {
        let event = 'message';
        let id = null;
        const data = [];
        for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'event') event = value;
            else if (field === 'id') id = value;
            else if (field === 'data') data.push(value);
        }
        if (event === 'reset') this.resets.push({ at: Date.now(), lastId: this.lastId });
        if (event === 'reminder') {
            let doc = null;
            try {
                doc = JSON.parse(data.join('\n'));
            } catch {
                doc = null;
            }
            this.got.push({ id: doc && doc.id, seq: Number(id), at: Date.now(), body: doc });
        }
        if (id !== null) this.lastId = id;
    }
}
