-- bench/create.lua -- wrk script for bench/create.sh: POSTs one valid meeting per request over
-- keep-alive connections (2 reminders, 3 participants, starting 2 hours from now so both
-- reminders fall inside the default mirror horizon and Redis is written too), and prints
-- bench/wrk_result.lua's RESULT line at the end. Needs TOKEN (an API key) in the environment.

local token = os.getenv("TOKEN")
if token == nil or token == "" then
    io.stderr:write("create.lua: TOKEN is not set\n")
    os.exit(2)
end

local starts_at = os.date("!%Y-%m-%dT%H:%M:%SZ", os.time() + 2 * 3600)

wrk.method = "POST"
wrk.path = "/v1/meetings"
wrk.headers["Authorization"] = "Bearer " .. token
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"title":"Benchmark sync","starts_at":"' .. starts_at .. '",' ..
    '"participants":[{"id":"u1","name":"Ada","email":"ada@example.com"},' ..
    '{"id":"u2","name":"Grace","email":"grace@example.com"},' ..
    '{"id":"u3","name":"Edsger","email":"edsger@example.com"}],' ..
    '"reminders":[{"minutes_before":10},{"minutes_before":5}]}'

dofile("bench/wrk_result.lua")
