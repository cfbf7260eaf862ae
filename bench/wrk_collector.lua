-- wrk script of bench/collector_bench.py. FFBENCH_MODE=get: GET wrk's URL with browser-like headers;
-- FFBENCH_MODE=beacon: POST /collect a tracker-like beacon (text/plain JSON, as navigator.sendBeacon
-- sends it) for site FFBENCH_SITE, each with a new event id, as footfall.js gives every event one.
-- User-Agent, referrer, page and client address vary among a few realistic values; the client comes in
-- X-Forwarded-For, as from the TLS proxy, so geolocation and the visitor id see public addresses.
-- Every response's status is counted; done() prints one line "FFBENCH {json}" for the bench.

local mode, site = os.getenv("FFBENCH_MODE") or "get", os.getenv("FFBENCH_SITE") or "bench"
local agents = {
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
  "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
}
local referrers = { "https://www.google.com/", "https://localhost/", "https://x.com/", "",
  "https://news.ycombinator.com/item?id=42000000" }
local clients = { "81.2.69.142", "89.160.20.112", "216.160.83.56", "175.16.199.1", "2.125.160.216", "2a02:cf40::1" }
local pages = { { "/", "Home" }, { "/products", "Products" }, { "/products/item-7?color=green", "Product 7" },
  { "/blog/2026/spring-planting", "Spring planting" },
  { "/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=spring", "Pricing" },
  { "/about", "About us" }, { "/contact", "Contact" } }
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("id", #threads)
end

-- Requests are formatted once per thread, in init(), and request() only picks the next one (splicing
-- in a beacon's event id): beacons built in Lua cost wrk more than GETs, charged to the beacon's ratio.
local POOL, HOLE = 2520, string.rep("@", 36) -- a multiple of every cycle's length; a UUID's place

local function format_request(n)
  local headers = {
    ["User-Agent"] = agents[n % #agents + 1],
    ["X-Forwarded-Proto"] = "https", -- as behind the TLS proxy; else SECURE_SSL_REDIRECT answers 301
    ["X-Forwarded-For"] = clients[math.floor(n / 3) % #clients + 1],
  }
  local referrer = referrers[math.floor(n / #agents) % #referrers + 1]
  if mode ~= "beacon" then
    headers["Referer"] = referrer ~= "" and referrer or nil
    headers["Accept"] = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    return wrk.format("GET", wrk.path, headers)
  end
  local page, ref = pages[n % #pages + 1], referrer == "" and "null" or ('"' .. referrer .. '"')
  headers["Content-Type"], headers["Origin"] = "text/plain;charset=UTF-8", "https://localhost"
  local body = string.format('{"site_id":"%s","type":"pageview","url":"https://localhost%s","event_id":"%s",'
    .. '"referrer":%s,"title":"%s"}', site, page[1], HOLE, ref, page[2])
  local request = wrk.format("POST", "/collect", headers, body)
  local hole = request:find(HOLE, 1, true)
  return { request:sub(1, hole - 1), request:sub(hole + #HOLE) }
end

function init(args)
  statuses, counter, pool = {}, id * 7919, {} -- threads start at different points of the cycles
  for i = 0, POOL - 1 do
    pool[i] = format_request(counter + i)
  end
  -- Event ids: a random version-4 prefix per thread and run, a counter for the last 12 hex digits.
  local urandom = assert(io.open("/dev/urandom", "rb"))
  local hex = urandom:read(9):gsub(".", function(c) return string.format("%02x", c:byte()) end)
  urandom:close()
  id_prefix = hex:sub(1, 8) .. "-" .. hex:sub(9, 12) .. "-4" .. hex:sub(13, 15) .. "-a" .. hex:sub(16, 18) .. "-"
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
  local total, parts, e = {}, {}, summary.errors
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses")) do
      total[status] = (total[status] or 0) + n
    end
  end
  for status, n in pairs(total) do
    table.insert(parts, string.format('"%d":%d', status, n))
  end
  io.write(string.format('FFBENCH {"requests":%d,"duration_us":%d,"statuses":{%s},"errors":{"connect":%d,'
    .. '"read":%d,"write":%d,"status":%d,"timeout":%d},"latency_us":{"p50":%d,"p99":%d}}\n',
    summary.requests, summary.duration, table.concat(parts, ","), e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(99)))
end
