-- wrk script for scripts/bench/relay.sh: hapi single pushes, POST /v1/push, each with a device token
-- never used before in the run (run id, thread, counter in 64 hex digits) and a 60-byte envelope,
-- as hapi's hub posts them. wrk's -c is the number of concurrent clients, each on its own keep-alive
-- connection. Prints one JSON line, as `herald-bench relay` does.
-- Env: BENCH_RUN (a per-run prefix of up to 16 hex digits); BENCH_CLIENTS (wrk's -c, as printed).
local run = os.getenv("BENCH_RUN") or string.format("%x", os.time())
local counter = 0
thread_id = thread_id or 0 -- set per thread by setup()
local threads = {}

function setup(thread)
  thread:set("thread_id", #threads + 1)
  table.insert(threads, thread)
end

-- base64 of 60 bytes of 0x07: nonce, ciphertext and tag as far as the relay can tell.
local envelope = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH"

function init(args)
  wrk.method = "POST"
  wrk.path = "/v1/push"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  local token = string.format("%16s%016x%032x", run, thread_id, counter):gsub(" ", "0")
  local body = string.format('{"platform":"ios","token":"%s","envelope":"%s","priority":10}', token, envelope)
  return wrk.format(nil, nil, nil, body)
end

local bad = 0
function response(status, headers, body)
  if status ~= 200 then
    bad = bad + 1
    if bad <= 3 then io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n") end
  end
end

function done(summary, latency, requests)
  local errors = summary.errors
  local seconds = summary.duration / 1e6
  local ok = summary.requests - errors.status
  io.write(string.format(
    '{"protocol":"hapi","clients":%d,"requests":%d,"ok":%d,"seconds":%.2f,"pushes_per_s":%.0f,"p50_ms":%.2f,"p99_ms":%.2f,"non2xx":%d,"connect_err":%d,"read_err":%d,"timeouts":%d}\n',
    tonumber(os.getenv("BENCH_CLIENTS") or "0") or 0, summary.requests, ok, seconds, ok / seconds, latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, errors.status, errors.connect, errors.read, errors.timeout))
end
