/* test_shard.c -- shard sets and the rendezvous assignment: every shard has exactly one owner
 * among the live replicas, the spread is even, and a replica that leaves moves only its own
 * shards (the others keep theirs). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "shard.h"

#define FLEET 20

static void
test_sets(void)
{
    struct shard_set s;
    char text[SHARD_SET_TEXT_MAX];

    shard_set_clear(&s);
    CHECK(shard_set_count(&s) == 0, "empty");
    CHECK(strcmp(shard_set_text(&s, text), "{}") == 0, "empty text: %s", text);
    shard_set_add(&s, 0);
    shard_set_add(&s, 63);
    shard_set_add(&s, 64);
    shard_set_add(&s, SHARD_COUNT - 1);
    CHECK(shard_set_count(&s) == 4, "count %zu", shard_set_count(&s));
    CHECK(strcmp(shard_set_text(&s, text), "{0,63,64,255}") == 0, "text: %s", text);
    CHECK(shard_set_has(&s, 63) && !shard_set_has(&s, 62), "has");
    shard_set_fill(&s);
    CHECK(shard_set_count(&s) == SHARD_COUNT, "full");
    CHECK(strlen(shard_set_text(&s, text)) < SHARD_SET_TEXT_MAX, "full text fits");
    CHECK(shard_of(0) == 0 && shard_of(257) == 1 && shard_of(INT64_MAX) == INT64_MAX % 256,
          "shard_of");
}

/* Each shard exactly one owner among names[0..n); returns the largest share. */
static size_t
check_partition(const char *const *names, size_t n, struct shard_set *sets)
{
    size_t most = 0;

    for (size_t i = 0; i < n; i++) {
        shard_assign(names, n, names[i], &sets[i]);
        if (shard_set_count(&sets[i]) > most)
            most = shard_set_count(&sets[i]);
    }
    for (unsigned s = 0; s < SHARD_COUNT; s++) {
        int owners = 0;
        for (size_t i = 0; i < n; i++)
            owners += shard_set_has(&sets[i], s);
        CHECK(owners == 1, "shard %u has %d owners among %zu", s, owners, n);
    }
    return most;
}

static void
test_assignment(void)
{
    char buf[FLEET][32];
    const char *names[FLEET];
    struct shard_set before[FLEET], after[FLEET];

    for (size_t i = 0; i < FLEET; i++) {
        snprintf(buf[i], sizeof buf[i], "tocsin-%zu", i);
        names[i] = buf[i];
    }
    struct shard_set alone;
    shard_assign(NULL, 0, "solo", &alone);
    CHECK(shard_set_count(&alone) == SHARD_COUNT, "alone owns everything");
    size_t most = check_partition(names, FLEET, before);
    CHECK(most <= 2 * SHARD_COUNT / FLEET + 4, "uneven spread: %zu", most);
    /* Replica 7 leaves: the others keep every shard they had. */
    const char *rest[FLEET - 1];
    for (size_t i = 0, k = 0; i < FLEET; i++)
        if (i != 7)
            rest[k++] = names[i];
    check_partition(rest, FLEET - 1, after);
    for (size_t i = 0, k = 0; i < FLEET; i++) {
        if (i == 7)
            continue;
        for (unsigned s = 0; s < SHARD_COUNT; s++)
            CHECK(!shard_set_has(&before[i], s) || shard_set_has(&after[k], s),
                  "%s lost shard %u when another left", names[i], s);
        k++;
    }
}

int
main(void)
{
    test_sets();
    test_assignment();
    return check_summary("test_shard");
}
