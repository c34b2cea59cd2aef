/* transport.c -- the byte stream of transport.h. The socket is non-blocking from the start and
 * every wait is a poll() against a deadline, so a connect, a handshake step, a read or a write is
 * bounded by its own timeout and not by the sum of syscalls; TLS's WANT_READ/WANT_WRITE are the
 * same waits. OpenSSL lives here and in crypto*.c only. */
#include "transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "timefmt.h"

#define TRANSPORT_PORT_MAX 8 /* "65535" and NUL */

struct transport_tls {
    SSL_CTX *ctx;
};

struct transport {
    int fd;
    SSL *ssl; /* NULL = plain TCP */
    int io_ms;
    char err[TRANSPORT_ERR_MAX];
};

/* OpenSSL's newest error as text, or fallback when its queue is empty. Clears the queue so a
 * later failure does not report an old cause. */
static void
ssl_why(char *err, size_t errlen, const char *what, const char *fallback)
{
    unsigned long e = ERR_get_error();
    int n = snprintf(err, errlen, "%s: ", what);

    /* The cause is written in place after the prefix, so a long prefix truncates the cause
     * instead of overflowing a second buffer. */
    if (n >= 0 && (size_t)n < errlen) {
        if (e == 0)
            snprintf(err + n, errlen - (size_t)n, "%s", fallback);
        else
            ERR_error_string_n(e, err + n, errlen - (size_t)n);
    }
    ERR_clear_error();
}

static int
load_client_cert(SSL_CTX *ctx, const char *cert_file, const char *key_file, char *err,
                 size_t errlen)
{
    const char *key = key_file != NULL ? key_file : cert_file;

    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        ssl_why(err, errlen, cert_file, "cannot read the client certificate");
        return -1;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        ssl_why(err, errlen, key, "cannot read the client key");
        return -1;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ssl_why(err, errlen, key, "the key does not match the client certificate");
        return -1;
    }
    return 0;
}

