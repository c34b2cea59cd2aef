/* test_deliver_policy.c -- the delivery workers' receiver policy, with no network and a clock of
 * our own: scripted scenarios (a table of steps each, the state checked after every step) for
 * shares and their slots, circuits (opening after DELIVER_CIRCUIT_FAILURES failures, one
 * half-open probe, closing on success, doubling), Retry-After holds (honoured, not ended by a
 * success to an earlier request, not cut short by the circuit their failure opens); then hold
 * caps, retry backoff with its jitter and cap, Retry-After up to a day, and the last attempt. */
#include "check.h"
#include "deliver_policy.h"
#include "outbound.h"

#include <inttypes.h>
#include <stdio.h>

#define ANY (-1) /* a step's result that is not looked at */
#define CL DELIVER_CIRCUIT_CLOSED
#define OP DELIVER_CIRCUIT_OPEN
#define HO DELIVER_CIRCUIT_HALF_OPEN
#define SAME DELIVER_POLICY_SAME
#define CLOSED DELIVER_POLICY_CLOSED
#define OPENED DELIVER_POLICY_OPENED
#define HELD DELIVER_POLICY_HELD

enum op {
    QUEUE,  /* a row is queued for the receiver */
    SEND,   /* the oldest queued row goes out, as the worker does: only when it may */
    ANSWER, /* an answer comes back: its slot too (want: whether it fell below the share) */
    OK,     /* the answer shows a receiver that works (want: the change) */
    FAIL,   /* it shows the receiver in trouble, with Retry-After arg ms (want: the change) */
    LOOK,   /* nothing happens: the state at `at` */
};

struct step {
    enum op op;
    int64_t at, arg; /* ms from the scenario's start */
    int64_t want;    /* the operation's result, or ANY */
    int64_t wait;    /* OK, FAIL: how long the queued rows must wait (deliver_policy_note) */
    int circuit;     /* after it, at `at` (enum deliver_circuit) */
    bool may_send, left_out;
};

struct scenario {
    const char *name;
    size_t share;
    const struct step *steps;
    size_t n;
};

#define SCENARIO(name, share, steps)                                                               \
    {                                                                                              \
        name, share, steps, sizeof steps / sizeof steps[0]                                         \
    }

/* Share 3: never more than 3 out; each answer gives its slot back, and the one that brings what
 * the receiver holds below its share says so (its rows may be leased again). */
static const struct step share_steps[] = {
    {QUEUE, 0, 0, ANY, 0, CL, 1, 0}, {QUEUE, 0, 0, ANY, 0, CL, 1, 0},
    {QUEUE, 0, 0, ANY, 0, CL, 1, 1}, /* 3 held: left out of leases */
    {QUEUE, 0, 0, ANY, 0, CL, 1, 1}, {QUEUE, 0, 0, ANY, 0, CL, 1, 1},
    {SEND, 0, 0, ANY, 0, CL, 1, 1},  {SEND, 0, 0, ANY, 0, CL, 1, 1},
    {SEND, 0, 0, ANY, 0, CL, 0, 1}, /* the share: 3 out */
    {ANSWER, 10, 0, 0, 0, CL, 1, 1}, {SEND, 10, 0, ANY, 0, CL, 0, 1},
    {ANSWER, 20, 0, 0, 0, CL, 1, 1}, {SEND, 20, 0, ANY, 0, CL, 0, 1}, /* 3 out, none queued */
    {ANSWER, 30, 0, 1, 0, CL, 1, 0}, /* below the share: lease now */
    {ANSWER, 40, 0, 0, 0, CL, 1, 0}, {ANSWER, 50, 0, 0, 0, CL, 1, 0},
};

/* DELIVER_CIRCUIT_FAILURES in a row open the circuit; answers to earlier requests while it is
 * open change nothing; half open, one probe at a time: a failed one opens it twice as long, a
 * successful one closes it. */
