/*! Footfall browser tracker: cookieless, dependency-free. Served by the collector at /footfall.js.
 *
 *   <script defer src="https://stats.example.com/footfall.js" data-site="my-site"></script>
 *
 * Attributes: data-site (required); data-endpoint (default: the script's origin + "/collect");
 * data-respect-dnt="true" (send nothing when the browser asks not to be tracked);
 * data-auto="false" (no automatic page views: call footfall("pageview") yourself).
 *
 * Custom events: footfall("signup", {plan: "pro"}). Calls made before this script runs are
 * kept by the queue stub and replayed here:
 *   window.footfall = window.footfall || function () {
 *     (window.footfall.q = window.footfall.q || []).push(arguments) }
 *
 * Every event carries a client-made event_id (a UUID), so a retried send is deduplicated
 * downstream. Beacons go out as text/plain (no CORS preflight) and carry nothing but what
 * is below: no cookies, no storage. The script defines no global but window.footfall and
 * never throws into the page.
 */
(function (w, d) {
  "use strict";
  var nav = w.navigator, loc = w.location, hist = w.history;
  var queued = w.footfall && w.footfall.q; // calls made through the stub before we ran
  var noop = function () {};
  w.footfall = noop; // stays a no-op if tracking is off, so calls from the page never fail

  try {
    var script = d.currentScript || d.querySelector("script[data-site]");
    var attr = function (name) { return script && script.getAttribute("data-" + name); };
    var site = attr("site");
    if (!site || loc.protocol === "file:") return;
    if (attr("respect-dnt") === "true" && (nav.doNotTrack === "1" || nav.globalPrivacyControl === true)) return;
    var endpoint = attr("endpoint") || new URL(script.src, loc.href).origin + "/collect";
    var crypto = w.crypto;
    var pending = []; // bodies held back while the page is prerendered (nobody has seen it yet)

    // A random (v4) UUID; undefined without Web Crypto (the collector then mints one).
    var uuid = function () {
      if (!crypto) return undefined;
      if (crypto.randomUUID) return crypto.randomUUID(); // secure contexts only
      var b = crypto.getRandomValues(new Uint8Array(16)), h = [], i;
      b[6] = (b[6] & 15) | 64; // version 4
      b[8] = (b[8] & 63) | 128; // RFC 4122 variant
      for (i = 0; i < 16; i++) h.push((b[i] + 256).toString(16).slice(1));
      h = h.join("");
      return h.slice(0, 8) + "-" + h.slice(8, 12) + "-" + h.slice(12, 16) + "-" + h.slice(16, 20) + "-" + h.slice(20);
    };

    var prerendering = function () { return d.prerendering || d.visibilityState === "prerender"; };

    // sendBeacon survives page unload; a text/plain Blob keeps it a "simple" request (no
    // preflight). fetch with keepalive is the fallback when it is missing or refuses.
    var post = function (body) {
      try {
        if (nav.sendBeacon && nav.sendBeacon(endpoint, new Blob([body], { type: "text/plain" }))) return;
      } catch (e) { /* fall through to fetch */ }
      if (w.fetch) {
        w.fetch(endpoint, {
          method: "POST", body: body, keepalive: true, credentials: "omit",
          headers: { "Content-Type": "text/plain" }
        })["catch"](noop);
      }
    };

    var send = function (type, props, referrer) {
      var ev = { site_id: site, type: type, url: loc.href, event_id: uuid() };
      if (type === "pageview") {
        ev.referrer = referrer || null;
        ev.title = d.title;
      }
      if (props) ev.props = props;
      var body = JSON.stringify(ev);
      if (prerendering()) pending.push(body); else post(body);
    };

    // Props the collector accepts: at most 32 keys of ≤ 64 characters; values are strings of
    // ≤ 512 characters, finite numbers, booleans or null (anything else becomes a string).
    var clean = function (props) {
      if (!props || typeof props !== "object") return undefined;
      var out = {}, n = 0, k, v;
      for (k in props) {
        if (!Object.prototype.hasOwnProperty.call(props, k) || !k || k.length > 64 || n >= 32) continue;
        v = props[k];
        if (v === undefined || typeof v === "function") continue;
        if (v !== null && typeof v !== "boolean" && !(typeof v === "number" && isFinite(v))) v = String(v).slice(0, 512);
        out[k] = v;
        n++;
      }
      return n ? out : undefined;
    };

    // Page views: once on load, then whenever an SPA changes path or query (not the hash);
    // an SPA page view's referrer is the previous in-app URL. data-auto="false" turns both off.
    var auto = attr("auto") !== "false", lastPath = null, lastUrl = d.referrer;
    var pageview = function (props) {
      lastPath = loc.pathname + loc.search;
      send("pageview", props, lastUrl);
      lastUrl = loc.href;
    };
    var onNavigate = function () {
      try {
        if (auto && lastPath !== null && loc.pathname + loc.search !== lastPath) pageview();
      } catch (e) { /* never break the host's navigation */ }
    };

    // The public function; name "pageview" sends a page view of the current URL.
    w.footfall = function (name, props) {
      try {
        if (name === "pageview") pageview(clean(props));
        else if (typeof name === "string" && /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/.test(name)) send(name, clean(props));
      } catch (e) { /* never throw into the page */ }
    };

    // SPA navigation. Deferred a tick so the app can set document.title for the new page.
    var wrap = function (method) {
      var original = hist[method];
      if (typeof original !== "function") return;
      hist[method] = function () {
        var result = original.apply(this, arguments);
        setTimeout(onNavigate, 0);
        return result;
      };
    };
    wrap("pushState");
    wrap("replaceState");
    w.addEventListener("popstate", function () { setTimeout(onNavigate, 0); });

    // Outbound links: left or middle clicks on <a href> to another host.
    var onClick = function (e) {
      try {
        if (e.type === "auxclick" && e.button !== 1) return;
        var a = e.target && e.target.closest && e.target.closest("a[href]");
        if (!a || typeof a.href !== "string") return; // SVG links have no plain href
        if (/^https?:$/.test(a.protocol) && a.host !== loc.host) w.footfall("outbound", { url: a.href });
      } catch (err) { /* ignore */ }
    };
    d.addEventListener("click", onClick, true);
    d.addEventListener("auxclick", onClick, true);

    // A prerendered page is sent once the visitor actually sees it.
    var activate = function () {
      if (prerendering()) return;
      while (pending.length) post(pending.shift());
    };
    d.addEventListener("prerenderingchange", activate);
    d.addEventListener("visibilitychange", activate);

    if (auto) pageview();
    if (queued) for (var i = 0; i < queued.length; i++) w.footfall.apply(null, queued[i]);
  } catch (e) { /* tracking must never break the page */ }
})(window, document);
