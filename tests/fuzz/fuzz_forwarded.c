/* fuzz_forwarded.c -- libFuzzer target for forwarded.c: the input's first line is parsed as
 * TOCSIN_TRUSTED_PROXIES (it must not crash; when accepted, every network in it must hold its
 * own address), the rest, split at LF into header lines, is walked as X-Forwarded-For from a
 * trusted peer, and the answer is held against a second reading of the rule: every element split
 * out left to right first, then read from the right end; the client is the first address outside
 * the trusted networks, the left-most when all are inside, and the peer when an element reached
 * is no bare address, past FORWARDED_HOPS_MAX of them, or at the left end of a cut list (the
 * input's first byte decides the cut). Built by tests/fuzz/run.sh. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forwarded.h"

#define INPUT_MAX 4096
#define ELEMENTS_MAX (INPUT_MAX + 1) /* at most one more than the commas and line ends */
#define ADDR_TEXT_MAX 45             /* INET6_ADDRSTRLEN - 1 */
#define TRUSTED "10.0.0.0/8, fd00::/8, 192.0.2.1"
#define PEER "10.255.0.1"

static void
check(bool ok)
{
    if (!ok)
        abort();
}

struct element {
    bool ok;
    struct sockaddr_storage sa;
};

static void
to_sockaddr(const char *text, struct sockaddr_storage *ss, bool *ok)
{
    struct sockaddr_in *in = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

    memset(ss, 0, sizeof *ss);
    *ok = true;
    if (inet_pton(AF_INET, text, &in->sin_addr) == 1)
        in->sin_family = AF_INET;
    else if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1)
        in6->sin6_family = AF_INET6;
    else
        *ok = false;
}

/* One element text[a, b): blanks (space, tab) stripped at both ends, then a bare address. */
static void
element_of(const char *text, size_t a, size_t b, struct element *e)
{
    char buf[ADDR_TEXT_MAX + 1];

    while (a < b && (text[a] == ' ' || text[a] == '\t'))
        a++;
    while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t'))
        b--;
    e->ok = b > a && b - a <= ADDR_TEXT_MAX;
    if (!e->ok)
        return;
    memcpy(buf, text + a, b - a);
    buf[b - a] = '\0';
    to_sockaddr(buf, &e->sa, &e->ok);
}

/* Every element of the lines, left to right. */
static size_t
split(char *const *lines, size_t n, struct element *out)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        size_t a = 0, len = strlen(lines[i]);
        for (size_t j = 0; j <= len; j++)
            if (j == len || lines[i][j] == ',') {
                element_of(lines[i], a, j, &out[k++]);
                a = j + 1;
            }
    }
    return k;
}

static bool
same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return false;
    if (a->ss_family == AF_INET)
        return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                      &((const struct sockaddr_in *)b)->sin_addr, 4) == 0;
    return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                  &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
}

/* The reference reading: the index of the client's element, or -1 for the peer. */
static long
reference(const struct forwarded_proxies *p, const struct element *e, size_t k, bool cut)
{
    for (size_t hops = 1; hops <= k; hops++) {
        const struct element *x = &e[k - hops];
        if (hops > FORWARDED_HOPS_MAX || !x->ok)
            return -1;
        if (!forwarded_trusted(p, (const struct sockaddr *)&x->sa))
            return (long)(k - hops);
    }
    return cut ? -1 : 0;
}

/* Whatever list the input holds: accepted ones must contain each network's own address. */
static void
parse_any(const char *list)
{
    struct forwarded_proxies p;
    char why[256];

    if (forwarded_proxies_parse(list, &p, why, sizeof why) != 0)
        return;
    check(p.nets.n_names == 0 && !p.nets.all);
    for (size_t i = 0; i < p.nets.n_nets; i++) {
        struct sockaddr_storage ss = {0};
        const struct netguard_net *net = &p.nets.nets[i];
        if (net->family == AF_INET) {
            ((struct sockaddr_in *)&ss)->sin_family = AF_INET;
            memcpy(&((struct sockaddr_in *)&ss)->sin_addr, net->addr, 4);
        } else {
            ((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
            memcpy(&((struct sockaddr_in6 *)&ss)->sin6_addr, net->addr, 16);
        }
        check(forwarded_trusted(&p, (const struct sockaddr *)&ss));
    }
}

static void
walk(char *rest, bool cut)
{
    static struct element elements[ELEMENTS_MAX];
    char *lines[FORWARDED_FIELDS_MAX];
    size_t n = 0;
    struct forwarded_proxies p;
    struct sockaddr_storage peer, client;
    char why[256];
    bool ok;

    for (char *s = rest; n < FORWARDED_FIELDS_MAX;) {
        char *nl = strchr(s, '\n');
        lines[n++] = s;
        if (nl == NULL)
            break;
        *nl = '\0';
        s = nl + 1;
    }
    check(forwarded_proxies_parse(TRUSTED, &p, why, sizeof why) == 0);
    to_sockaddr(PEER, &peer, &ok);
    enum forwarded_source got = forwarded_client(&p, (const struct sockaddr *)&peer,
                                                 (const char *const *)lines, n, cut, &client);
    long want = reference(&p, elements, split(lines, n, elements), cut);
    if (want < 0) {
        check(got == FORWARDED_MALFORMED && same_addr(&client, &peer));
    } else {
        check(got == FORWARDED_HEADER && same_addr(&client, &elements[want].sa));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char text[INPUT_MAX + 1];
    size_t n = size < INPUT_MAX ? size : INPUT_MAX;

    if (n == 0)
        return 0;
    memcpy(text, data, n);
    text[n] = '\0';
    bool cut = (text[0] & 1) != 0;
    char *nl = strchr(text + 1, '\n');
    if (nl == NULL)
        return 0;
    *nl = '\0';
    parse_any(text + 1);
    walk(nl + 1, cut);
    return 0;
}