static const struct step circuit_steps[] = {
    {FAIL, 0, 0, SAME, 0, CL, 1, 0},
    {FAIL, 1, 0, SAME, 0, CL, 1, 0},
    {FAIL, 2, 0, SAME, 0, CL, 1, 0},
    {FAIL, 3, 0, SAME, 0, CL, 1, 0},
    {FAIL, 4, 0, OPENED, DELIVER_CIRCUIT_OPEN_MS, OP, 0, 1},
    {FAIL, 100, 0, SAME, 0, OP, 0, 1}, /* an answer to a request sent before it opened */
    {LOOK, 4 + DELIVER_CIRCUIT_OPEN_MS - 1, 0, ANY, 0, OP, 0, 1},
    {LOOK, 4 + DELIVER_CIRCUIT_OPEN_MS, 0, ANY, 0, HO, 1, 0},
    {QUEUE, 5004, 0, ANY, 0, HO, 1, 1}, /* half open: one row held is its share */
    {QUEUE, 5004, 0, ANY, 0, HO, 1, 1},
    {SEND, 5004, 0, ANY, 0, HO, 0, 1}, /* the probe: nothing else goes out */
    {ANSWER, 5100, 0, 0, 0, HO, 0, 1},
    {FAIL, 5100, 0, OPENED, 2 * DELIVER_CIRCUIT_OPEN_MS, OP, 0, 1},
    {LOOK, 5100 + 2 * DELIVER_CIRCUIT_OPEN_MS - 1, 0, ANY, 0, OP, 0, 1},
    {LOOK, 5100 + 2 * DELIVER_CIRCUIT_OPEN_MS, 0, ANY, 0, HO, 1, 1},
    {SEND, 15100, 0, ANY, 0, HO, 0, 1},
    {ANSWER, 15200, 0, 0, 0, HO, 0, 0},
    {OK, 15200, 0, CLOSED, 0, CL, 1, 0},
    {QUEUE, 15200, 0, ANY, 0, CL, 1, 0},
    {SEND, 15200, 0, ANY, 0, CL, 1, 0}, /* closed: the whole share again */
    {OK, 15300, 0, SAME, 0, CL, 1, 0},
};

/* The failures must come in a row: a success in between starts the count again. */
static const struct step row_steps[] = {
    {FAIL, 0, 0, SAME, 0, CL, 1, 0}, {FAIL, 1, 0, SAME, 0, CL, 1, 0},
    {FAIL, 2, 0, SAME, 0, CL, 1, 0}, {FAIL, 3, 0, SAME, 0, CL, 1, 0},
    {OK, 4, 0, SAME, 0, CL, 1, 0},   {FAIL, 5, 0, SAME, 0, CL, 1, 0},
    {FAIL, 6, 0, SAME, 0, CL, 1, 0}, {FAIL, 7, 0, SAME, 0, CL, 1, 0},
    {FAIL, 8, 0, SAME, 0, CL, 1, 0}, {FAIL, 9, 0, OPENED, DELIVER_CIRCUIT_OPEN_MS, OP, 0, 1},
};

/* A 503 with Retry-After: 30 while another request is out: the success of that earlier request
 * closes the circuit but not the hold, and after the hold the receiver takes its whole share. */
static const struct step hold_steps[] = {
    {QUEUE, 0, 0, ANY, 0, CL, 1, 0},
    {QUEUE, 0, 0, ANY, 0, CL, 1, 0},
    {QUEUE, 0, 0, ANY, 0, CL, 1, 0},
    {SEND, 0, 0, ANY, 0, CL, 1, 0},
    {SEND, 0, 0, ANY, 0, CL, 1, 0},
    {ANSWER, 100, 0, 0, 0, CL, 1, 0},
    {FAIL, 100, 30000, HELD, 30000, OP, 0, 1},
    {ANSWER, 200, 0, 0, 0, OP, 0, 1},
    {OK, 200, 0, CLOSED, 0, OP, 0, 1}, /* the hold stays */
    {LOOK, 10000, 0, ANY, 0, OP, 0, 1},
    {LOOK, 30099, 0, ANY, 0, OP, 0, 1},
    {LOOK, 30100, 0, ANY, 0, CL, 1, 0},
};

/* The DELIVER_CIRCUIT_FAILURES-th failure says Retry-After: 30: the circuit it would open (for
 * DELIVER_CIRCUIT_OPEN_MS) neither ends the hold early nor gives the queue back sooner; after
 * the hold, one probe. */
