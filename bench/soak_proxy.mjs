// bench/soak_proxy.mjs -- the soak's TCP fault proxy (bench/soak.sh): it sits between the
// replicas and PostgreSQL, PgBouncer and Redis, forwards bytes both ways, and on command delays
// every chunk, stalls (holds every byte until the stall ends) or cuts every open connection.
// One FaultProxy per upstream; listens on 127.0.0.1 only.
import net from 'node:net';

export class FaultProxy {
    constructor(name, listenPort, upstreamPort) {
        this.name = name;
        this.listenPort = listenPort;
        this.upstreamPort = upstreamPort;
        this.delayMs = 0;
        this.stalled = null; // a promise that resolves when the stall ends, or null
        this.conns = new Set();
        this.server = net.createServer((c) => this.#accept(c));
    }

    start() {
        return new Promise((resolve, reject) => {
            this.server.once('error', reject);
            this.server.listen(this.listenPort, '127.0.0.1', () => resolve(this));
        });
    }

    stop() {
        this.cut();
        return new Promise((r) => this.server.close(() => r()));
    }

    // Every chunk waits ms before it is passed on, until delay(0).
    delay(ms) {
        this.delayMs = ms;
    }

    // Nothing passes (both ways, new connections too) for ms; the bytes wait, none is lost.
    stall(ms) {
        let end;
        this.stalled = new Promise((r) => { end = r; });
        setTimeout(() => { this.stalled = null; end(); }, ms);
    }

    // Every open connection is reset, both sides.
    cut() {
        for (const pair of this.conns) {
            pair.client.destroy();
            pair.upstream.destroy();
        }
        this.conns.clear();
    }

    #accept(client) {
        const upstream = net.connect(this.upstreamPort, '127.0.0.1');
        const pair = { client, upstream };
        this.conns.add(pair);
        const drop = () => {
            this.conns.delete(pair);
            client.destroy();
            upstream.destroy();
        };
        client.on('error', drop).on('close', drop);
        upstream.on('error', drop).on('close', drop);
        this.#pipe(client, upstream);
        this.#pipe(upstream, client);
    }

    // Chunks keep their order: each waits for the one before it (a chain of promises).
    #pipe(from, to) {
        let chain = Promise.resolve();
        from.on('data', (chunk) => {
            const delayMs = this.delayMs;
            chain = chain.then(async () => {
                if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
                while (this.stalled) await this.stalled;
                if (!to.destroyed) to.write(chunk);
            });
        });
    }
}
