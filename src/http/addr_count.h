/* addr_count.h -- open connections per client address, bounded: the acceptor takes a place when
 * it hands a connection to an HTTP pool and gives it back when the connection closes, so that one
 * bound covers every pool (libmicrohttpd keeps its per-address bound per daemon, and the API and
 * the streams each have one). The port is not part of the address, and IPv6 clients are counted
 * by /64 (key_of). Thread-safe: one lock, held for a hash lookup. */
#ifndef TOCSIN_ADDR_COUNT_H
#define TOCSIN_ADDR_COUNT_H

#include <stdbool.h>
#include <sys/socket.h>

#define ADDR_COUNT_BUCKETS 4096 /* hash chains; addresses with connections open are the entries */

struct addr_count;

/* A table that lets each address hold max places. NULL when out of memory. */
struct addr_count *addr_count_new(unsigned max);
void addr_count_free(struct addr_count *ac);
/* Takes a place for sa's address: false when it holds max already (or no memory is left for a new
 * address), and nothing was taken. */
bool addr_count_take(struct addr_count *ac, const struct sockaddr *sa, socklen_t len);
/* Gives back a place addr_count_take gave for the same address. */
void addr_count_give(struct addr_count *ac, const struct sockaddr *sa, socklen_t len);
/* Places sa's address holds (for tests). */
unsigned addr_count_held(struct addr_count *ac, const struct sockaddr *sa, socklen_t len);

#endif
