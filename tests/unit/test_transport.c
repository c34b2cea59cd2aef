/* test_transport.c -- core/transport.c on loopback sockets this test opens itself: bytes both ways
 * over plain TCP with keepalive on, a read that times out within its bound, a peer that closes, a
 * refused connect, a TLS handshake with a peer that speaks no TLS, and the TLS context's refusal of
 * files it cannot read, each with the reason in words. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "timefmt.h"
#include "transport.h"

#define IO_MS 200

/* A listening socket on 127.0.0.1 and its port. */
static int
listener(int *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 4) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        return -1;
    *port = ntohs(sa.sin_port);
    return fd;
}

static void
test_plain(void)
{
    char err[TRANSPORT_ERR_MAX] = "", buf[16];
    int port, on = 0;
    socklen_t len = sizeof on;
    int lfd = listener(&port);
    struct transport *t = transport_connect("127.0.0.1", port, NULL, IO_MS, IO_MS, err, sizeof err);
    int peer = accept(lfd, NULL, NULL);

    CHECK(t != NULL && peer >= 0, "connect: %s", err);
    if (t == NULL || peer < 0)
        return;
    CHECK(getsockopt(transport_fd(t), SOL_SOCKET, SO_KEEPALIVE, &on, &len) == 0 && on == 1,
          "SO_KEEPALIVE");
    CHECK(transport_write(t, "PING\r\n", 6) == 0, "write: %s", transport_error(t));
    CHECK(read(peer, buf, sizeof buf) == 6 && memcmp(buf, "PING\r\n", 6) == 0, "peer got PING");
    CHECK(transport_wait(t, 0) == 0, "nothing to read yet");
    int64_t t0 = timefmt_mono_ms();
    CHECK(transport_read(t, buf, sizeof buf) < 0 && strstr(transport_error(t), "timed out"),
          "a silent peer times the read out: %s", transport_error(t));
    int64_t took = timefmt_mono_ms() - t0;
    CHECK(took >= IO_MS - 5 && took < IO_MS + 1000, "timed out after %lld ms", (long long)took);
    CHECK(write(peer, "+PONG\r\n", 7) == 7 && transport_wait(t, IO_MS) == 1, "readable");
    CHECK(transport_read(t, buf, sizeof buf) == 7 && memcmp(buf, "+PONG\r\n", 7) == 0, "PONG");
    close(peer);
    CHECK(transport_read(t, buf, sizeof buf) < 0 && strstr(transport_error(t), "closed"),
          "closed: %s", transport_error(t));
    transport_close(t);
    close(lfd);
}

static void
test_refused(void)
{
    char err[TRANSPORT_ERR_MAX] = "";
    int port, lfd = listener(&port);

    close(lfd); /* nothing listens there now */
    CHECK(transport_connect("127.0.0.1", port, NULL, IO_MS, IO_MS, err, sizeof err) == NULL &&
              strstr(err, "cannot connect to 127.0.0.1:") != NULL && strstr(err, "refused") != NULL,
          "refused: %s", err);
    CHECK(transport_connect("no-such-host.invalid", 6379, NULL, IO_MS, IO_MS, err, sizeof err) ==
                  NULL &&
              strstr(err, "cannot resolve no-such-host.invalid") != NULL,
          "unresolvable: %s", err);
}

/* A peer that accepts and answers the ClientHello with bytes that are not TLS. */
static void
test_tls_garbage(void)
{
    char err[TRANSPORT_ERR_MAX] = "";
    int port, lfd = listener(&port);
    struct transport_tls *tls = transport_tls_new(NULL, NULL, NULL, err, sizeof err);
    pid_t child;

    CHECK(tls != NULL, "system CA context: %s", err);
    if (tls == NULL)
        return;
    /* The peer is a child process, so the handshake's blocking waits have someone to talk to. */
    child = fork();
    if (child == 0) {
        static const char junk[] = "-ERR not TLS\r\n";
        int peer = accept(lfd, NULL, NULL);
        if (peer >= 0 && write(peer, junk, sizeof junk - 1) > 0)
            sleep(1);
        _exit(0);
    }
    struct transport *t =
        transport_connect("localhost", port, tls, IO_MS * 5, IO_MS, err, sizeof err);
    CHECK(t == NULL && strstr(err, "TLS handshake") != NULL, "not TLS: %s", err);
    transport_close(t);
    transport_tls_free(tls);
    close(lfd);
    waitpid(child, NULL, 0);
}

static void
test_tls_files(void)
{
    char err[TRANSPORT_ERR_MAX] = "";

    CHECK(transport_tls_new("/nonexistent/ca.pem", NULL, NULL, err, sizeof err) == NULL &&
              strstr(err, "/nonexistent/ca.pem") != NULL,
          "a missing CA file is named: %s", err);
    CHECK(transport_tls_new(NULL, "/nonexistent/cert.pem", NULL, err, sizeof err) == NULL &&
              strstr(err, "/nonexistent/cert.pem") != NULL,
          "a missing client certificate is named: %s", err);
}

int
main(void)
{
    test_plain();
    test_refused();
    test_tls_garbage();
    test_tls_files();
    return check_summary("test_transport");
}
