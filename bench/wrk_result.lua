-- bench/wrk_result.lua -- the end of every wrk script of bench/ (dofile'd from the repository's
-- root, where the scripts run wrk): one machine-readable RESULT line that bench/wrk.sh reads.
-- errors counts failed connections and answers with a status of 400 or more: a fast error is
-- not work done, so bench_wrk refuses to report a rate when it is not 0.
function done(summary, latency, requests)
    io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d errors=%d\n",
        summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
        summary.errors.connect + summary.errors.read + summary.errors.write +
        summary.errors.status + summary.errors.timeout))
end