struct transport_tls *
transport_tls_new(const char *ca_file, const char *cert_file, const char *key_file, char *err,
                  size_t errlen)
{
    struct transport_tls *tls = calloc(1, sizeof *tls);
    int ok;

    if (tls == NULL || (tls->ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
        snprintf(err, errlen, "out of memory for a TLS context");
        transport_tls_free(tls);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(tls->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(tls->ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(tls->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* Without a CA file: the system's hashed certificate directory, looked up per handshake rather
     * than loaded whole into every context. */
    ok = ca_file != NULL ? SSL_CTX_load_verify_locations(tls->ctx, ca_file, NULL)
                         : SSL_CTX_set_default_verify_dir(tls->ctx);
    if (ok != 1) {
        ssl_why(err, errlen, ca_file != NULL ? ca_file : "the system CA directory",
                "cannot read the CA certificates");
    } else if (cert_file == NULL ||
               load_client_cert(tls->ctx, cert_file, key_file, err, errlen) == 0) {
        return tls;
    }
    transport_tls_free(tls);
    return NULL;
}

void
transport_tls_free(struct transport_tls *tls)
{
    if (tls == NULL)
        return;
    SSL_CTX_free(tls->ctx);
    free(tls);
}

/* Waits until fd is ready for events or the deadline (monotonic ms) passes: 1, 0 on timeout. */
static int
wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int64_t left = deadline_ms - timefmt_mono_ms();
        int rc;

        if (left <= 0)
            return 0;
        rc = poll(&p, 1, (int)left);
        if (rc > 0)
            return 1;
        if (rc == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

static void
keepalive(int fd)
{
    int on = 1, idle = TRANSPORT_KEEPALIVE_IDLE_S, intvl = TRANSPORT_KEEPALIVE_IDLE_S / 3,
        cnt = TRANSPORT_KEEPALIVE_COUNT;

    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

/* One address: a non-blocking connect finished within the deadline. The socket, or -1 with
 * errno set. */
static int
connect_one(const struct addrinfo *ai, int64_t deadline_ms)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    int soerr = 0;
    socklen_t len = sizeof soerr;

    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
        return fd;
    if (errno == EINPROGRESS) {
        int rc = wait_fd(fd, POLLOUT, deadline_ms);
        if (rc == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0)
            return fd;
        errno = rc == 0 ? ETIMEDOUT : soerr != 0 ? soerr : errno;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

static int
tcp_connect(const char *host, int port, int64_t deadline_ms, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    char service[TRANSPORT_PORT_MAX];
    int fd = -1, rc;

    snprintf(service, sizeof service, "%d", port);
    rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    for (const struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next)
        fd = connect_one(ai, deadline_ms);
    if (fd < 0)
        snprintf(err, errlen, "cannot connect to %s:%d: %s", host, port, strerror(errno));
    freeaddrinfo(res);
    if (fd >= 0)
        keepalive(fd);
    return fd;
}

/* After an SSL call returned rc <= 0: waits for what it wants within the deadline. 1 to retry,
 * 0 for a clean close by the peer, -1 with the reason in t->err. */
static int
ssl_retry(struct transport *t, int rc, int64_t deadline_ms, const char *what)
{
    int e = SSL_get_error(t->ssl, rc);
    int ready;

    switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        ready = wait_fd(t->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline_ms);
        if (ready == 1)
            return 1;
        snprintf(t->err, sizeof t->err, "%s: %s", what, ready == 0 ? "timed out" : strerror(errno));
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        snprintf(t->err, sizeof t->err, "%s: closed by the peer", what);
        return 0;
    case SSL_ERROR_SYSCALL:
        ssl_why(t->err, sizeof t->err, what,
                errno != 0 ? strerror(errno) : "the peer closed the connection");
        return -1;
    default:
        ssl_why(t->err, sizeof t->err, what, "TLS error");
        return -1;
    }
}

/* The name the certificate must carry: an IP address literal is checked against the
 * certificate's IP entries and sent without SNI (RFC 6066 allows only DNS names there). */
static int
set_peer_name(SSL *ssl, const char *host)
{
    unsigned char addr[sizeof(struct in6_addr)];

    if (inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : -1;
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (SSL_set1_host(ssl, host) != 1 || SSL_set_tlsext_host_name(ssl, host) != 1)
        return -1;
    return 0;
}

static int
handshake(struct transport *t, const struct transport_tls *tls, const char *host,
          int64_t deadline_ms)
{
    int rc;

    t->ssl = SSL_new(tls->ctx);
    if (t->ssl == NULL || SSL_set_fd(t->ssl, t->fd) != 1 || set_peer_name(t->ssl, host) != 0) {
        ssl_why(t->err, sizeof t->err, "TLS setup", "cannot set the peer name");
        return -1;
    }
    while ((rc = SSL_connect(t->ssl)) != 1) {
        long vr = SSL_get_verify_result(t->ssl);

        if (vr != X509_V_OK) {
            snprintf(t->err, sizeof t->err, "TLS certificate verify failed for %s: %s", host,
                     X509_verify_cert_error_string(vr));
            ERR_clear_error();
            return -1;
        }
        if (ssl_retry(t, rc, deadline_ms, "TLS handshake") != 1)
            return -1;
    }
    return 0;
}

struct transport *
transport_connect(const char *host, int port, const struct transport_tls *tls, int connect_ms,
                  int io_ms, char *err, size_t errlen)
{
    int64_t deadline_ms = timefmt_mono_ms() + connect_ms;
    struct transport *t = calloc(1, sizeof *t);

    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->io_ms = io_ms;
    t->fd = tcp_connect(host, port, deadline_ms, err, errlen);
    if (t->fd < 0) {
        free(t);
        return NULL;
    }
    if (tls != NULL && handshake(t, tls, host, deadline_ms) != 0) {
        snprintf(err, errlen, "%s", t->err);
        transport_close(t);
        return NULL;
    }
    return t;
}

void
transport_close(struct transport *t)
{
    if (t == NULL)
        return;
    SSL_free(t->ssl); /* no close_notify: the peer learns of the close from the TCP FIN */
    close(t->fd);
    free(t);
}

static int
plain_write(struct transport *t, const char *p, size_t n, int64_t deadline_ms)
{
    while (n > 0) {
        ssize_t w = send(t->fd, p, n, MSG_NOSIGNAL);

        if (w > 0) {
            p += w, n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int ready = wait_fd(t->fd, POLLOUT, deadline_ms);
            if (ready == 1)
                continue;
            errno = ready == 0 ? ETIMEDOUT : errno;
        }
        snprintf(t->err, sizeof t->err, "write: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static int
tls_write(struct transport *t, const char *p, size_t n, int64_t deadline_ms)
{
    while (n > 0) {
        int w = SSL_write(t->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);

        if (w > 0)
            p += w, n -= (size_t)w;
        else if (ssl_retry(t, w, deadline_ms, "TLS write") != 1)
            return -1;
    }
    return 0;
}

int
transport_write(struct transport *t, const void *buf, size_t n)
{
    int64_t deadline_ms = timefmt_mono_ms() + t->io_ms;

    return t->ssl != NULL ? tls_write(t, buf, n, deadline_ms) : plain_write(t, buf, n, deadline_ms);
}

static ssize_t
plain_read(struct transport *t, void *buf, size_t n, int64_t deadline_ms)
{
    for (;;) {
        ssize_t r = recv(t->fd, buf, n, 0);

        if (r > 0)
            return r;
        if (r == 0) {
            snprintf(t->err, sizeof t->err, "read: closed by the peer");
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int ready = wait_fd(t->fd, POLLIN, deadline_ms);
            if (ready == 1)
                continue;
            errno = ready == 0 ? ETIMEDOUT : errno;
        }
        snprintf(t->err, sizeof t->err, "read: %s", strerror(errno));
        return -1;
    }
}

ssize_t
transport_read(struct transport *t, void *buf, size_t n)
{
    int64_t deadline_ms = timefmt_mono_ms() + t->io_ms;

    if (n > TRANSPORT_READ_CHUNK)
        n = TRANSPORT_READ_CHUNK;
    if (t->ssl == NULL)
        return plain_read(t, buf, n, deadline_ms);
    for (;;) {
        int r = SSL_read(t->ssl, buf, (int)n);

        if (r > 0)
            return r;
        if (ssl_retry(t, r, deadline_ms, "TLS read") != 1)
            return -1;
    }
}

int
transport_wait(struct transport *t, int wait_ms)
{
    int64_t deadline_ms = timefmt_mono_ms() + wait_ms;
    unsigned char b;

    for (;;) {
        if (t->ssl != NULL && SSL_has_pending(t->ssl))
            return 1;
        int ready = wait_fd(t->fd, POLLIN, deadline_ms);
        if (ready != 1 || t->ssl == NULL)
            return ready;
        /* Readable socket, but a TLS 1.3 session ticket or a key update carries no data: peek
         * without blocking, so that only application data (or an error, for the read to report)
         * ends the wait. */
        int r = SSL_peek(t->ssl, &b, 1);
        if (r > 0 || SSL_get_error(t->ssl, r) != SSL_ERROR_WANT_READ)
            return 1;
    }
}

const char *
transport_error(const struct transport *t)
{
    return t->err;
}

int
transport_fd(const struct transport *t)
{
    return t->fd;
}
