/* redis_conn.c -- the connection of redis_conn.h: an output buffer of formatted commands, a hiredis
 * redisReader fed from the transport, and the transport. hiredis 0.14 cannot speak TLS over its
 * own socket; here it never touches one. */
#include "redis_conn.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport.h"

#define REDIS_CONN_OUT_MIN 4096         /* first size of the output buffer; it doubles from there */
#define REDIS_CONN_READONLY "READONLY " /* how a replica refuses a write */

struct redis_conn {
    struct transport *t;
    redisReader *reader;
    char *out; /* formatted commands not sent yet */
    size_t out_len, out_cap;
    int readonly; /* a READONLY error reply came: the node is a replica now */
    char err[TRANSPORT_ERR_MAX];
};

struct redis_conn *
redis_conn_open(const char *host, int port, const struct transport_tls *tls, int connect_ms,
                int io_ms, char *err, size_t errlen)
{
    struct redis_conn *c = calloc(1, sizeof *c);

    if (c == NULL || (c->reader = redisReaderCreate()) == NULL) {
        snprintf(err, errlen, "out of memory");
        redis_conn_free(c);
        return NULL;
    }
    c->t = transport_connect(host, port, tls, connect_ms, io_ms, err, errlen);
    if (c->t == NULL) {
        redis_conn_free(c);
        return NULL;
    }
    return c;
}

void
redis_conn_free(struct redis_conn *c)
{
    if (c == NULL)
        return;
    transport_close(c->t);
    if (c->reader != NULL)
        redisReaderFree(c->reader);
    free(c->out);
    free(c);
}

static int
fail(struct redis_conn *c, const char *why)
{
    snprintf(c->err, sizeof c->err, "%s", why);
    return -1;
}

static int
reserve(struct redis_conn *c, size_t more)
{
    size_t cap = c->out_cap ? c->out_cap : REDIS_CONN_OUT_MIN;
    char *p;

    if (c->out_len + more <= c->out_cap)
        return 0;
    while (cap < c->out_len + more)
        cap *= 2;
    p = realloc(c->out, cap);
    if (p == NULL)
        return fail(c, "out of memory");
    c->out = p;
    c->out_cap = cap;
    return 0;
}

int
redis_conn_append(struct redis_conn *c, int argc, const char **argv, const size_t *lens)
{
    char *cmd = NULL;
    int n = redisFormatCommandArgv(&cmd, argc, argv, lens);

    if (n < 0 || reserve(c, (size_t)n) != 0) {
        redisFreeCommand(cmd);
        return fail(c, "out of memory");
    }
    memcpy(c->out + c->out_len, cmd, (size_t)n);
    c->out_len += (size_t)n;
    redisFreeCommand(cmd);
    return 0;
}

int
redis_conn_flush(struct redis_conn *c)
{
    if (c->out_len == 0)
        return 0;
    if (transport_write(c->t, c->out, c->out_len) != 0)
        return fail(c, transport_error(c->t));
    c->out_len = 0;
    return 0;
}

int
redis_conn_buffered(struct redis_conn *c, struct redisReply **out)
{
    void *r = NULL;

    *out = NULL;
    if (redisReaderGetReply(c->reader, &r) != REDIS_OK)
        return fail(c, c->reader->errstr);
    *out = r;
    if (r != NULL && (*out)->type == REDIS_REPLY_ERROR &&
        strncmp((*out)->str, REDIS_CONN_READONLY, strlen(REDIS_CONN_READONLY)) == 0)
        c->readonly = 1;
    return 0;
}

int
redis_conn_readonly(const struct redis_conn *c)
{
    return c->readonly;
}

int
redis_conn_drain(struct redis_conn *c, redis_conn_reply_fn fn, void *arg)
{
    struct redisReply *r;

    for (;;) {
        if (redis_conn_buffered(c, &r) != 0)
            return -1;
        if (r == NULL)
            return 0;
        fn(arg, r);
        freeReplyObject(r);
    }
}

int
redis_conn_fill(struct redis_conn *c)
{
    char buf[TRANSPORT_READ_CHUNK];
    ssize_t n = transport_read(c->t, buf, sizeof buf);

    if (n < 0)
        return fail(c, transport_error(c->t));
    if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK)
        return fail(c, c->reader->errstr);
    return 0;
}

int
redis_conn_reply(struct redis_conn *c, struct redisReply **out)
{
    if (redis_conn_flush(c) != 0)
        return -1;
    for (;;) {
        if (redis_conn_buffered(c, out) != 0)
            return -1;
        if (*out != NULL)
            return 0;
        if (redis_conn_fill(c) != 0)
            return -1;
    }
}

struct redisReply *
redis_conn_command(struct redis_conn *c, int argc, const char **argv, const size_t *lens)
{
    struct redisReply *r = NULL;

    if (redis_conn_append(c, argc, argv, lens) != 0 || redis_conn_reply(c, &r) != 0)
        return NULL;
    return r;
}

int
redis_conn_wait(struct redis_conn *c, int wait_ms)
{
    int rc = transport_wait(c->t, wait_ms);

    if (rc < 0)
        fail(c, "poll failed");
    return rc;
}

const char *
redis_conn_error(const struct redis_conn *c)
{
    return c->err;
}

int
redis_conn_fd(const struct redis_conn *c)
{
    return transport_fd(c->t);
}
