/* The Live events page (dashboard/live_events.py): polls /dashboard/events/poll every 500 ms
 * while the page is open and not paused, and puts new events on top. Events are shown as text
 * only (textContent): nothing an event holds is ever parsed as HTML. */
(function () {
  "use strict";
  var POLL_MS = 500, KEEP = 100;
  var state = { list: null, key: null, cursor: null, busy: false, paused: false };

  var byId = function (id) { return document.getElementById(id); };
  var field = function (id) { var el = byId(id); return el ? el.value.trim() : ""; };
  var kind = function () { var el = document.querySelector("#events-kind input:checked"); return el ? el.value : "events"; };

  document.addEventListener("click", function (e) {
    if (!e.target || e.target.id !== "events-pause") return;
    state.paused = !state.paused;
    e.target.textContent = state.paused ? "Resume" : "Pause";
  });

  var show = function (body) {
    var list = state.list, i, li;
    for (i = body.rows.length - 1; i >= 0; i--) { // oldest first, so the newest ends on top
      li = document.createElement("li");
      li.className = body.rows[i].refused ? "event-row refused" : "event-row";
      li.textContent = body.rows[i].line;
      list.insertBefore(li, list.firstChild);
    }
    while (list.children.length > KEEP) list.removeChild(list.lastChild);
    var status = byId("events-status");
    status.textContent = body.one_in > 1
      ? "Busy: showing 1 in " + body.one_in + " events"
      : list.children.length ? "Showing every event, newest first" : status.dataset.waiting;
  };

  var problem = function (text) {
    var error = byId("events-error");
    if (!error) return;
    error.textContent = text || "";
    error.hidden = !text;
  };

  var tick = function () {
    var list = byId("events-list");
    if (!list) { state.list = null; return; }
    if (list !== state.list) { // the page was (re)opened
      state = { list: list, key: null, cursor: null, busy: false, paused: false };
    }
    if (state.busy || state.paused) return;
    var params = { site: new URLSearchParams(location.search).get("site") || "", kind: kind(),
                   type: field("events-type"), path: field("events-path") };
    var key = JSON.stringify(params);
    if (key !== state.key) { state.key = key; state.cursor = null; list.textContent = ""; }
    if (state.cursor !== null) params.cursor = state.cursor;
    state.busy = true;
    fetch("/dashboard/events/poll?" + new URLSearchParams(params), { credentials: "same-origin" })
      .then(function (response) {
        return response.json().then(function (body) { return { ok: response.ok, body: body }; });
      })
      .then(function (answer) {
        if (key !== state.key || list !== state.list) return; // the filters changed meanwhile
        if (!answer.ok) { problem(answer.body.error); state.cursor = null; return; }
        problem("");
        state.cursor = answer.body.cursor;
        show(answer.body);
      })
      .catch(function () { problem("The live events could not be read; retrying."); })
      .then(function () { state.busy = false; });
  };
  setInterval(tick, POLL_MS);
})();
