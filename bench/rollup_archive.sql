-- One site's local day of archive rows for bench/rollup_bench.py, which fills in the names in
-- braces (str.format): n distinct events from generator index first_g, and re-delivered copies.
WITH e1 AS (
    SELECT g, u(g, 1) AS r, u(g, 4) AS uv, u(g, 5) AS up,
        -- 70% of the traffic in the site's daytime (07-23 h local), the rest spread evenly
        CASE WHEN u(g, 2) < 0.7 THEN 7 + floor(16 * u(g, 7)) ELSE floor(24 * u(g, 7)) END AS lhour,
        CASE WHEN u(g, 3) < {bot_rate} THEN TRUE WHEN u(g, 3) < {bot_edge} THEN NULL ELSE FALSE END AS is_bot,
        CASE WHEN u(g, 6) < 0.80 THEN 'pageview' WHEN u(g, 6) < 0.88 THEN 'engagement'
             WHEN u(g, 6) < 0.97 THEN 'request'
             ELSE ['signup', 'click', 'download', 'outbound:link'][1 + floor(4 * u(g, 8))::INT] END AS type
    FROM (SELECT {first_g} + range AS g FROM range({n}))
),
e2 AS (
    SELECT *,
        epoch_ms(timezone('{tz}', TIMESTAMP '{day} 00:00:00'
            + to_microseconds((lhour * 3600e6 + floor(3600e6 * u(g, 9)))::BIGINT))) AS ts,
        -- bots crawl evenly, people favour a few pages
        floor({pages} * CASE WHEN is_bot THEN up ELSE pow(up, 3) END)::INT AS k,
        floor({visitors} * pow(uv, 1.5))::INT AS v,
        '{host}' AS host
    FROM e1
),
e3 AS (
    SELECT *,
        CASE WHEN u(g, 10) < 0.0002 THEN NULL WHEN k = 0 THEN '/'
             WHEN k % 41 = 7 THEN '/tags/caf%C3%A9-' || (k % 13)
             ELSE '{prefix}' || k END AS path,
        CASE WHEN u(g, 11) < 0.01 THEN NULL
             ELSE substr(md5('{site_id}/{day}/' || v), 1, 16) END AS visitor_id,
        {ref_domain} AS ref_domain
    FROM e2
),
events AS (
    SELECT
        concat_ws('-', substr(h, 1, 8), substr(h, 9, 4), '7' || substr(h, 14, 3), substr(h, 17, 4),
                  substr(h, 21, 12)) AS event_id,
        type, ts,
        ts + CASE WHEN u(g, 12) < 0.02 THEN floor(6 * 3600e3 * u(g, 13))  -- late: an offline beacon
                  ELSE 20 + floor(2000 * u(g, 13)) END::BIGINT AS received_at,
        CASE WHEN path IS NULL THEN NULL ELSE 'https://' || host || path END AS url,
        host, path,
        CASE WHEN path IS NULL THEN NULL ELSE 'Page ' || k || ' - {site_id}' END AS title,
        {referrer} AS referrer,
        ref_domain,
        {ref_type} AS ref_type,
        CASE WHEN u(g, 14) < 0.05 THEN 'newsletter' END AS utm_source,
        CASE WHEN u(g, 14) < 0.05 THEN 'email' END AS utm_medium,
        CASE WHEN u(g, 14) < 0.05 THEN 'launch-' || floor(4 * u(g, 15))::INT END AS utm_campaign,
        NULL::VARCHAR AS utm_term, NULL::VARCHAR AS utm_content,
        visitor_id,
        CASE WHEN is_bot THEN ['Googlebot', 'bingbot', 'AhrefsBot'][1 + floor(3 * u(g, 16))::INT]
             ELSE ['Chrome', 'Safari', 'Firefox', 'Edge'][1 + floor(4 * pow(u(g, 16), 2))::INT] END AS ua_browser,
        CASE WHEN is_bot THEN NULL
             ELSE ['Windows', 'iOS', 'Android', 'macOS', 'Linux'][1 + floor(5 * u(g, 17))::INT] END AS ua_os,
        CASE WHEN is_bot THEN 'bot' WHEN u(g, 17) < 0.4 THEN 'desktop' WHEN u(g, 17) < 0.95 THEN 'mobile'
             ELSE 'tablet' END AS ua_device,
        coalesce(is_bot, FALSE) AS is_bot_flag, is_bot,
        ['US', 'DE', 'IN', 'AU', 'GB', 'FR', 'CA', 'BR', 'JP', 'NL'][1 + floor(10 * pow(u(g, 18), 2))::INT]
            AS country,
        CASE WHEN type = 'request' THEN 'GET' END AS method,
        CASE WHEN type = 'request' THEN CASE WHEN u(g, 19) < 0.97 THEN 200 ELSE 404 END END::INT AS status,
        CASE WHEN type = 'request' THEN round(1 + 200 * pow(u(g, 20), 3), 3) END AS duration_ms,
        -- engagement reports: engaged ms (1 % over the cap, 1 % negative), scroll depth, and the
        -- page view they belong to (5 % without); custom events: a plan, an item of 300 (skewed,
        -- so the top-100 cap bites) and a quantity
        CASE WHEN type = 'engagement' THEN
                 '{{"engaged_ms":' || CASE WHEN u(g, 22) < 0.01 THEN 4000000 WHEN u(g, 22) < 0.02 THEN -1
                                          ELSE floor(120000 * pow(u(g, 23), 2))::BIGINT END
                 || ',"scroll_depth":' || floor(101 * u(g, 24))::INT
                 || CASE WHEN u(g, 25) < 0.05 THEN '' ELSE ',"pageview_id":"pv-' || (g // 3) || '"' END || '}}'
             WHEN type NOT IN ('pageview', 'request') THEN
                 '{{"plan":"' || ['pro', 'free', 'team', 'enterprise'][1 + floor(4 * u(g, 22))::INT]
                 || '","item":"sku-' || floor(300 * pow(u(g, 23), 2))::INT
                 || '","qty":' || floor(5 * u(g, 24))::INT
                 -- an amount as text (both engines read a string's text alike): 2 % invalid, 1 % with 5
                 -- places; a currency, 3 % lower-case and 2 % not three letters
                 || ',"amount":"' || CASE WHEN u(g, 26) < 0.01 THEN 'lots' WHEN u(g, 26) < 0.02 THEN '-5'
                                          WHEN u(g, 26) < 0.03 THEN round(1000 * u(g, 27), 5)::DECIMAL(12, 5)::VARCHAR
                                          ELSE round(200 * u(g, 27), 2)::DECIMAL(10, 2)::VARCHAR END
                 || '","currency":"' || CASE WHEN u(g, 28) < 0.03 THEN 'usd' WHEN u(g, 28) < 0.05 THEN 'EURO'
                                             WHEN u(g, 28) < 0.65 THEN 'EUR' ELSE 'USD' END || '"}}' END AS props,
        (hash(coalesce(visitor_id, h)) % 6)::INT AS kafka_partition,
        g AS kafka_offset
    FROM (SELECT *, md5('{site_id}:' || g) AS h FROM e3)
),
rows AS (
    SELECT * FROM events
    UNION ALL  -- re-delivered copies: same event, received later, a new offset, a later batch
    SELECT * REPLACE (received_at + 1000 + floor(3 * 3600e3 * u(kafka_offset, 21))::BIGINT AS received_at,
                      kafka_offset + 1000000000000 AS kafka_offset)
    FROM events WHERE kafka_offset < {dup_end}
)
SELECT * EXCLUDE (is_bot_flag),
    to_json({{event_id: event_id, site_id: '{site_id}', type: type, ts: ts, received_at: received_at,
              schema: 1, url: url, host: host, path: path, title: title, referrer: referrer,
              ref_domain: ref_domain, ref_type: ref_type, visitor_id: visitor_id,
              ua: {{browser: ua_browser, os: ua_os, device: ua_device, is_bot: is_bot_flag}},
              country: country}})::BLOB AS raw,
    strftime(make_timestamptz(ts * 1000), '%Y-%m-%d') AS date,
    strftime(make_timestamptz(ts * 1000), '%H') AS hour,
    -- Which file: the archiver writes each batch as one file per partition, compaction merges an
    -- hour's files without duplicates; what arrives later (re-deliveries, late events) sits in
    -- files of its own, by arrival time.
    CASE WHEN kafka_offset < 1000000000000 AND received_at - ts < 3600000 THEN 'compacted'
         ELSE 'late' || (received_at // 21600000) END AS batch
FROM rows
ORDER BY date, hour, batch, kafka_partition, kafka_offset