static const struct step hold_open_steps[] = {
    {FAIL, 0, 0, SAME, 0, CL, 1, 0},
    {FAIL, 1, 0, SAME, 0, CL, 1, 0},
    {FAIL, 2, 0, SAME, 0, CL, 1, 0},
    {FAIL, 3, 0, SAME, 0, CL, 1, 0},
    {FAIL, 10, 30000, HELD, 30000, OP, 0, 1},
    {LOOK, 10 + DELIVER_CIRCUIT_OPEN_MS, 0, ANY, 0, OP, 0, 1},
    {LOOK, 30009, 0, ANY, 0, OP, 0, 1},
    {LOOK, 30010, 0, ANY, 0, HO, 1, 0},
    {QUEUE, 30010, 0, ANY, 0, HO, 1, 1},
    {SEND, 30010, 0, ANY, 0, HO, 0, 1},
    {ANSWER, 30100, 0, 0, 0, HO, 0, 0},
    {OK, 30100, 0, CLOSED, 0, CL, 1, 0},
};

/* A hold shorter than DELIVER_CIRCUIT_OPEN_MS: when its probe fails, the circuit opens for
 * DELIVER_CIRCUIT_OPEN_MS, not twice the hold. */
static const struct step short_hold_steps[] = {
    {QUEUE, 0, 0, ANY, 0, CL, 1, 0},
    {SEND, 0, 0, ANY, 0, CL, 1, 0},
    {ANSWER, 0, 0, 0, 0, CL, 1, 0},
    {FAIL, 0, 2000, HELD, 2000, OP, 0, 1},
    {LOOK, 2000, 0, ANY, 0, HO, 1, 0},
    {QUEUE, 2000, 0, ANY, 0, HO, 1, 1},
    {SEND, 2000, 0, ANY, 0, HO, 0, 1},
    {ANSWER, 2100, 0, 0, 0, HO, 0, 0},
    {FAIL, 2100, 0, OPENED, DELIVER_CIRCUIT_OPEN_MS, OP, 0, 1},
    {LOOK, 2100 + DELIVER_CIRCUIT_OPEN_MS - 1, 0, ANY, 0, OP, 0, 1},
    {LOOK, 2100 + DELIVER_CIRCUIT_OPEN_MS, 0, ANY, 0, HO, 1, 0},
};

/* A hold only lengthens: a shorter one while one is on changes nothing; a success ends none. */
static const struct step hold_longer_steps[] = {
    {OK, 0, 10000, SAME, 0, CL, 1, 0}, /* a success's Retry-After is no hold */
    {FAIL, 0, 0, SAME, 0, CL, 1, 0},   /* no Retry-After */
    {FAIL, 0, 30000, HELD, 30000, OP, 0, 1},   {FAIL, 100, 10000, SAME, 0, OP, 0, 1},
    {OK, 150, 10000, CLOSED, 0, OP, 0, 1}, /* nor does it end one */
    {FAIL, 200, 40000, HELD, 40000, OP, 0, 1}, {LOOK, 40199, 0, ANY, 0, OP, 0, 1},
    {LOOK, 40200, 0, ANY, 0, HO, 1, 0},
};

/* A failed probe that asks for less than twice the time open: the hold decides, and the next
 * failed probe doubles from the time open before it. */
static const struct step probe_hold_steps[] = {
    {FAIL, 0, 0, SAME, 0, CL, 1, 0},
    {FAIL, 0, 0, SAME, 0, CL, 1, 0},
    {FAIL, 0, 0, SAME, 0, CL, 1, 0},
    {FAIL, 0, 0, SAME, 0, CL, 1, 0},
    {FAIL, 0, 0, OPENED, DELIVER_CIRCUIT_OPEN_MS, OP, 0, 1},
    {QUEUE, 5000, 0, ANY, 0, HO, 1, 1},
    {QUEUE, 5000, 0, ANY, 0, HO, 1, 1},
    {SEND, 5000, 0, ANY, 0, HO, 0, 1},
    {ANSWER, 5000, 0, 0, 0, HO, 0, 1},
    {FAIL, 5000, 2000, HELD, 2000, OP, 0, 1},
    {LOOK, 7000, 0, ANY, 0, HO, 1, 1},
    {SEND, 7000, 0, ANY, 0, HO, 0, 1},
    {ANSWER, 7000, 0, 0, 0, HO, 0, 0},
    {FAIL, 7000, 0, OPENED, 2 * DELIVER_CIRCUIT_OPEN_MS, OP, 0, 1},
};

