/* test_metrics.c -- counters and the lateness histogram: bucket boundaries (a value equal to a
 * bound falls in that bucket), negatives count as 0, and the rendered text carries cumulative
 * buckets, _sum and _count; the per-channel outcomes, latencies and open circuits. */
#include "check.h"
#include "meeting.h"
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    int64_t observe;
    int64_t le;     /* smallest bucket bound that must contain it */
    int64_t not_le; /* the bound below, which must not (-1: none) */
} cases[] = {
    {-5, 1, -1},
    {0, 1, -1},
    {1, 1, -1},
    {2, 2, 1},
    {3, 5, 2},
    {20, 20, 10},
    {21, 50, 20},
    {10000, 10000, 5000},
    {10001, INT64_MAX, 10000},
};

int
main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t le0 = metrics_lateness_le(cases[i].le);
        uint64_t below0 = cases[i].not_le >= 0 ? metrics_lateness_le(cases[i].not_le) : 0;
        metrics_observe_lateness_ms(cases[i].observe);
        CHECK(metrics_lateness_le(cases[i].le) == le0 + 1, "case %zu: not in le=%lld", i,
              (long long)cases[i].le);
        if (cases[i].not_le >= 0)
            CHECK(metrics_lateness_le(cases[i].not_le) == below0, "case %zu: in le=%lld", i,
                  (long long)cases[i].not_le);
    }
    CHECK(metrics_lateness_count() == sizeof cases / sizeof cases[0], "count");
    metrics_add(METRIC_FIRED, 3);
    metrics_add(METRIC_FIRED, 2);
    CHECK(metrics_get(METRIC_FIRED) == 5, "fired %llu",
          (unsigned long long)metrics_get(METRIC_FIRED));
    metrics_add(METRIC_COUNT, 1); /* out of range: ignored */
    char *text = metrics_render();
    CHECK(text != NULL, "render");
    if (text != NULL) {
        CHECK(strstr(text, "\ntocsin_reminders_fired_total 5\n") != NULL, "fired line");
        CHECK(strstr(text, "tocsin_fire_lateness_seconds_bucket{le=\"0.001\"} 3\n") != NULL,
              "le=0.001 bucket");
        CHECK(strstr(text, "tocsin_fire_lateness_seconds_bucket{le=\"10\"} 8\n") != NULL,
              "le=10 bucket");
        CHECK(strstr(text, "tocsin_fire_lateness_seconds_bucket{le=\"+Inf\"} 9\n") != NULL,
              "+Inf bucket");
        CHECK(strstr(text, "tocsin_fire_lateness_seconds_count 9\n") != NULL, "count line");
        CHECK(strstr(text, "tocsin_fire_lateness_seconds_sum 20.048\n") != NULL, "sum line");
        CHECK(strstr(text, "milliseconds") == NULL, "no metric in milliseconds");
    }
    free(text);

    /* Per channel: outcomes by label, the latency histogram in seconds; stream is not counted. */
    metrics_channel_add(CHANNEL_PUSH, OUTCOME_SENT, 2);
    metrics_channel_add(CHANNEL_EMAIL, OUTCOME_RETRIED, 1);
    metrics_channel_add(CHANNEL_STREAM, OUTCOME_SENT, 7); /* ignored */
    metrics_channel_add(CHANNEL_PUSH, OUTCOME_COUNT, 1);  /* ignored */
    metrics_observe_delivery_ms(CHANNEL_PUSH, 100);       /* a bound falls in its bucket */
    metrics_observe_delivery_ms(CHANNEL_PUSH, 2600);
    metrics_observe_delivery_ms(CHANNEL_WEBHOOK, -3);
    CHECK(metrics_channel_get(CHANNEL_PUSH, OUTCOME_SENT) == 2, "push sent");
    CHECK(metrics_channel_get(CHANNEL_STREAM, OUTCOME_SENT) == 0, "stream not counted");
    text = metrics_render();
    CHECK(text != NULL, "render with channels");
    if (text != NULL) {
        CHECK(strstr(text, "\ntocsin_channel_sent_total{channel=\"push\"} 2\n") != NULL, "push");
        CHECK(strstr(text, "\ntocsin_channel_retried_total{channel=\"email\"} 1\n") != NULL,
              "email retried");
        CHECK(strstr(text, "\ntocsin_channel_failed_total{channel=\"webhook\"} 0\n") != NULL,
              "webhook failed");
        CHECK(strstr(text, "channel=\"stream\"") == NULL, "no stream label");
        CHECK(strstr(text, "tocsin_channel_delivery_latency_seconds_bucket{channel=\"push\","
                           "le=\"0.1\"} 1\n") != NULL,
              "push le=0.1");
        CHECK(strstr(text, "tocsin_channel_delivery_latency_seconds_bucket{channel=\"push\","
                           "le=\"2.5\"} 1\n") != NULL,
              "push le=2.5");
        CHECK(strstr(text, "tocsin_channel_delivery_latency_seconds_bucket{channel=\"push\","
                           "le=\"5\"} 2\n") != NULL,
              "push le=5");
        CHECK(
            strstr(text, "tocsin_channel_delivery_latency_seconds_sum{channel=\"push\"} 2.700\n") !=
                NULL,
            "push sum");
        CHECK(strstr(text,
                     "tocsin_channel_delivery_latency_seconds_count{channel=\"webhook\"} 1\n") !=
                  NULL,
              "webhook count");
    }
    free(text);

    /* Open circuits: a gauge by channel, up and down; stream is not counted. */
    metrics_circuits_add(CHANNEL_WEBHOOK, 1);
    metrics_circuits_add(CHANNEL_WEBHOOK, 1);
    metrics_circuits_add(CHANNEL_EMAIL, 1);
    metrics_circuits_add(CHANNEL_WEBHOOK, -1);
    metrics_circuits_add(CHANNEL_STREAM, 1); /* ignored */
    CHECK(metrics_circuits_get(CHANNEL_WEBHOOK) == 1, "webhook circuits");
    CHECK(metrics_circuits_get(CHANNEL_STREAM) == 0, "stream circuits not counted");
    text = metrics_render();
    CHECK(text != NULL, "render with circuits");
    if (text != NULL) {
        CHECK(strstr(text, "\n# TYPE tocsin_delivery_circuits_open gauge\n") != NULL, "type");
        CHECK(strstr(text, "\ntocsin_delivery_circuits_open{channel=\"webhook\"} 1\n") != NULL,
              "webhook circuits line");
        CHECK(strstr(text, "\ntocsin_delivery_circuits_open{channel=\"email\"} 1\n") != NULL,
              "email circuits line");
        CHECK(strstr(text, "\ntocsin_delivery_circuits_open{channel=\"push\"} 0\n") != NULL,
              "push circuits line");
    }
    free(text);
    return check_summary("test_metrics");
}
