// bench/stream_client.mjs -- a lean client of GET /v1/stream for bench/stream.mjs: one object per
// subscriber, which may go through several connections (cut, resumed) and keeps what it received
// across them. It speaks HTTP/1.1 over a plain socket and parses the chunked body and the SSE
// frames incrementally on Buffers: the receipt time is taken first thing in the socket's data
// callback, and a reminder's data (kilobytes, a meeting with its participants) is never decoded,
// only searched for its id. Ten thousand of these in one Node process are cheap enough that the
// bench measures the server, not itself (bench/stream.mjs prints the client's own CPU time).
import net from 'node:net';

// Wall-clock milliseconds with sub-millisecond resolution, comparable with PostgreSQL's now()
// on the same machine.
export const clock = () => performance.timeOrigin + performance.now();

const HEAD_END = Buffer.from('\r\n\r\n');
const FRAME_END = Buffer.from('\n\n');
const REM_ID = Buffer.from('"id":"rem_');
const HEAD_MAX = 16384; // a response head longer than this is a protocol error here
const READ_BUF = 65536; // one socket read at most

// Every socket reads into this one buffer (net's onread): reads are handled one at a time on the
// event loop, and whatever must outlive a read is copied out of it.
const readBuf = Buffer.allocUnsafe(READ_BUF);

export class StreamClient {
    // opts: { port, token, sub, tag } -- tag is the scenario's own (e.g. the replica index).
    constructor(opts) {
        Object.assign(this, opts);
        this.cursor = null;       // the last SSE id seen (hello, reminder, reset or id-only block)
        this.got = new Map();     // reminder seq -> first receipt time
        this.remOf = new Map();   // reminder seq -> reminder id from the body (when wantIds)
        this.viaReplay = new Set(); // reminder seqs first received in a resume's backlog
        this.wantIds = false;
        this.dups = 0;            // reminder seqs received more than once
        this.disorder = 0;        // reminder seqs not above the previous one on a connection
        this.replayed = 0;        // reminders received as a resume's backlog
        this.hellos = [];         // { at, resumed, replayed, seq, conn }
        this.resets = [];         // data of reset events
        this.reauths = 0;
        this.refused = [];        // non-200 answers: { status, retryAfter }
        this.drops = 0;           // connections that ended without being cut by the bench
        this.conns = 0;           // connections opened
        this.keep = false;        // reconnect (with the cursor) when a connection ends
        this.retryMs = 3000;      // the server's retry: field
        this.sock = null;
        this.helloWaiters = [];
        this.onReminder = null;   // (client, seq, at) on each first receipt
    }

    // Opens a connection to port (default: the last one), resuming from the cursor if any.
    connect(port = this.port) {
        this.port = port;
        this.conns++;
        this.sentAt = clock();
        this.phase = 'head';
        this.head = null;
        this.chunked = false;
        this.cleft = 0;
        this.cskip = 0;
        this.sizeLine = '';
        this.pend = null;
        this.scanned = 0;
        this.lastSeqConn = -1;
        this.replayLeft = 0;
        const sock = net.connect({
            host: '127.0.0.1', port, noDelay: true,
            onread: {
                buffer: readBuf,
                callback: (n, buf) => {
                    const at = clock();
                    if (this.sock === sock) {
                        this.onData(buf.subarray(0, n), at);
                    }
                },
            },
        });
        this.sock = sock;
        sock.on('error', () => {});
        sock.on('close', () => this.onClose(sock));
        sock.write(`GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${this.token}\r\n` +
            'Accept: text/event-stream\r\nCache-Control: no-cache\r\n' +
            (this.cursor !== null ? `Last-Event-ID: ${this.cursor}\r\n` : '') + '\r\n');
    }

    // Closes the connection abruptly, as a network cut would; no reconnect follows by itself.
    cut() {
        const sock = this.sock;
        this.sock = null;
        if (sock) {
            sock.destroy();
        }
    }