/* A hold on an open circuit that ends sooner than the circuit: the queue waits for the circuit,
 * not only for the hold. */
static const struct step hold_on_open_steps[] = {
    {FAIL, 0, 0, SAME, 0, CL, 1, 0},
    {FAIL, 0, 0, SAME, 0, CL, 1, 0},
    {FAIL, 0, 0, SAME, 0, CL, 1, 0},
    {FAIL, 0, 0, SAME, 0, CL, 1, 0},
    {FAIL, 0, 0, OPENED, DELIVER_CIRCUIT_OPEN_MS, OP, 0, 1},
    {FAIL, 1000, 2000, HELD, DELIVER_CIRCUIT_OPEN_MS - 1000, OP, 0, 1},
    {LOOK, 2999, 0, ANY, 0, OP, 0, 1},
    {LOOK, 4999, 0, ANY, 0, OP, 0, 1},
    {LOOK, 5000, 0, ANY, 0, HO, 1, 0},
};

static const struct scenario scenarios[] = {
    SCENARIO("share", 3, share_steps),
    SCENARIO("circuit", 4, circuit_steps),
    SCENARIO("failures in a row", 4, row_steps),
    SCENARIO("hold", 4, hold_steps),
    SCENARIO("hold and the circuit its failure opens", 4, hold_open_steps),
    SCENARIO("short hold", 4, short_hold_steps),
    SCENARIO("holds only lengthen", 4, hold_longer_steps),
    SCENARIO("a probe's hold", 4, probe_hold_steps),
    SCENARIO("hold on an open circuit", 4, hold_on_open_steps),
};

/* One step on p; its result, or ANY. *wait: what deliver_policy_note said (OK, FAIL). */
static int64_t
apply(struct deliver_policy *p, const struct step *s, const char *name, size_t i, int64_t *wait)
{
    *wait = 0;
    switch (s->op) {
    case QUEUE:
        deliver_policy_queue(p);
        return ANY;
    case SEND:
        /* The worker sends only what the policy allows; a send it refuses is a failed check
         * here, not the assertion it would be in the worker. */
        CHECK(p->queued > 0 && deliver_policy_may_send(p, s->at), "%s #%zu: may not send", name, i);
        if (p->queued > 0 && deliver_policy_may_send(p, s->at)) {
            deliver_policy_unqueue(p);
            deliver_policy_sent(p, s->at);
        }
        return ANY;
    case ANSWER:
        CHECK(p->sending > 0, "%s #%zu: nothing out", name, i);
        return p->sending > 0 ? deliver_policy_answered(p) : ANY;
    case OK:
    case FAIL:
        return deliver_policy_note(p, s->op == FAIL, s->arg, s->at, wait);
    case LOOK:
        return ANY;
    }
    return ANY;
}

static void
test_scenarios(void)
{
    for (size_t k = 0; k < sizeof scenarios / sizeof scenarios[0]; k++) {
        const struct scenario *sc = &scenarios[k];
        struct deliver_policy p;
        deliver_policy_init(&p, sc->share, 256);
        for (size_t i = 0; i < sc->n; i++) {
            const struct step *s = &sc->steps[i];
            int64_t wait, got = apply(&p, s, sc->name, i, &wait);
            CHECK(s->want == ANY || got == s->want, "%s #%zu: got %" PRId64 " want %" PRId64,
                  sc->name, i, got, s->want);
            CHECK(wait == s->wait, "%s #%zu: wait %" PRId64 " want %" PRId64, sc->name, i, wait,
                  s->wait);
            int circuit = (int)deliver_policy_circuit(&p, s->at);
            CHECK(circuit == s->circuit, "%s #%zu: circuit %d want %d", sc->name, i, circuit,
                  s->circuit);
            CHECK(deliver_policy_may_send(&p, s->at) == s->may_send, "%s #%zu: may_send want %d",
                  sc->name, i, s->may_send);
            CHECK(deliver_policy_left_out(&p, s->at) == s->left_out, "%s #%zu: left_out want %d",
                  sc->name, i, s->left_out);
        }
    }
}

