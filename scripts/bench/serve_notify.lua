-- wrk script for scripts/bench/serve.sh: POST /v1/notifications?wait=none, each request with a
-- notification id never used before (run id, thread, counter), so nothing is answered as a replay.
-- Env: HERALD_TOKEN; BENCH_RUN (a per-run prefix); BENCH_RATE (total requests/s, 0 = as fast as
-- possible); BENCH_CONNECTIONS (wrk's -c, for the per-connection delay); BENCH_PATH (default
-- /v1/notifications?wait=none); BENCH_KIND = notification | device.
local token = os.getenv("HERALD_TOKEN") or ""
local run = os.getenv("BENCH_RUN") or tostring(os.time())
local rate = tonumber(os.getenv("BENCH_RATE") or "0") or 0
local connections = tonumber(os.getenv("BENCH_CONNECTIONS") or "64") or 64
local kind = os.getenv("BENCH_KIND") or "notification"
local path = os.getenv("BENCH_PATH") or (kind == "device" and "/v1/devices" or "/v1/notifications?wait=none")

local threads = {}
local counter = 0
thread_id = thread_id or 0   -- set per thread by setup()

function setup(thread)
  thread:set("thread_id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  wrk.method = "POST"
  wrk.path = path
  wrk.headers["Authorization"] = "Bearer " .. token
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  local id = string.format("%s-%d-%d", run, thread_id, counter)
  local body
  if kind == "device" then
    body = string.format('{"namespace":"bench","deviceId":"d-%s","platform":"phone","token":"tok-%s"}', id, id)
  else
    body = string.format('{"id":"%s","namespace":"bench","type":"bench","title":"bench %d"}', id, counter)
  end
  return wrk.format(nil, nil, nil, body)
end

-- With BENCH_RATE set, every connection waits so that all of them together send that many per second.
function delay()
  if rate > 0 then return connections * 1000 / rate end
  return 0
end

local bad = 0
function response(status, headers, body)
  if status ~= 202 and status ~= 200 then
    bad = bad + 1
    if bad <= 3 then io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n") end
  end
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    "RESULT requests=%d seconds=%.2f rps=%.0f p50_ms=%.2f p99_ms=%.2f non2xx=%d connect_err=%d read_err=%d timeouts=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors.status, errors.connect, errors.read,
    errors.timeout))
end
