/*! Footfall browser tracker: cookieless, dependency-free. Served by the collector at /footfall.js.
 *
 *   <script defer src="https://stats.example.com/footfall.js" data-site="my-site"></script>
 *
 * Attributes: data-site (required); data-endpoint (default: the script's origin + "/collect");
 * data-respect-dnt="true" (send nothing when the browser asks not to be tracked);
 * data-auto="false" (no automatic page views: call footfall("pageview") yourself);
 * data-outbound="true" (clicks on links to another host become "outbound" events);
 * data-downloads="true" (clicks on links to files with a common extension become "download"
 * events), or data-downloads="pdf,zip" (your own list of extensions). Outbound and download
 * events carry {url: the link's href}; both are off unless asked for.
 *
 * Custom events: footfall("signup", {plan: "pro"}). Calls made before this script runs are
 * kept by the queue stub and replayed here:
 *   window.footfall = window.footfall || function () {
 *     (window.footfall.q = window.footfall.q || []).push(arguments) }
 *
 * Engaged time: while the page is visible, has focus and its visitor was active lately, the
 * tracker counts engaged milliseconds for the last page view it sent, and sends them as an
 * "engagement" event {engaged_ms, scroll_depth (deepest % of the page seen), pageview_id}
 * when the page is hidden or loses focus, and before an SPA navigation's next page view;
 * under 1 s of new engaged time it sends nothing (the time is kept for the next report).
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
  // A listener that never throws into the page.
  var guard = function (fn) {
    return function (e) {
      try { fn(e); } catch (err) { /* ignore */ }
    };
  };
  var on = function (target, type, fn, options) { target.addEventListener(type, guard(fn), options || false); };

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

    // Sends one event of the current URL (or ``url``) and returns its event_id. Page views
    // and engagement reports carry a referrer (the page view's), other events none.
    var send = function (type, props, referrer, url) {
      var ev = { site_id: site, type: type, url: url || loc.href, event_id: uuid() };
      if (referrer !== undefined) ev.referrer = referrer || null;
      if (type === "pageview") ev.title = d.title;
      if (props) ev.props = props;
      var body = JSON.stringify(ev);
      if (prerendering()) pending.push(body); else post(body);
      return ev.event_id;
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

    // Engaged time of the last page view sent (``view``). A visitor counts as active for
    // ACTIVE_MS after an interaction (or the page view itself): long enough to read a
    // paragraph without touching anything, short enough that a tab left open in front of
    // an empty chair stops counting (the window Parse.ly's engaged time uses). Time is added
    // up lazily at each state change (tick), so no timer runs while the visitor reads.
    var ACTIVE_MS = 5000, MIN_REPORT_MS = 1000;
    var view = null, engaged = 0, since = null, activeUntil = 0, depth = 0;
    var attentive = function () { return d.visibilityState === "visible" && !prerendering() && d.hasFocus(); };
    var tick = function () {
      var now = Date.now();
      if (since !== null) engaged += Math.max(0, Math.min(now, activeUntil) - since);
      since = attentive() ? now : null;
    };
    var active = function () {
      tick();
      activeUntil = Date.now() + ACTIVE_MS;
    };
    // The deepest share of the document seen so far, in whole percent (100: no scrolling needed).
    var measure = function () {
      var s = d.scrollingElement || d.documentElement;
      var seen = s.scrollHeight <= s.clientHeight ? 100 : Math.round((100 * (s.scrollTop + s.clientHeight)) / s.scrollHeight);
      depth = Math.max(depth, Math.min(100, seen));
    };
    // Reports the engaged time gathered since the last report, unless it is under a second
    // (then it waits for the next occasion). Without an event_id (no Web Crypto) the page
    // view cannot be named, so nothing is reported.
    var report = function () {
      if (!view || !view.id) return;
      tick();
      measure();
      if (engaged < MIN_REPORT_MS) return;
      send("engagement", { engaged_ms: Math.round(engaged), scroll_depth: depth, pageview_id: view.id }, view.ref, view.url);
      engaged = 0;
    };

    // Page views: once on load, then whenever an SPA changes path or query (not the hash);
    // an SPA page view's referrer is the previous in-app URL. data-auto="false" turns both off.
    // The previous page view's engagement is reported first, so it arrives before the next view.
    var auto = attr("auto") !== "false", lastPath = null, lastUrl = d.referrer;
    var pageview = function (props) {
      report();
      lastPath = loc.pathname + loc.search;
      view = { url: loc.href, ref: lastUrl || null };
      view.id = send("pageview", props, view.ref);
      lastUrl = loc.href;
      engaged = depth = 0;
      active(); // asking for a page is an interaction
      // No measuring here: right after an SPA navigation the old page may still be scrolled.
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
    on(w, "popstate", function () { setTimeout(onNavigate, 0); });

    // Interactions keep the visitor active; capturing on window also sees scrolls of inner elements.
    var passive = { capture: true, passive: true };
    var kinds = ["mousemove", "mousedown", "keydown", "touchstart", "scroll"];
    for (var k = 0; k < kinds.length; k++) on(w, kinds[k], active, passive);
    on(w, "scroll", measure, { passive: true });
    on(w, "focus", active);
    // Blur also fires when focus moves into an iframe of the page, where document.hasFocus()
    // stays true: look again once focus has settled, so such time keeps counting.
    on(w, "blur", function () {
      report();
      setTimeout(guard(tick), 0);
    });
    on(w, "pagehide", report);

    // Outbound links and downloads, when asked for: left or middle clicks on <a href>. A file
    // on another host counts as a download only.
    var outbound = attr("outbound") === "true", downloads = attr("downloads");
    downloads = downloads === "true"
      ? "pdf,xlsx,docx,pptx,txt,rtf,csv,exe,dmg,pkg,msi,deb,rpm,apk,iso,7z,rar,gz,zip,avi,mov,mp4,mpeg,wmv,mp3,wav,epub"
      : downloads === "false" ? "" : downloads || "";
    var extensions = downloads.toLowerCase().split(",").map(function (x) { return x.trim().replace(/^\./, ""); })
      .filter(function (x) { return x; });
    var onClick = function (e) {
      if (e.type === "auxclick" && e.button !== 1) return;
      var a = e.target && e.target.closest && e.target.closest("a[href]");
      if (!a || typeof a.href !== "string" || !/^https?:$/.test(a.protocol)) return; // SVG links have no plain href
      var path = a.pathname.toLowerCase(), file = false;
      for (var i = 0; i < extensions.length && !file; i++) file = path.slice(-extensions[i].length - 1) === "." + extensions[i];
      if (file) w.footfall("download", { url: a.href });
      else if (outbound && a.host !== loc.host) w.footfall("outbound", { url: a.href });
    };
    if (outbound || extensions.length) {
      on(d, "click", onClick, true);
      on(d, "auxclick", onClick, true);
    }

    // A prerendered page is sent once the visitor actually sees it; a hidden page reports
    // its engagement (visibilitychange is the last event a mobile browser reliably fires).
    var activate = function () {
      if (prerendering()) return;
      while (pending.length) post(pending.shift());
    };
    on(d, "prerenderingchange", function () { activate(); active(); }); // the visitor just opened it
    on(d, "visibilitychange", function () {
      activate();
      if (d.visibilityState === "hidden") report(); else tick();
    });

    if (auto) pageview();
    if (queued) for (var i = 0; i < queued.length; i++) w.footfall.apply(null, queued[i]);
  } catch (e) { /* tracking must never break the page */ }
})(window, document);