/* Each failed probe doubles the time open, up to DELIVER_CIRCUIT_OPEN_MAX_MS. */
static void
test_probe_doubling(void)
{
    struct deliver_policy p;
    int64_t now = 0, want = DELIVER_CIRCUIT_OPEN_MS, wait;

    deliver_policy_init(&p, 4, 256);
    for (int i = 0; i < DELIVER_CIRCUIT_FAILURES; i++)
        deliver_policy_note(&p, true, 0, now, &wait);
    for (int round = 0; round < 12; round++) {
        CHECK(p.open_ms == want, "round %d: open %" PRId64 " ms want %" PRId64, round, p.open_ms,
              want);
        CHECK(deliver_policy_circuit(&p, now + want - 1) == DELIVER_CIRCUIT_OPEN, "round %d",
              round);
        now += want;
        CHECK(deliver_policy_circuit(&p, now) == DELIVER_CIRCUIT_HALF_OPEN, "round %d", round);
        if (!deliver_policy_may_send(&p, now))
            return; /* counted above */
        deliver_policy_sent(&p, now);
        deliver_policy_answered(&p);
        CHECK(deliver_policy_note(&p, true, 0, now, &wait) == DELIVER_POLICY_OPENED &&
                  wait == p.open_ms,
              "round %d", round);
        want = want * 2 > DELIVER_CIRCUIT_OPEN_MAX_MS ? DELIVER_CIRCUIT_OPEN_MAX_MS : want * 2;
    }
    CHECK(want == DELIVER_CIRCUIT_OPEN_MAX_MS, "the cap is reached in 12 rounds");
}

/* Forgotten only with nothing to remember: no rows, a closed circuit, no failures, no hold. */
static void
test_idle(void)
{
    struct deliver_policy p;
    int64_t wait;

    deliver_policy_init(&p, 2, 256);
    CHECK(deliver_policy_idle(&p, 0), "a new receiver is idle");
    deliver_policy_queue(&p);
    CHECK(!deliver_policy_idle(&p, 0), "a row queued");
    deliver_policy_unqueue(&p);
    deliver_policy_note(&p, true, 0, 0, &wait);
    CHECK(!deliver_policy_idle(&p, 0), "a failure in a row");
    deliver_policy_note(&p, false, 0, 0, &wait);
    CHECK(deliver_policy_idle(&p, 0), "the success after it");
    deliver_policy_note(&p, true, 1000, 0, &wait);
    deliver_policy_note(&p, false, 0, 0, &wait);
    CHECK(!deliver_policy_idle(&p, 999), "a hold on");
    CHECK(deliver_policy_idle(&p, 1000), "the hold over");
}

/* Failing: open after failures, while it is open; a Retry-After hold is not (the receiver asked
 * every worker to wait, so its rows are not passed to others). */
static void
test_failing(void)
{
    struct deliver_policy p;
    int64_t wait;

    deliver_policy_init(&p, 4, 256);
    for (int i = 0; i < DELIVER_CIRCUIT_FAILURES - 1; i++)
        deliver_policy_note(&p, true, 0, 0, &wait);
    CHECK(!deliver_policy_failing(&p, 0), "closed, failures short of opening it");
    deliver_policy_note(&p, true, 0, 0, &wait);
    CHECK(deliver_policy_failing(&p, DELIVER_CIRCUIT_OPEN_MS - 1), "open");
    CHECK(!deliver_policy_failing(&p, DELIVER_CIRCUIT_OPEN_MS), "half open");
    deliver_policy_init(&p, 4, 256);
    deliver_policy_note(&p, true, 30000, 0, &wait);
    CHECK(!deliver_policy_failing(&p, 1), "a Retry-After hold");
    CHECK(!deliver_policy_failing(&p, 30000), "the hold over: half open");
}

