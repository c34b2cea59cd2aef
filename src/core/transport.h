/* transport.h -- a client byte stream tocsin owns: plain TCP or TLS (OpenSSL, 1.2 at least, the
 * peer's certificate and name verified, SNI sent), with connect and I/O timeouts and TCP keepalive.
 * One interface for both, so the code above it (mirror/redis_conn.c) has one path. Calls block
 * the caller, each bounded by its deadline (poll() on a non-blocking socket): a read or write that
 * times out fails, and the connection is then to be closed (as a timed-out hiredis context was). A
 * struct transport belongs to one thread; a struct transport_tls is read-only once made and may be
 * shared. */
#ifndef TOCSIN_TRANSPORT_H
#define TOCSIN_TRANSPORT_H

#include <stddef.h>
#include <sys/types.h>

#define TRANSPORT_ERR_MAX 256
/* TCP keepalive: idle this long, then probes (as hiredis's redisEnableKeepAlive did), so a
 * reader whose peer vanished without a reset learns it within about half a minute. */
#define TRANSPORT_KEEPALIVE_IDLE_S 15
#define TRANSPORT_KEEPALIVE_COUNT 3
/* Bytes asked of one read: one TLS record's payload at most, so a read leaves nothing of a record
 * decrypted but unread inside OpenSSL that poll() on the socket could not see. */
#define TRANSPORT_READ_CHUNK 16384

struct transport_tls;
struct transport;

/* A TLS client context: trust anchors from ca_file (NULL = the system's certificate directory),
 * and a client certificate chain and key when cert_file is given (key_file NULL = the key is in
 * cert_file). NULL with the reason in err (names the file and OpenSSL's words). */
struct transport_tls *transport_tls_new(const char *ca_file, const char *cert_file,
                                        const char *key_file, char *err, size_t errlen);
void transport_tls_free(struct transport_tls *tls);

/* Connects to host:port within connect_ms (name resolution included), then, with tls, does the
 * TLS handshake within connect_ms per step and verifies the server's certificate for host (a DNS
 * name or an IP address). I/O afterwards times out after io_ms. NULL with the reason in err: the
 * socket error, or OpenSSL's verify result as text ("certificate verify failed: hostname
 * mismatch"). */
struct transport *transport_connect(const char *host, int port, const struct transport_tls *tls,
                                    int connect_ms, int io_ms, char *err, size_t errlen);
void transport_close(struct transport *t);

/* Writes all n bytes. 0, or -1 (error text in transport_error). */
int transport_write(struct transport *t, const void *buf, size_t n);
/* Reads what is there, waiting at most io_ms for the first byte. > 0 bytes, or -1 (closed by the
 * peer, timeout or error; the text in transport_error). */
ssize_t transport_read(struct transport *t, void *buf, size_t n);
/* Waits up to wait_ms until a read would not block: 1 readable (bytes in the socket or already
 * decrypted by TLS), 0 not yet, -1 error. For a reader that must also watch a stop flag. */
int transport_wait(struct transport *t, int wait_ms);
/* The socket (for socket options; reads and writes go through the calls above). */
int transport_fd(const struct transport *t);
/* The last error's text ("" when none). */
const char *transport_error(const struct transport *t);

#endif
