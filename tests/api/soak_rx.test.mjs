// soak_rx.test.mjs -- the soak's stream follower (bench/soak_rx.mjs) resumes however a stream
// ends: a connection reset mid-stream (a replica killed) as well as a clean end. No tocsin: a
// small SSE server here, on a port the system picks.
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from './harness.mjs';
import { StreamFollower } from '../../bench/soak_rx.mjs';

const frame = (seq, id) => `id: ${seq}\nevent: reminder\ndata: ${JSON.stringify({ id })}\n\n`;

test('a stream reset mid-response (a replica killed) is resumed with its last id', async () => {
    const seen = [];
    const srv = http.createServer((req, res) => {
        seen.push(req.headers['last-event-id'] ?? null);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        if (seen.length === 1) {
            res.write(frame(1, 'rem_1_1'), () => setTimeout(() => req.socket.destroy(), 50));
            return;
        }
        res.write(frame(2, 'rem_2_2'));
    });
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    const f = new StreamFollower([srv.address().port], 'token', 'p1').start();
    try {
        const end = Date.now() + 10000;
        while (f.got.length < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual(f.got.map((g) => g.id), ['rem_1_1', 'rem_2_2']);
        assert.deepEqual(seen, [null, '1']);
        assert.equal(f.connects, 2);
    } finally {
        f.close();
        srv.closeAllConnections();
        await new Promise((r) => srv.close(r));
    }
});