static const struct {
    int concurrency;
    size_t share, cap;
} caps[] = {
    {256, 16, 64},                         /* a quarter of the slots */
    {256, 64, 64},                         /* the push services' default share */
    {256, 100, 100},                       /* a share above a quarter */
    {8, 1, 2},       {4, 1, 1}, {3, 1, 1}, /* a quarter rounds to 0 */
    {3, 0, 1},                             /* and no share either: still one */
};

/* A receiver's rows beyond its hold cap take no slot, and at its cap it is left out first. */
static void
test_hold_cap(void)
{
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        size_t got = deliver_policy_hold_cap(caps[i].concurrency, caps[i].share);
        CHECK(got == caps[i].cap, "#%zu: cap %zu want %zu", i, got, caps[i].cap);
    }
    struct deliver_policy p;
    deliver_policy_init(&p, 16, 256);
    for (int i = 0; i < 63; i++)
        deliver_policy_queue(&p);
    CHECK(!deliver_policy_at_cap(&p) && deliver_policy_beyond(&p) == 0, "63 of 64");
    deliver_policy_queue(&p);
    CHECK(deliver_policy_at_cap(&p) && deliver_policy_beyond(&p) == 0, "64 of 64");
    for (int i = 0; i < 6; i++)
        deliver_policy_queue(&p);
    CHECK(deliver_policy_beyond(&p) == 6, "70 of 64: %zu beyond", deliver_policy_beyond(&p));
    CHECK(deliver_policy_held_max(256, 256) == 256 + 8 * 256, "held max %zu",
          deliver_policy_held_max(256, 256));
}

static const struct {
    int64_t base;
    int attempt;
    double r;
    int64_t min, max;
} backoffs[] = {
    {1000, 1, 0.5, 1000, 1000}, /* the base, at the middle of the jitter */
    {1000, 4, 0.5, 8000, 8000}, /* doubled per retry */
    {5000, 2, 0.5, 10000, 10000},
    {5000, 12, 0.5, 10240000, 10240000},
    {5000, 13, 0.5, DELIVER_BACKOFF_MAX_MS, DELIVER_BACKOFF_MAX_MS}, /* 4 h */
    {1000, 1, 0.0, 800, 800},                                        /* -20 % */
    {1000, 1, 0.999999, 1199, 1200},                                 /* +20 % */
    {1000, 60, 0.5, DELIVER_BACKOFF_MAX_MS, DELIVER_BACKOFF_MAX_MS},
    {1000, 1000000, 0.0, DELIVER_BACKOFF_MAX_MS * 8 / 10, DELIVER_BACKOFF_MAX_MS * 8 / 10},
    {1000, 1000000, 0.999999, DELIVER_BACKOFF_MAX_MS * 12 / 10 - 10,
     DELIVER_BACKOFF_MAX_MS * 12 / 10},
};

static void
test_backoff(void)
{
    for (size_t i = 0; i < sizeof backoffs / sizeof backoffs[0]; i++) {
        int64_t got =
            deliver_policy_backoff_ms(backoffs[i].base, backoffs[i].attempt, backoffs[i].r);
        CHECK(got >= backoffs[i].min && got <= backoffs[i].max,
              "#%zu: %" PRId64 " not in [%" PRId64 ", %" PRId64 "]", i, got, backoffs[i].min,
              backoffs[i].max);
    }
    for (int a = 1; a < 40; a++)
        CHECK(deliver_policy_backoff_ms(1000, a + 1, 0.5) >=
                  deliver_policy_backoff_ms(1000, a, 0.5),
              "not monotonic at %d", a);
    /* The jitter spreads evenly over +-20 % (sixteenths of r are exact in a double). */
    for (int k = 0; k < 16; k++) {
        int64_t d = deliver_policy_backoff_ms(10000, 1, k / 16.0);
        CHECK(d == 8000 + k * 250, "r %d/16: %" PRId64, k, d);
    }
}

static const struct {
    int attempt;
    int64_t retry_after_s, want;
} retries[] = {
    {1, 0, 5000},   /* no Retry-After: the backoff */
    {1, 3, 5000},   /* one sooner than the backoff: the backoff */
    {1, 60, 60000}, /* one later: honoured */
    {30, 0, DELIVER_BACKOFF_MAX_MS},
    {30, OUTBOUND_RETRY_AFTER_MAX, OUTBOUND_RETRY_AFTER_MAX * 1000}, /* a day, past the 4 h */
};

