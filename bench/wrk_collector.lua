-- wrk script of the collector benchmark (driven by bench/collector_bench.py).
--
-- FFBENCH_MODE=get     GET the URL given to wrk with browser-like headers (User-Agent and
--                      Referer vary, so the middleware's parsing caches see a few values).
-- FFBENCH_MODE=beacon  POST /collect a tracker-like JSON beacon as text/plain (what
--                      navigator.sendBeacon sends): the page path, title, referrer,
--                      User-Agent and client address (X-Forwarded-For, as from the TLS
--                      proxy) vary among a handful of realistic values, and every
--                      beacon carries a new event id, as from footfall.js.
-- FFBENCH_SITE         the site id of the beacons (default "bench").
--
-- Every response's status is counted (a response() callback costs wrk some CPU, the same in
-- every variant), and done() prints one line "FFBENCH {json}" for the harness to parse.

local mode = os.getenv("FFBENCH_MODE") or "get"
local site = os.getenv("FFBENCH_SITE") or "bench"

local agents = {
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
  "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
}
local referrers = {
  "https://www.google.com/",
  "https://localhost/",
  "https://x.com/",
  "",
  "https://news.ycombinator.com/item?id=42000000",
}
-- Public client addresses, as the TLS proxy in front of the collector reports them
-- (FOOTFALL_TRUSTED_PROXIES=1): geolocation and the visitor id see real-world input,
-- which loopback (never geolocated) would skip.
local clients = { "81.2.69.142", "89.160.20.112", "216.160.83.56", "175.16.199.1", "2.125.160.216", "2a02:cf40::1" }
local pages = {
  { "/", "Home" },
  { "/products", "Products" },
  { "/products/item-7?color=green", "Product 7" },
  { "/blog/2026/spring-planting", "Spring planting" },
  { "/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=spring", "Pricing" },
  { "/about", "About us" },
  { "/contact", "Contact" },
}

local threads = {}
local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("id", thread_count)
  table.insert(threads, thread)
end

-- Requests are formatted once per wrk thread, in init(): request() only picks the next one
-- (for a beacon, splicing in its event id). Building each beacon in Lua made wrk dearer for
-- beacons than for GETs, a cost charged to the beacon's ratio that is no part of the collector.
local POOL = 2520 -- a multiple of every list's length (and of 3, the client cycle): one full cycle
local ID_HOLE = string.rep("@", 36) -- where a beacon's event id goes (a UUID is 36 characters)

local function format_request(n)
  local headers = {
    ["User-Agent"] = agents[(n % #agents) + 1],
    -- Production runs behind a TLS proxy; without this, SECURE_SSL_REDIRECT answers 301.
    ["X-Forwarded-Proto"] = "https",
    ["X-Forwarded-For"] = clients[(math.floor(n / 3) % #clients) + 1],
  }
  local referrer = referrers[(math.floor(n / #agents) % #referrers) + 1]
  if mode == "beacon" then
    local page = pages[(n % #pages) + 1]
    headers["Content-Type"] = "text/plain;charset=UTF-8"
    headers["Origin"] = "https://localhost"
    local ref = referrer == "" and "null" or ('"' .. referrer .. '"')
    local body = string.format(
      '{"site_id":"%s","type":"pageview","url":"https://localhost%s","event_id":"%s","referrer":%s,"title":"%s"}',
      site, page[1], ID_HOLE, ref, page[2])
    local request = wrk.format("POST", "/collect", headers, body)
    local hole = request:find(ID_HOLE, 1, true)
    return { request:sub(1, hole - 1), request:sub(hole + #ID_HOLE) }
  end
  if referrer ~= "" then
    headers["Referer"] = referrer
  end
  headers["Accept"] = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
  return wrk.format("GET", wrk.path, headers)
end

function init(args)
  statuses = {}
  counter = id * 7919 -- threads start at different points of the value cycles
  pool = {}
  for i = 0, POOL - 1 do
    pool[i] = format_request(counter + i)
  end
  -- Every beacon gets a new event id, as footfall.js gives each event one: a random
  -- version-4 prefix per thread and run (from the kernel, so two runs never share it) and
  -- a counter for the last 12 hex digits.
  local urandom = assert(io.open("/dev/urandom", "rb"))
  local bytes = { urandom:read(10):byte(1, 10) }
  urandom:close()
  id_prefix = string.format("%02x%02x%02x%02x-%02x%02x-4%01x%02x-%01x%01x%02x-",
    bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7] % 16, bytes[8],
    8 + bytes[9] % 4, bytes[9] % 16, bytes[10])
end

function request()
  counter = counter + 1
  local entry = pool[counter % POOL]
  if mode == "beacon" then
    return entry[1] .. id_prefix .. string.format("%012x", counter) .. entry[2]
  end
  return entry
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses")) do
      total[status] = (total[status] or 0) + n
    end
  end
  local parts = {}
  for status, n in pairs(total) do
    table.insert(parts, string.format('"%d":%d', status, n))
  end
  local e = summary.errors
  io.write(string.format(
    'FFBENCH {"requests":%d,"duration_us":%d,"bytes":%d,"statuses":{%s},' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f}}\n',
    summary.requests, summary.duration, summary.bytes, table.concat(parts, ","),
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
