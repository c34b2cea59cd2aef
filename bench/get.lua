-- bench/get.lua -- wrk script for bench/ratelimit.sh: GETs one meeting (MEETING, its id) with an
-- API key (TOKEN) over keep-alive connections and prints bench/wrk_result.lua's RESULT line; a
-- 429 or any other error fails the run.

local token, meeting = os.getenv("TOKEN"), os.getenv("MEETING")
if token == nil or token == "" or meeting == nil or meeting == "" then
    io.stderr:write("get.lua: TOKEN and MEETING must be set\n")
    os.exit(2)
end

wrk.method = "GET"
wrk.path = "/v1/meetings/" .. meeting
wrk.headers["Authorization"] = "Bearer " .. token

dofile("bench/wrk_result.lua")