static const struct {
    int attempt, max_attempts;
    bool give_up, want;
} finals[] = {
    {1, 15, false, false}, {14, 15, false, false}, {15, 15, false, true},
    {16, 15, false, true}, {1, 15, true, true},    {1, 1, false, true},
};

/* The delay of a failed attempt and whether it was the last; with a base of 5 s and 15 attempts
 * (the settings' defaults) the row gives up after 14 retries spread over 13.7 h (the middle of
 * the jitter). */
static void
test_retry(void)
{
    for (size_t i = 0; i < sizeof retries / sizeof retries[0]; i++) {
        int64_t got =
            deliver_policy_retry_ms(5000, retries[i].attempt, 0.5, retries[i].retry_after_s);
        CHECK(got == retries[i].want, "#%zu: %" PRId64 " want %" PRId64, i, got, retries[i].want);
    }
    for (size_t i = 0; i < sizeof finals / sizeof finals[0]; i++)
        CHECK(deliver_policy_final(finals[i].attempt, finals[i].max_attempts, finals[i].give_up) ==
                  finals[i].want,
              "final #%zu", i);
    int64_t total = 0;
    int attempt = 1;
    for (; !deliver_policy_final(attempt, 15, false); attempt++)
        total += deliver_policy_retry_ms(5000, attempt, 0.5, 0);
    CHECK(attempt == 15 && total == 49275000, "gave up at attempt %d after %" PRId64 " ms", attempt,
          total);
}

static const struct {
    int concurrency, pct;
    size_t want;
} tenant_shares[] = {
    {256, 50, 128},              /* the default: half */
    {256, 100, 256},             /* one tenant may take every slot */
    {256, 1, 2},                 /* rounded down */
    {8, 50, 4},      {3, 50, 1}, /* rounded down: two tenants never pass the slots */
    {1, 50, 1},      {1, 1, 1},  /* still one */
};

static const struct {
    int64_t took_ms, timeout_ms;
    bool want;
} slows[] = {
    {4999, 10000, false}, /* just under half the timeout */
    {5000, 10000, true},  /* half of it */
    {9000, 10000, true},  /* the 9 s tarpit */
    {0, 100, false},      {60000, 60000, true},
};

/* A tenant's share of the slots, and which answers are slow enough to count against a receiver.
 */
static void
test_tenant_and_slow(void)
{
    for (size_t i = 0; i < sizeof tenant_shares / sizeof tenant_shares[0]; i++) {
        size_t got =
            deliver_policy_tenant_share(tenant_shares[i].concurrency, tenant_shares[i].pct);
        CHECK(got == tenant_shares[i].want, "tenant share #%zu: %zu want %zu", i, got,
              tenant_shares[i].want);
    }
    for (size_t i = 0; i < sizeof slows / sizeof slows[0]; i++)
        CHECK(deliver_policy_slow(slows[i].took_ms, slows[i].timeout_ms) == slows[i].want,
              "slow #%zu", i);
    /* Slow answers, counted as trouble, open the circuit at the fifth in a row. */
    struct deliver_policy p;
    int64_t wait;
    deliver_policy_init(&p, 16, 256);
    for (int i = 1; i < DELIVER_CIRCUIT_FAILURES; i++)
        CHECK(deliver_policy_note(&p, deliver_policy_slow(9000, 10000), 0, i, &wait) ==
                  DELIVER_POLICY_SAME,
              "slow answer %d", i);
    CHECK(deliver_policy_note(&p, deliver_policy_slow(9000, 10000), 0, 9, &wait) ==
                  DELIVER_POLICY_OPENED &&
              wait == DELIVER_CIRCUIT_OPEN_MS,
          "the fifth slow answer opens the circuit");
}

int
main(void)
{
    test_scenarios();
    test_probe_doubling();
    test_idle();
    test_failing();
    test_hold_cap();
    test_backoff();
    test_retry();
    test_tenant_and_slow();
    return check_summary("test_deliver_policy");
}
