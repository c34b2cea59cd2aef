-- bench/get.lua -- wrk script for bench/ratelimit.sh: GETs one meeting (MEETING, its id) with an
-- API key (TOKEN) over keep-alive connections and prints one machine-readable RESULT line, as
-- create.lua does; a 429 or any other error fails the run.

local token, meeting = os.getenv("TOKEN"), os.getenv("MEETING")
if token == nil or token == "" or meeting == nil or meeting == "" then
    io.stderr:write("get.lua: TOKEN and MEETING must be set\n")
    os.exit(2)
end

wrk.method = "GET"
wrk.path = "/v1/meetings/" .. meeting
wrk.headers["Authorization"] = "Bearer " .. token

function done(summary, latency, requests)
    io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d errors=%d\n",
        summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
        summary.errors.connect + summary.errors.read + summary.errors.write +
        summary.errors.status + summary.errors.timeout))
end