    // A promise for the next hello (or rejection after ms).
    whenHello(ms) {
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`no hello within ${ms} ms`)), ms);
            this.helloWaiters.push((h) => {
                clearTimeout(timer);
                resolve(h);
            });
        });
    }

    onClose(sock) {
        if (this.sock === sock) {
            this.lost(); // not cut by the bench, nor replaced
        }
    }

    // The connection ended without the bench cutting it (the server closed it or finished the
    // response): counted, and reconnected after the server's retry: delay when the client keeps.
    lost() {
        const sock = this.sock;
        this.sock = null;
        sock.destroy();
        this.drops++;
        this.retryAfter(this.retryMs);
    }

    retryAfter(ms) {
        if (this.keep) {
            setTimeout(() => {
                if (this.keep && this.sock === null) {
                    this.connect();
                }
            }, ms);
        }
    }

    // b is only valid during the call (the shared read buffer).
    onData(b, at) {
        if (this.phase === 'head') {
            this.head = this.head ? Buffer.concat([this.head, b]) : Buffer.from(b);
            const end = this.head.indexOf(HEAD_END);
            if (end < 0) {
                if (this.head.length > HEAD_MAX) {
                    this.refuse(0, 0);
                }
                return;
            }
            const text = this.head.toString('latin1', 0, end);
            const rest = this.head.subarray(end + 4);
            this.head = null;
            const status = Number(text.slice(9, 12));
            if (status !== 200) {
                const ra = /\r\nretry-after:\s*(\d+)/i.exec(text);
                this.refuse(status, ra ? Number(ra[1]) : 0);
                return;
            }
            this.chunked = /\r\ntransfer-encoding:\s*chunked/i.test(text);
            this.phase = 'body';
            b = rest;
        }
        if (this.chunked) {
            this.feedChunked(b, at);
        } else {
            this.feedSse([b], at);
        }
    }

    // A refused stream (429, 503): the connection is dropped and, when the client keeps
    // reconnecting, tried again after Retry-After, as a browser's EventSource would not but the
    // tocsin client module does.
    refuse(status, retryAfterS) {
        this.refused.push({ status, retryAfter: retryAfterS });
        const sock = this.sock;
        this.sock = null;
        sock.destroy();
        this.retryAfter(Math.max(retryAfterS * 1000, 100));
    }

    // Decodes the chunked body of one read and feeds its data to the SSE parser in one go.
    feedChunked(b, at) {
        const segs = [];
        let i = 0;
        while (i < b.length) {
            if (this.cleft > 0) {
                const n = Math.min(this.cleft, b.length - i);
                segs.push(b.subarray(i, i + n));
                i += n;
                this.cleft -= n;
                if (this.cleft === 0) {
                    this.cskip = 2; // the CRLF after a chunk's data
                }
            } else if (this.cskip > 0) {
                const n = Math.min(this.cskip, b.length - i);
                i += n;
                this.cskip -= n;
            } else {
                const nl = b.indexOf(10, i);
                if (nl < 0) {
                    this.sizeLine += b.toString('latin1', i);
                    break;
                }
                const size = parseInt(this.sizeLine + b.toString('latin1', i, nl), 16);
                this.sizeLine = '';
                i = nl + 1;
                if (!(size >= 0)) {
                    throw new Error('bad chunk size from the server');
                }
                if (size === 0) {
                    this.feedSse(segs, at);
                    this.lost(); // the last chunk: the server ended the stream
                    return;
                }
                this.cleft = size;
            }
        }
        this.feedSse(segs, at);
    }

    // segs: Buffers of one read (only valid during the call).
    feedSse(segs, at) {
        if (segs.length === 0) {
            return;
        }
        let work;
        if (this.pend === null && segs.length === 1) {
            work = segs[0];
        } else {
            work = Buffer.concat(this.pend === null ? segs : [this.pend, ...segs]);
        }
        let pos = 0;
        let from = this.scanned;
        for (;;) {
            const end = work.indexOf(FRAME_END, from);
            if (end < 0) {
                break;
            }
            this.frame(work, pos, end + 1, at); // the frame's lines, each ending with LF
            pos = end + 2;
            from = pos;
        }
        if (pos >= work.length) {
            this.pend = null;
            this.scanned = 0;
        } else {
            this.pend = Buffer.from(work.subarray(pos)); // a copy: work may be the read buffer
            this.scanned = Math.max(0, this.pend.length - 1);
        }
    }

    // One frame: work[start, end) holds its lines. Only id, event and the head of data matter.
    frame(work, start, end, at) {
        let id = null, event = null, dataAt = -1, dataEnd = -1, p = start;
        while (p < end) {
            const nl = work.indexOf(10, p);
            const lineEnd = nl < 0 || nl > end ? end : nl;
            const c = work[p];
            if (c === 0x69 && work[p + 1] === 0x64 && work[p + 2] === 0x3a) { // "id:"
                id = work.toString('latin1', p + 4, lineEnd);
            } else if (c === 0x65 && work.toString('latin1', p, p + 6) === 'event:') {
                event = work.toString('latin1', p + 7, lineEnd);
            } else if (c === 0x64 && dataAt < 0 && work.toString('latin1', p, p + 5) === 'data:') {
                dataAt = p + 6;
                dataEnd = lineEnd;
            } else if (c === 0x72 && work.toString('latin1', p, p + 6) === 'retry:') {
                this.retryMs = Number(work.toString('latin1', p + 7, lineEnd));
            }
            p = lineEnd + 1;
        }
        if (id !== null) {
            this.cursor = id;
        }
        if (event === 'reminder') {
            this.reminder(Number(id), at, work, dataAt, dataEnd);
        } else if (event === 'hello') {
            const h = JSON.parse(work.toString('utf8', dataAt, dataEnd));
            const rec = { at, resumed: h.resumed, replayed: h.replayed ?? 0, seq: h.seq, conn: this.conns, openMs: at - this.sentAt };
            this.hellos.push(rec);
            this.replayLeft = rec.replayed;
            const waiters = this.helloWaiters;
            this.helloWaiters = [];
            for (const w of waiters) {
                w(rec);
            }
        } else if (event === 'reset') {
            this.resets.push(work.toString('utf8', dataAt, dataEnd));
        } else if (event === 'reauth') {
            this.reauths++;
        }
    }

    reminder(seq, at, work, dataAt, dataEnd) {
        if (seq <= this.lastSeqConn) {
            this.disorder++;
        }
        this.lastSeqConn = seq;
        const replay = this.replayLeft > 0;
        if (replay) {
            this.replayLeft--;
            this.replayed++;
        }
        if (this.got.has(seq)) {
            this.dups++;
            return;
        }
        this.got.set(seq, at);
        if (replay) {
            this.viaReplay.add(seq);
        }
        if (this.wantIds && dataAt >= 0) {
            const k = work.indexOf(REM_ID, dataAt);
            if (k >= 0 && k < dataEnd) {
                const s = work.toString('latin1', k + REM_ID.length, Math.min(k + REM_ID.length + 24, dataEnd));
                this.remOf.set(seq, Number(s.slice(0, s.indexOf('_'))));
            }
        }
        if (this.onReminder) {
            this.onReminder(this, seq, at);
        }
    }
}

// Opens every client (at most `window` connecting at once) and resolves when each has its hello;
// rejects with the first that has none within helloMs.
export async function openAll(clients, { window = 200, helloMs = 60000 } = {}) {
    let next = 0;
    const worker = async () => {
        while (next < clients.length) {
            const c = clients[next++];
            const hello = c.whenHello(helloMs);
            c.connect();
            await hello;
        }
    };
    await Promise.all(Array.from({ length: Math.min(window, clients.length) }, worker));
}
