// postproc/export/assets/diff.js: draws the page comparing two runs
// (postproc/export/html_diff.c) from the JSON in <script id="data">: the
// totals of both runs side by side, then the sites that changed, largest
// change first, each with a bar of its change in bytes and its frames.
// Plain DOM, nothing fetched: the page opens from disk, offline.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("data").textContent);
  var out = document.getElementById("report");
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var a in attrs || {}) e.setAttribute(a, attrs[a]);
    (kids || []).forEach(function (k) {
      e.appendChild(typeof k === "string" ? document.createTextNode(k) : k);
    });
    return e;
  }
  function int(v) { return Number(v).toLocaleString("en-US"); }
  function signed(v) { return (v > 0 ? "+" : v < 0 ? "\u2212" : "\u00b1") + int(Math.abs(v)); }
  function pct(o, n) { return o ? " (" + (n >= o ? "+" : "\u2212") + (100 * Math.abs(n - o) / o).toFixed(1) + "%)" : ""; }
  function section(id, title) {
    var s = el("section", { id: id }, [el("h2", {}, [title])]);
    out.appendChild(s);
    return s;
  }
  var O = D.runs[0], N = D.runs[1];

  var s = section("totals", "Totals");
  s.appendChild(el("p", {}, ["Old: ", el("code", {}, [D.old]), " \u2192 new: ", el("code", {}, [D.new])]));
  var t = el("table", { "class": "sites", id: "totals-table" });
  t.appendChild(el("tr", {}, ["", "old", "new", "change"].map(function (h) { return el("th", {}, [h]); })));
  [["allocations", "allocations"], ["allocated bytes", "allocated_bytes"], ["peak bytes", "peak"],
   ["temporary allocations", "temporary"], ["leaked bytes", "leaked_bytes"], ["leaked blocks", "leaked_blocks"],
   ["libc's caches (bytes, not leaked)", "cached_bytes"]].forEach(function (r) {
    var o = O[r[1]], n = N[r[1]], timed = !O.leaks_only && !N.leaks_only;
    var na = !timed && (r[1] === "peak" || r[1] === "temporary");
    t.appendChild(el("tr", { "data-total": r[1] }, [el("td", {}, [r[0]]),
      el("td", { "class": "n" }, [na ? "-" : int(o)]), el("td", { "class": "n" }, [na ? "-" : int(n)]),
      el("td", { "class": "n" }, [na ? "(not in a trace)" : signed(n - o) + pct(o, n)])]));
  });
  s.appendChild(t);
  [[O, D.old], [N, D.new]].forEach(function (r) {
    if (r[0].unnamed)
      s.appendChild(el("p", { "class": "note" }, [r[1] + " has " + int(r[0].unnamed) + " sites with frames " +
        "without function names, matched by module and offset (only the same binary matches); " +
        "resolve (-r, with debug info) so that they match by function."]));
  });

  s = section("changes", "Sites that changed");
  s.appendChild(el("p", { id: "changes-count" }, [int(D.changed) + " of " + int(D.sites) +
    " sites changed; the " + D.rows.length + " largest changes (bytes, peak or leaked bytes):"]));
  var max = 1;
  D.rows.forEach(function (r) { max = Math.max(max, Math.abs(r[9] - r[4])); });
  t = el("table", { "class": "sites", id: "changes-table" });
  t.appendChild(el("tr", {}, ["#", "bytes", "", "calls", "peak", "leaked", "now", "site"].map(function (h) {
    return el("th", {}, [h]);
  })));
  D.rows.forEach(function (r, i) {
    var db = r[9] - r[4], w = (50 * Math.abs(db) / max).toFixed(1);
    var bar = el("td", { "class": "bar diff" }, [el("span", { "class": db >= 0 ? "grew" : "shrank",
      style: "width:" + w + "%;margin-left:" + (db >= 0 ? "50%" : (50 - w) + "%") }, [])]);
    var frames = r[0] ? r[0].split(" -> ") : [];
    var state = !r[1] ? " [new]" : !r[2] ? " [gone]" : "";
    var site = el("details", {}, [el("summary", {}, [r[13] + state]),
      el("pre", {}, [frames.slice().reverse().map(function (f) { return "  " + f; }).join("\n")])]);
    t.appendChild(el("tr", {}, [el("td", { "class": "n" }, [String(i + 1)]),
      el("td", { "class": "n" }, [signed(db)]), bar,
      el("td", { "class": "n" }, [signed(r[8] - r[3])]), el("td", { "class": "n" }, [signed(r[10] - r[5])]),
      el("td", { "class": "n" }, [signed(r[11] - r[6])]),
      el("td", { "class": "n" }, [int(r[9]) + " B in " + int(r[8]) + " calls"]),
      el("td", { "class": "site" }, [site])]));
  });
  if (!D.rows.length)
    t.appendChild(el("tr", {}, [el("td", { colspan: 8, "class": "none" }, ["none"])]));
  s.appendChild(t);
  document.body.setAttribute("data-ready", "1");
})();
