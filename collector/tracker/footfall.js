/*! Footfall tracker (readable source: collector/tracker/footfall.js) */
/* The browser tracker: cookieless, dependency-free. Served by the collector at /footfall.js,
 * minified (npm run build, see package.json).
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
((w, d) => {
  "use strict";
  const nav = navigator, loc = location, hist = history;
  const queued = w.footfall?.q; // calls made through the stub before we ran
  const noop = () => {};
  const ACTIVE_MS = 5000, MIN_REPORT_MS = 1000; // engaged time: see below
  w.footfall = noop; // stays a no-op if tracking is off, so calls from the page never fail
  // A listener that never throws into the page.
  const guard = fn => e => {
    try { fn(e); } catch { /* ignore */ }
  };
  const on = (target, type, fn, options) => target.addEventListener(type, guard(fn), options);

  try {
    const script = d.currentScript || d.querySelector("script[data-site]");
    // The script tag's data-* attributes: data-respect-dnt is data.respectDnt, and so on.
    const data = script?.dataset || {};
    if (!data.site || loc.protocol == "file:") return;
    if (data.respectDnt == "true" && (nav.doNotTrack == "1" || nav.globalPrivacyControl === true)) return;
    // (script.src is already absolute; the page's URL is the base only for a script without one.)
    const endpoint = data.endpoint || new URL(script.src, loc).origin + "/collect";
    const crypto = w.crypto;
    const pending = []; // bodies held back while the page is prerendered (nobody has seen it yet)

    // A random (v4) UUID; undefined without Web Crypto (the collector then mints one).
    // randomUUID exists in secure contexts only. Elsewhere each 0, 1 and 8 of the template
    // becomes a random hex digit, c ^ (random & 15 >> c / 4): for 0 and 1 any of 0-f, for
    // the 8 one of 8-b (15 >> 2 = 3 randomises only the low two bits: the RFC 4122
    // variant); the 4 (the version) and the dashes stay.
    const uuid = () => crypto && (crypto.randomUUID?.() ||
      "10000000-1000-4000-8000-100000000000".replace(/[018]/g, c =>
        (c ^ crypto.getRandomValues(new Uint8Array(1))[0] & 15 >> c / 4).toString(16)));

    const prerendering = () => d.prerendering || d.visibilityState == "prerender";

    // sendBeacon survives page unload; a text/plain Blob keeps it a "simple" request (no
    // preflight). fetch with keepalive is the fallback when sendBeacon refuses, throws, or
    // is missing (calling it then throws too).
    const post = body => {
      try {
        if (nav.sendBeacon(endpoint, new Blob([body], { type: "text/plain" }))) return;
      } catch { /* fall through to fetch */ }
      w.fetch?.(endpoint, {
        method: "POST", body, keepalive: true, credentials: "omit", headers: { "Content-Type": "text/plain" }
      }).catch(noop);
    };

    // Sends one event of the current URL and returns its event_id. ``extra`` adds or overrides
    // fields: page views and engagement reports carry the page view's url and referrer.
    // (JSON.stringify leaves out fields that are undefined, such as props when there are none.)
    const send = (type, props, extra) => {
      const ev = { site_id: data.site, type, url: loc.href, event_id: uuid(), props, ...extra };
      const body = JSON.stringify(ev);
      prerendering() ? pending.push(body) : post(body);
      return ev.event_id;
    };

    // Props the collector accepts: at most 32 keys of ≤ 64 characters; values are strings of
    // ≤ 512 characters, finite numbers, booleans or null (anything else becomes a string;
    // undefined and functions are left out). Object.entries gives the own enumerable keys,
    // in order; the first 32 that are kept are sent. No props: undefined.
    const clean = props => {
      if (!props || typeof props != "object") return;
      const kept = Object.entries(props)
        .filter(([k, v]) => k && k.length <= 64 && v !== undefined && typeof v != "function")
        .slice(0, 32);
      if (kept.length) {
        return Object.fromEntries(kept.map(([k, v]) => [k,
          v === null || typeof v == "boolean" || Number.isFinite(v) ? v : String(v).slice(0, 512)]));
      }
    };

    // Engaged time of the last page view sent (``view``, its url and referrer; ``viewId``, its
    // event_id). A visitor counts as active for ACTIVE_MS after an interaction (or the page
    // view itself): long enough to read a paragraph without touching anything, short enough
    // that a tab left open in front of an empty chair stops counting (the window Parse.ly's
    // engaged time uses). Time is added up lazily at each state change (tick), so no timer
    // runs while the visitor reads. ``since`` is when counting (re)started, or Infinity while
    // the page is not attentive, so that the time added is then 0.
    let view, viewId, engaged = 0, since = Infinity, activeUntil = 0, depth = 0;
    const tick = () => {
      const now = Date.now();
      engaged += Math.max(0, Math.min(now, activeUntil) - since);
      // Attentive: visible, not prerendered, and the window (or an iframe in it) has focus.
      since = !d.hidden && !prerendering() && d.hasFocus() ? now : Infinity;
    };
    const active = () => {
      tick();
      activeUntil = Date.now() + ACTIVE_MS;
    };
    // The deepest share of the document seen so far, in whole percent (100: no scrolling needed).
    const measure = () => {
      const { scrollTop, clientHeight, scrollHeight } = d.scrollingElement || d.documentElement;
      depth = Math.max(depth, scrollHeight <= clientHeight ? 100
        : Math.min(100, Math.round((100 * (scrollTop + clientHeight)) / scrollHeight)));
    };
    // Reports the engaged time gathered since the last report, unless it is under a second
    // (then it waits for the next occasion). Without an event_id (no Web Crypto) the page
    // view cannot be named, so nothing is reported. (Date.now() is whole milliseconds, so
    // engaged is too.)
    const report = () => {
      if (!viewId) return;
      tick();
      measure();
      if (engaged < MIN_REPORT_MS) return;
      send("engagement", { engaged_ms: engaged, scroll_depth: depth, pageview_id: viewId }, view);
      engaged = 0;
    };

    // Page views: once on load, then whenever an SPA changes path or query (not the hash);
    // an SPA page view's referrer is the previous in-app URL. data-auto="false" turns both off.
    // The previous page view's engagement is reported first, so it arrives before the next view.
    const auto = data.auto != "false";
    let lastPath, lastUrl = d.referrer;
    const pageview = props => {
      report();
      lastPath = loc.pathname + loc.search;
      view = { url: loc.href, referrer: lastUrl || null };
      viewId = send("pageview", props, { ...view, title: d.title });
      lastUrl = loc.href;
      engaged = depth = 0;
      active(); // asking for a page is an interaction
      // No measuring here: right after an SPA navigation the old page may still be scrolled.
    };

    // The public function; name "pageview" sends a page view of the current URL. Other names:
    // a letter or digit, then up to 63 letters, digits or _.:- ([^\W_] is [A-Za-z0-9]).
    const track = (name, props) => {
      try {
        if (name == "pageview") pageview(clean(props));
        else if (typeof name == "string" && /^[^\W_][\w.:-]{0,63}$/.test(name)) send(name, clean(props));
      } catch { /* never throw into the page */ }
    };
    w.footfall = track;

    // SPA navigation. Deferred a tick so the app can set document.title for the new page (the
    // timer is set before the history call, and fires after it). The first page view (on
    // load, before any timer can fire) has set lastPath; the guard never breaks the host's
    // navigation.
    const onNavigate = guard(() => auto && loc.pathname + loc.search != lastPath && pageview());
    const navigated = () => setTimeout(onNavigate);
    for (const method of ["pushState", "replaceState"]) {
      const original = hist[method];
      if (typeof original == "function") hist[method] = function () {
        navigated();
        return original.apply(this, arguments);
      };
    }
    on(w, "popstate", navigated);

    // Interactions keep the visitor active; capturing on window also sees scrolls of inner
    // elements. The scroll depth is the document's only.
    const passive = { capture: true, passive: true };
    for (const type of "mousemove mousedown keydown touchstart scroll".split(" ")) on(w, type, active, passive);
    on(w, "scroll", measure, { passive: true });
    on(w, "focus", active);
    // Blur also fires when focus moves into an iframe of the page, where document.hasFocus()
    // stays true: look again once focus has settled, so such time keeps counting.
    on(w, "blur", () => {
      report();
      setTimeout(guard(tick));
    });
    on(w, "pagehide", report);

    // Outbound links and downloads, when asked for: left or middle clicks on <a href>. A file
    // on another host counts as a download only.
    const outbound = data.outbound == "true", downloads = data.downloads;
    const extensions = (downloads == "true"
      ? "pdf,xlsx,docx,pptx,txt,rtf,csv,exe,dmg,pkg,msi,deb,rpm,apk,iso,7z,rar,gz,zip,avi,mov,mp4,mpeg,wmv,mp3,wav,epub"
      : downloads == "false" ? "" : downloads || "")
      .toLowerCase().split(",").map(x => x.trim().replace(/^\./, "")).filter(x => x);
    const onClick = e => {
      const a = e.target.closest?.("a[href]");
      // http(s) links only. SVG links have no protocol (nor a plain href): left out too.
      if (!a || !/^https?:$/.test(a.protocol)) return;
      const path = a.pathname.toLowerCase();
      // A download wins over outbound; the name false (neither) sends nothing.
      track(extensions.some(x => path.endsWith("." + x)) ? "download"
        : outbound && a.host != loc.host && "outbound", { url: a.href });
    };
    if (outbound || extensions.length) {
      on(d, "click", onClick, true);
      on(d, "auxclick", e => e.button == 1 && onClick(e), true);
    }

    // A prerendered page's held bodies are sent once the visitor actually sees it
    // (prerenderingchange; visibilitychange for the older "prerender" visibility state); a
    // hidden page reports its engagement (visibilitychange is the last event a mobile
    // browser reliably fires).
    const activate = () => prerendering() || pending.splice(0).map(post);
    on(d, "prerenderingchange", () => { activate(); active(); }); // the visitor just opened it
    on(d, "visibilitychange", () => {
      activate();
      d.hidden ? report() : tick();
    });

    if (auto) pageview();
    for (const args of queued || []) track(...args);
  } catch { /* tracking must never break the page */ }
})(window, document);
