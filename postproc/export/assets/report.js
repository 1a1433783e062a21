// postproc/export/assets/report.js: draws the HTML report (postproc/export/html.c) from
// the JSON in <script id="data">: the summary, memory over time, the flame
// graph and the ranked tables. Plain DOM and SVG, no library, nothing
// fetched: the page must open from disk, offline, in any current browser.
//
// Every view is computed here from per-site numbers: the whole run from
// each site's five costs (site_costs), a range of the chart from the
// sites' timeline (ticks: what each site did in each interval), a moment
// from the same ticks (what each site held then). A view's costs go up
// each site's path in the tree (site_leaf, the nodes' parents), and the
// flame graph, the tables, Bottom-up, Top-down and Callers and callees all
// read the tree's costs, so they always agree with each other. Frames
// narrower than half a pixel are not drawn (their share is still in their
// parent's numbers), which keeps the page quick on traces with thousands
// of stacks; tree tables draw a row's children only when it is opened.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("data").textContent);
  var out = document.getElementById("report");
  var SVG = "http://www.w3.org/2000/svg";
  var NK = D.costs.length, STRIDE = 2 + NK;
  // A snapshot ("N LABEL"): its blocks were live at that moment, not leaked.
  var SNAP = D.snapshot ? D.snapshot.replace(/^(\d+) (.+)$/, "$1 ($2)") : null;
  var LABEL = { calls: "calls", bytes: "allocated bytes", peak: "bytes at the peak",
                temporary: "temporary allocations", leaked: SNAP ? "live bytes" : "leaked bytes",
                live: "live bytes", cached: "libc's caches" };
  var IS_BYTES = { bytes: true, peak: true, leaked: true, live: true, cached: true };
  var PSTRIDE = 7; // series points: start, live, max live, allocations, bytes, releases, temporary

  // ---- helpers ------------------------------------------------------------
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var a in attrs || {}) e.setAttribute(a, attrs[a]);
    (kids || []).forEach(function (k) {
      e.appendChild(typeof k === "string" ? document.createTextNode(k) : k);
    });
    return e;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var a in attrs || {}) e.setAttribute(a, attrs[a]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function int(v) { return Number(v).toLocaleString("en-US"); }
  function bytes(v) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], u = 0;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    return (u ? v.toFixed(v < 10 ? 2 : 1) : String(v)) + " " + units[u];
  }
  function cost(key, v) { return IS_BYTES[key] ? bytes(v) : int(v); }
  function pct(part, whole) { return whole ? (100 * part / whole).toFixed(1) + "%" : "-"; }
  function duration(us) {
    if (us < 1000) return us + " µs";
    if (us < 1e6) return (us / 1000).toFixed(1) + " ms";
    return (us / 1e6).toFixed(2) + " s";
  }
  function section(id, title) {
    var s = el("section", { id: id }, [el("h2", {}, [title])]);
    out.appendChild(s);
    return s;
  }
  function hue(name) {
    var h = 0;
    for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return h;
  }

  var S = D.summary, P = D.peak;

  // The view can be given in the address: #cost=leaked&search=re&zoom=name
  // (a link to one view of a report, and how tests check the interaction).
  var VIEW = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
    var i = kv.indexOf("=");
    if (i > 0) VIEW[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
  });

  // ---- summary ---------------------------------------------------------------
  function summary() {
    var s = section("summary", "Summary");
    var items = [
      ["Allocations", int(S.allocations)],
      ["Releases", int(S.releases)],
      ["Allocated", bytes(S.allocated_bytes)],
      ["Peak heap", S.leaks_only ? "-" : bytes(P.bytes) + " in " + int(P.blocks) + " blocks"],
      // the call index counts releases too: say which allocation it was
      ["Peak reached", S.leaks_only || !P.index ? "-" : "allocation #" + int(P.allocation) +
        " of " + int(S.allocations) + (P.time_us !== undefined ? ", at " + duration(P.time_us) : "") +
        " (call #" + int(P.index) + ", releases counted)"],
      ["Temporary allocations", S.leaks_only ? "-" : S.sample_interval ? "not estimated from a sample" :
                                int(S.temporary) + " (" + pct(S.temporary, S.allocations) + ")"],
      [SNAP ? "Live at snapshot " + SNAP : "Leaked", bytes(S.leaked_bytes) + " in " + int(S.leaked_blocks) + " blocks"],
      ["Duration", S.has_time ? duration(S.duration_us) : "no timestamps"]
    ];
    if (S.cached_blocks)
      items.splice(7, 0, [SNAP ? "libc's caches" : "libc's caches (not leaked)", bytes(S.cached_bytes) + " in " + int(S.cached_blocks) + " blocks"]);
    if (S.unknown_releases) items.push(["Releases of unknown blocks", int(S.unknown_releases)]);
    var dl = el("dl", { "class": "cards" });
    items.forEach(function (it) {
      dl.appendChild(el("div", { "class": "card" }, [el("dt", {}, [it[0]]), el("dd", {}, [it[1]])]));
    });
    s.appendChild(dl);
    if (S.cached_blocks)
      s.appendChild(el("p", { "class": "legend", id: "cached-note" }, ["libc's caches: blocks the C and C++ " +
        "runtime keeps for the life of the process (libstdc++'s emergency exception pool, stdio buffers, " +
        "locales...), which valgrind frees before it counts leaks; never counted as leaked here."]));
    if (S.leaks_only)
      s.appendChild(el("p", { "class": "note" }, [(SNAP
        ? "This snapshot holds the blocks live at that moment: "
        : "This trace holds only leaks (filter=leaks): ") +
        "it has no releases and no order in time, so no peak, temporary allocations or time series."]));
  }

  // ---- the tree and the views ----------------------------------------------------
  var NODES = D.nodes, NN = NODES.length / STRIDE, NS = D.site_leaf.length;
  var PARENT = new Int32Array(NN), KIDS = [], DEPTH = new Int32Array(NN), MAXDEPTH = 0;
  for (var ni = 0; ni < NN; ni++) {
    PARENT[ni] = NODES[ni * STRIDE + 1];
    KIDS.push([]);
    if (PARENT[ni] >= 0) { KIDS[PARENT[ni]].push(ni); DEPTH[ni] = DEPTH[PARENT[ni]] + 1; }
    if (DEPTH[ni] > MAXDEPTH) MAXDEPTH = DEPTH[ni];
  }
  function nodeName(i) { return D.names[NODES[i * STRIDE]]; }
  var ALLOCATOR = {}, WRAPPER = {};
  D.allocators.forEach(function (a) { ALLOCATOR[a] = true; });
  D.wrappers.forEach(function (a) { WRAPPER[a] = true; });
  function plain(i) { var n = NODES[i * STRIDE]; return !ALLOCATOR[n] && !WRAPPER[n]; }
  // A site's first frame outside the allocator and the standard library,
  // as the tables name it; the root when there is none.
  function siteFrame(s) {
    for (var i = D.site_leaf[s]; i > 0; i = PARENT[i]) if (plain(i)) return i;
    return D.site_leaf[s] > 0 ? D.site_leaf[s] : 0;
  }

  // The timeline: ticks of 6 numbers, by site then interval.
  var TICKS = D.ticks, NTICK = TICKS.length / 6, TSHIFT = D.tick_shift || 0;
  var TW = (D.series.width || 1) * Math.pow(2, TSHIFT);            // a tick interval, in axis units
  var NTI = Math.ceil((D.series.points.length / PSTRIDE) / Math.pow(2, TSHIFT)); // tick intervals

  function axisText(v) { // a position on the axis, in words
    return D.series.by_time ? duration(Math.round(v)) : "call " + int(S.first_index + Math.round(v));
  }

  // A view: what the page shows now. keys: its costs; cost(s, k): site s's.
  function wholeView() {
    var nk = D.costs.length;
    return { name: "whole", keys: D.costs.slice(), title: "the whole run",
             cost: function (s, k) { return D.site_costs[s * nk + k]; } };
  }
  // [a, b]: tick intervals, inclusive. Allocations, bytes and temporaries
  // in the range; live: what each site held at the range's end.
  function rangeView(a, b) {
    var c = new Float64Array(NS * 4);
    for (var t = 0; t < NTICK; t++) {
      var s = TICKS[t * 6], k = TICKS[t * 6 + 1];
      if (k > b) continue;
      c[s * 4 + 2] = TICKS[t * 6 + 5]; // ticks of a site come in order: the last one <= b stays
      if (k < a) continue;
      c[s * 4] += TICKS[t * 6 + 2];
      c[s * 4 + 1] += TICKS[t * 6 + 3];
      c[s * 4 + 3] += TICKS[t * 6 + 4];
    }
    return { name: "range", keys: ["calls", "bytes", "live", "temporary"], range: [a, b],
             title: "from " + axisText(a * TW) + " to " + axisText((b + 1) * TW),
             cost: function (s, k) { return c[s * 4 + k]; } };
  }
  // k: a tick interval; what each site held at its end.
  function momentView(k) {
    var c = new Float64Array(NS);
    for (var t = 0; t < NTICK; t++)
      if (TICKS[t * 6 + 1] <= k) c[TICKS[t * 6]] = TICKS[t * 6 + 5];
    return { name: "moment", keys: ["live"], moment: k, title: "live at " + axisText((k + 1) * TW),
             cost: function (s) { return c[s]; } };
  }
  // Every node's costs under a view: each site's costs up its path.
  function treeCosts(v) {
    var nk = v.keys.length, c = new Float64Array(NN * nk);
    for (var s = 0; s < NS; s++) {
      var any = false, own = [];
      for (var k = 0; k < nk; k++) { own.push(v.cost(s, k)); any = any || own[k] !== 0; }
      if (!any) continue;
      for (var i = D.site_leaf[s]; i >= 0; i = PARENT[i])
        for (k = 0; k < nk; k++) c[i * nk + k] += own[k];
    }
    v.tree = c;
    v.node = function (i, k) { return c[i * nk + k]; };
    return v;
  }

  var CUR = null, listeners = [];
  function setView(v) {
    CUR = treeCosts(v);
    listeners.forEach(function (f) { f(); });
  }
  function onView(f) { listeners.push(f); }
  function keyIndex(v, key) { var k = v.keys.indexOf(key); return k < 0 ? 0 : k; }

  // ---- memory over time ----------------------------------------------------------
  // Round ticks: 1, 2 or 5 times a power of ten of the unit the largest value
  // is written in, every label in that one unit.
  function niceStep(max, n) {
    var raw = max / n, mag = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * mag >= raw) return steps[i] * mag;
    return 10 * mag;
  }
  function byteAxis(max) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], u = 0;
    while (max / Math.pow(1024, u) >= 1024 && u < units.length - 1) u++;
    var scale = Math.pow(1024, u), step = niceStep(Math.max(max / scale, 1), 5) * scale;
    return { step: step, label: function (v) { return +(v / scale).toFixed(2) + " " + units[u]; } };
  }
  function xAxis(max) {
    if (!D.series.by_time) {
      var st = Math.max(1, Math.round(niceStep(Math.max(max, 1), 5)));
      return { step: st, label: function (v) { return "call " + int(S.first_index + v); } };
    }
    var unit = max >= 2e6 ? [1e6, "s"] : max >= 2e3 ? [1e3, "ms"] : [1, "µs"];
    var step = niceStep(Math.max(max / unit[0], 1e-9), 5) * unit[0];
    return { step: step, label: function (v) { return +(v / unit[0]).toFixed(3) + " " + unit[1]; } };
  }

  function chart() {
    var s = section("memory", "Memory over time");
    var pts = D.series.points, n = pts.length / PSTRIDE;
    if (!n) {
      s.appendChild(el("p", { "class": "note", id: "no-series" }, [S.leaks_only
        ? (SNAP ? "No time series: a snapshot keeps no order in time."
                : "No time series: a leaks-only trace has no order in time.")
        : "No time series: the trace has no allocations."]));
      return;
    }
    var W = 960, H = 300, L = 80, R = 64, T = 28, B = 36, width = D.series.width;
    var xmax = pts[(n - 1) * PSTRIDE] + width, ymax = 1, cmax = 1;
    for (var i = 0; i < n; i++) {
      ymax = Math.max(ymax, pts[i * PSTRIDE + 2]);
      cmax = Math.max(cmax, pts[i * PSTRIDE + 3]);
    }
    var ya = byteAxis(ymax), xa = xAxis(xmax), ca = { step: Math.max(1, Math.round(niceStep(cmax, 4))) };
    ymax = Math.ceil(ymax / ya.step) * ya.step;
    cmax = Math.ceil(cmax / ca.step) * ca.step;
    function X(v) { return L + (W - L - R) * v / xmax; }
    function Y(v) { return T + (H - T - B) * (1 - v / ymax); }
    function C(v) { return T + (H - T - B) * (1 - v / cmax); }
    var g = svg("svg", { id: "chart", viewBox: "0 0 " + W + " " + H, role: "img",
                         "aria-label": "live bytes, allocations and temporary allocations over " +
                                       (D.series.by_time ? "time" : "call index") });
    for (var yv = 0; yv <= ymax + ya.step / 2; yv += ya.step) {
      g.appendChild(svg("line", { x1: L, x2: W - R, y1: Y(yv), y2: Y(yv), "class": "grid" }));
      g.appendChild(svg("text", { x: L - 6, y: Y(yv) + 4, "text-anchor": "end", "class": "ytick" }, ya.label(yv)));
    }
    for (var cv = 0; cv <= cmax + ca.step / 2; cv += ca.step)
      g.appendChild(svg("text", { x: W - R + 6, y: C(cv) + 4, "class": "ctick" }, int(cv)));
    for (var xv = 0; xv <= xmax + xa.step / 1e6; xv += xa.step)
      g.appendChild(svg("text", { x: X(xv), y: H - B + 18, "class": "xtick",
                                  "text-anchor": xv === 0 ? "start" : "middle" }, xa.label(xv)));
    // allocations and temporary allocations per interval: bars on the right scale
    var bars = "", temps = "", bw = (X(width) - X(0)).toFixed(2);
    for (i = 0; i < n; i++) {
      var x0 = X(pts[i * PSTRIDE]).toFixed(1), h = (H - T - B) * pts[i * PSTRIDE + 3] / cmax,
          ht = (H - T - B) * pts[i * PSTRIDE + 6] / cmax;
      if (h) bars += "M" + x0 + "," + (H - B) + "v" + (-h).toFixed(1) + "h" + bw + "v" + h.toFixed(1) + "z";
      if (ht) temps += "M" + x0 + "," + (H - B) + "v" + (-ht).toFixed(1) + "h" + bw + "v" + ht.toFixed(1) + "z";
    }
    var maxLine = "M" + X(0) + "," + Y(0), live = "M" + X(0) + "," + Y(0);
    for (i = 0; i < n; i++) {
      var a0 = X(pts[i * PSTRIDE]).toFixed(1), a1 = X(pts[i * PSTRIDE] + width).toFixed(1);
      maxLine += "L" + a0 + "," + Y(pts[i * PSTRIDE + 2]).toFixed(1) + "L" + a1 + "," + Y(pts[i * PSTRIDE + 2]).toFixed(1);
      live += "L" + a1 + "," + Y(pts[i * PSTRIDE + 1]).toFixed(1);
    }
    g.appendChild(svg("path", { d: maxLine + "L" + X(xmax) + "," + Y(0) + "Z", "class": "area" }));
    g.appendChild(svg("path", { d: bars, "class": "allocs", id: "alloc-bars" }));
    g.appendChild(svg("path", { d: temps, "class": "temps", id: "temp-bars" }));
    g.appendChild(svg("path", { d: live, "class": "live", id: "live-line" }));
    var px = D.series.by_time ? P.time_us : P.index - S.first_index;
    if (P.bytes && px !== undefined) {
      // above the point: nothing is higher than the peak, so no line crosses it
      g.appendChild(svg("circle", { cx: X(px), cy: Y(P.bytes), r: 4, "class": "peak" }));
      var anchor = X(px) > W * 0.8 ? "end" : X(px) < W * 0.2 ? "start" : "middle";
      g.appendChild(svg("text", { x: X(px), y: Y(P.bytes) - 9, "class": "peak-label", id: "peak-label",
                                  "text-anchor": anchor }, "peak " + bytes(P.bytes)));
    }
    var sel = svg("rect", { "class": "sel", x: 0, y: T, width: 0, height: H - T - B, visibility: "hidden" });
    var mark = svg("line", { "class": "mark", y1: T, y2: H - B, visibility: "hidden" });
    g.appendChild(sel);
    g.appendChild(mark);
    var info = el("div", { "class": "details", id: "chart-details" }, ["\u00a0"]);
    var status = el("span", { id: "view-title" }, []);
    var whole = el("button", { id: "whole-run", type: "button" }, ["Whole run"]);
    function at(e) {
      var r = g.getBoundingClientRect();
      return Math.max(0, Math.min(xmax, ((e.clientX - r.left) * W / r.width - L) / (W - L - R) * xmax));
    }
    function tick(v) { return Math.max(0, Math.min(NTI - 1, Math.floor(v / TW))); }
    var down = null;
    g.addEventListener("mousedown", function (e) { down = at(e); e.preventDefault(); });
    g.addEventListener("mousemove", function (e) {
      var v = at(e), i = Math.floor(v / width);
      if (down !== null) {
        var lo = Math.min(down, v), hi = Math.max(down, v);
        sel.setAttribute("x", X(lo)); sel.setAttribute("width", X(hi) - X(lo));
        sel.setAttribute("visibility", "visible");
      }
      if (i < 0 || i >= n) return;
      info.textContent = axisText(pts[i * PSTRIDE]) + " to " + axisText(pts[i * PSTRIDE] + width) + ": live " +
        bytes(pts[i * PSTRIDE + 1]) + " (largest " + bytes(pts[i * PSTRIDE + 2]) + "), " + int(pts[i * PSTRIDE + 3]) +
        " allocations of " + bytes(pts[i * PSTRIDE + 4]) + ", " + int(pts[i * PSTRIDE + 6]) + " temporary, " +
        int(pts[i * PSTRIDE + 5]) + " releases";
    });
    window.addEventListener("mouseup", function (e) {
      if (down === null) return;
      var v = at(e), a = tick(Math.min(down, v)), b = tick(Math.max(down, v));
      var dragged = Math.abs(X(v) - X(down)) > 4;
      down = null;
      if (dragged) setView(rangeView(a, b)); else setView(momentView(tick(v)));
    });
    whole.addEventListener("click", function () { setView(wholeView()); });
    onView(function () {
      status.textContent = "Showing " + CUR.title + ".";
      whole.disabled = CUR.name === "whole";
      sel.setAttribute("visibility", CUR.range ? "visible" : "hidden");
      mark.setAttribute("visibility", CUR.moment !== undefined ? "visible" : "hidden");
      if (CUR.range) {
        sel.setAttribute("x", X(CUR.range[0] * TW));
        sel.setAttribute("width", X(Math.min(xmax, (CUR.range[1] + 1) * TW)) - X(CUR.range[0] * TW));
      }
      if (CUR.moment !== undefined) {
        var mx = X(Math.min(xmax, (CUR.moment + 1) * TW));
        mark.setAttribute("x1", mx); mark.setAttribute("x2", mx);
      }
    });
    s.appendChild(g);
    s.appendChild(el("p", { "class": "legend" }, [
      el("span", { "class": "key live" }, []), " live bytes at the end of each interval ",
      el("span", { "class": "key area" }, []), " largest within it (left scale) ",
      el("span", { "class": "key allocs" }, []), " allocations ",
      el("span", { "class": "key temps" }, []), " temporary allocations in each interval (right scale)"]));
    s.appendChild(info);
    s.appendChild(el("p", { "class": "controls" }, [status, whole, el("span", { "class": "legend" }, [
      "Drag across the chart to see a range of time in the flame graph and the tables; " +
      "click a moment to see what was live then (in steps of " + axisText(TW).replace(/^call /, "") +
      (D.series.by_time ? "" : " calls") + ")."])]));
  }

  // ---- flame graph ---------------------------------------------------------------
  function flame() {
    var s = section("flamegraph", "Flame graph");
    var select = el("select", { id: "cost" });
    var search = el("input", { id: "search", type: "search", placeholder: "search functions (regular expression)" });
    var reset = el("button", { id: "reset", type: "button" }, ["Reset zoom"]);
    var matched = el("span", { id: "matched" }, []);
    var title = el("span", { id: "flame-title", "class": "legend" }, []);
    s.appendChild(el("div", { "class": "controls" }, [el("label", {}, ["Cost: ", select]), search, reset, matched, title]));
    var ROW = 18, box = el("div", { id: "flame" });
    var details = el("div", { "class": "details", id: "flame-details" }, ["\u00a0"]);
    s.appendChild(box);
    s.appendChild(details);
    s.appendChild(el("p", { "class": "legend" }, [
      "Callers below, callees above; the width of a frame is its share of the chosen cost. ",
      "Click a frame to zoom, hover for its numbers."]));
    var zoomed = 0, re = null, wanted = VIEW.cost || (S.leaks_only ? "leaked" : "bytes");
    if (VIEW.zoom)
      for (var i = 0; i < NN; i++)
        if (nodeName(i) === VIEW.zoom) { zoomed = i; break; }
    if (VIEW.search) {
      search.value = VIEW.search;
      try { re = new RegExp(VIEW.search); } catch (err) { search.classList.add("bad"); }
    }
    function c(i, k) { return CUR.node(i, k); }
    function describe(i) {
      return nodeName(i) + ": " + CUR.keys.map(function (key, k) {
        return LABEL[key] + " " + cost(key, c(i, k)) + " (" + pct(c(i, k), c(0, k)) + ")";
      }).join(", ");
    }
    function frame(i, x, w, faded) {
      var hit = re && re.test(nodeName(i));
      var cls = "fr" + (faded ? " faded" : "") + (hit ? " hit" : "");
      var h = hue(nodeName(i)), colour = ALLOCATOR[NODES[i * STRIDE]]
        ? "hsl(" + (20 + h % 25) + ",85%," + (55 + h % 10) + "%)"
        : i === 0 ? "hsl(0,0%,80%)" : "hsl(" + (140 + h % 60) + ",45%," + (52 + (h >> 8) % 14) + "%)";
      return el("div", { "class": cls, "data-i": i,
        style: "left:" + (100 * x).toFixed(4) + "%;width:" + (100 * w).toFixed(4) + "%;top:" +
               (MAXDEPTH - DEPTH[i]) * ROW + "px;" + (hit ? "" : "background:" + colour) }, [nodeName(i)]);
    }
    function fillSelect() {
      select.textContent = "";
      var k0 = CUR.keys.indexOf(wanted);
      if (k0 < 0) k0 = CUR.keys.indexOf("bytes");
      if (k0 < 0) k0 = 0;
      CUR.keys.forEach(function (key, k) {
        var o = el("option", { value: k }, [LABEL[key] || key]);
        if (k === k0) o.setAttribute("selected", "");
        select.appendChild(o);
      });
      select.value = String(k0);
    }
    function draw() {
      var k = +select.value, total = c(zoomed, k), px = box.clientWidth || 960;
      var frag = document.createDocumentFragment(), hits = 0;
      box.style.height = (MAXDEPTH + 1) * ROW + "px";
      for (var a = PARENT[zoomed]; a >= 0; a = PARENT[a])
        frag.appendChild(frame(a, 0, 1, true));
      function lay(i, x, inHit) {
        var w = total ? c(i, k) / total : 0;
        if (w * px < 0.5) return;
        var hit = !inHit && re && re.test(nodeName(i));
        if (hit) hits += c(i, k);
        frag.appendChild(frame(i, x, w, false));
        KIDS[i].slice().sort(function (p, q) { return c(q, k) - c(p, k); }).forEach(function (j) {
          lay(j, x, inHit || hit);
          x += total ? c(j, k) / total : 0;
        });
      }
      if (total) lay(zoomed, 0, false);
      box.textContent = "";
      box.appendChild(frag);
      matched.textContent = re ? "matched " + pct(hits, total) + " of " + (LABEL[CUR.keys[k]] || "") : "";
      reset.disabled = zoomed === 0;
      title.textContent = CUR.name === "whole" ? "" : "(" + CUR.title + ")";
      box.setAttribute("data-total", String(total));
    }
    box.addEventListener("click", function (e) {
      var d = e.target.closest(".fr");
      if (d) { zoomed = +d.getAttribute("data-i"); draw(); }
    });
    box.addEventListener("mouseover", function (e) {
      var d = e.target.closest(".fr");
      details.textContent = d ? describe(+d.getAttribute("data-i")) : "\u00a0";
    });
    select.addEventListener("change", function () { wanted = CUR.keys[+select.value]; draw(); });
    reset.addEventListener("click", function () { zoomed = 0; draw(); });
    search.addEventListener("input", function () {
      try { re = search.value ? new RegExp(search.value) : null; search.classList.remove("bad"); }
      catch (err) { re = null; search.classList.add("bad"); }
      draw();
    });
    window.addEventListener("resize", draw);
    onView(function () { fillSelect(); draw(); });
  }

  // ---- ranked tables ----------------------------------------------------------------
  // The whole run: the top sites the file lists, with their whole backtraces
  // (file and line). A range or a moment: every site ranked here, named by
  // its frames in the tree.
  function tables() {
    var s = section("tables", "Top sites");
    var box = el("div", {}, []);
    s.appendChild(box);
    var totals = { calls: S.allocations, bytes: S.allocated_bytes, peak: P.bytes,
                   temporary: S.temporary, leaked: S.leaked_bytes };
    function table(key, caption, rows, headers) {
      var t = el("table", { "class": "sites", id: "top-" + key });
      t.appendChild(el("caption", {}, [caption]));
      t.appendChild(el("tr", {}, headers.map(function (h) { return el("th", {}, [h]); })));
      rows.forEach(function (r) { t.appendChild(r); });
      if (!rows.length)
        t.appendChild(el("tr", {}, [el("td", { colspan: headers.length, "class": "none" },
          [S.leaks_only && key !== "leaked" && key !== "calls" && key !== "bytes"
            ? (SNAP ? "not known for a snapshot" : "not known for a leaks-only trace") : "none"])]));
      box.appendChild(t);
    }
    function whole() {
      D.costs.forEach(function (key, k) {
        var others = ["calls", "bytes", "peak", "leaked"].filter(function (o) { return o !== key; });
        var rows = (D.top[key] || []).map(function (si, rank) {
          var site = D.sites[si], v = site[2 + k], lines = site[0];
          var trace = el("details", {}, [el("summary", {}, [site[2 + D.costs.length] || "(no backtrace)"]),
            el("pre", {}, [site[1] + "\n" + lines.map(function (l) { return "  " + D.lines[l]; }).join("\n")])]);
          var row = el("tr", {}, [el("td", { "class": "n" }, [String(rank + 1)]),
            el("td", { "class": "n" }, [cost(key, v)]), el("td", { "class": "n" }, [pct(v, totals[key])])]);
          others.forEach(function (o) {
            row.appendChild(el("td", { "class": "n" }, [cost(o, site[2 + D.costs.indexOf(o)])]));
          });
          row.appendChild(el("td", { "class": "site" }, [trace]));
          return row;
        });
        table(key, "By " + LABEL[key], rows, ["#", LABEL[key], "share"].concat(others.map(function (o) {
          return o === "bytes" ? "allocated" : o;
        }), ["site"]));
      });
    }
    function pathOf(s) {
      var out = [];
      for (var i = D.site_leaf[s]; i > 0; i = PARENT[i]) out.push(nodeName(i));
      return out;
    }
    function computed() {
      var top = +(VIEW.top || 25);
      CUR.keys.forEach(function (key, k) {
        var order = [], total = 0;
        for (var s = 0; s < NS; s++) { var v = CUR.cost(s, k); if (v) { order.push(s); total += v; } }
        order.sort(function (p, q) { return CUR.cost(q, k) - CUR.cost(p, k) || p - q; });
        var rows = order.slice(0, top).map(function (s, rank) {
          var f = siteFrame(s), name = f ? nodeName(f) + (PARENT[f] > 0 ? " \u2190 " + nodeName(PARENT[f]) : "") : "(no backtrace)";
          var row = el("tr", {}, [el("td", { "class": "n" }, [String(rank + 1)]),
            el("td", { "class": "n" }, [cost(key, CUR.cost(s, k))]), el("td", { "class": "n" }, [pct(CUR.cost(s, k), total)])]);
          CUR.keys.forEach(function (o, j) {
            if (j !== k) row.appendChild(el("td", { "class": "n" }, [cost(o, CUR.cost(s, j))]));
          });
          row.appendChild(el("td", { "class": "site" }, [el("details", {}, [el("summary", {}, [name]),
            el("pre", {}, [pathOf(s).map(function (l) { return "  " + l; }).join("\n")])])]));
          return row;
        });
        table(key, "By " + LABEL[key] + ", " + CUR.title, rows, ["#", LABEL[key], "share"].concat(
          CUR.keys.filter(function (o) { return o !== key; }).map(function (o) { return LABEL[o]; }), ["site"]));
      });
    }
    onView(function () {
      box.textContent = "";
      if (CUR.name === "whole") whole(); else computed();
    });
  }

  // ---- Bottom-up, Top-down, Callers and callees ----------------------------------------
  // A table of a tree: each row a function with the view's costs, opened
  // to show its children (lazily: a big tree draws only what is opened).
  function treeTable(id, kidsOf, label, openDepth) {
    var keys = CUR.keys, k0 = keys.indexOf("bytes") >= 0 ? keys.indexOf("bytes") : 0;
    var t = el("table", { "class": "tree", id: id });
    t.appendChild(el("tr", {}, [el("th", {}, [label])].concat(keys.map(function (k) {
      return el("th", {}, [LABEL[k] || k]);
    }))));
    function rows(list, depth, after) {
      list.sort(function (p, q) { return q.cost[k0] - p.cost[k0] || (p.name < q.name ? -1 : 1); });
      var shown = list.slice(0, 100), last = after, made = [], opens = [];
      shown.forEach(function (r) {
        var kids = null, open = false;
        var toggle = el("span", { "class": "tog" }, [r.hasKids ? "\u25b8 " : "\u00a0\u00a0"]);
        var nameCell = el("td", { "class": "fn", style: "padding-left:" + (6 + 14 * depth) + "px" },
                          [toggle, el("span", { "class": "name" }, [r.name])]);
        var tr = el("tr", { "data-depth": depth }, [nameCell].concat(keys.map(function (k, j) {
          return el("td", { "class": "n" }, [cost(k, r.cost[j])]);
        })));
        tr.rowData = r;
        if (last) last.parentNode.insertBefore(tr, last.nextSibling); else t.appendChild(tr);
        last = tr;
        made.push(tr);
        toggle.addEventListener("click", function () {
          if (!r.hasKids) return;
          open = !open;
          toggle.textContent = open ? "\u25be " : "\u25b8 ";
          if (open) kids = rows(kidsOf(r), depth + 1, tr);
          else { kids.forEach(function (x) { collapse(x); }); kids = null; }
        });
        nameCell.querySelector(".name").addEventListener("click", function () { chooseFunction(r.name); });
        tr.kidsRows = function () { return kids || []; };
        // the largest row of each level opens, down to openDepth: the hot path
        if (r.hasKids && depth < (openDepth || 0) && !opens.length) opens.push(toggle);
      });
      if (list.length > shown.length) {
        var more = el("tr", {}, [el("td", { colspan: keys.length + 1, "class": "none" },
          [(list.length - shown.length) + " more, smaller"])]);
        if (last) last.parentNode.insertBefore(more, last.nextSibling); else t.appendChild(more);
        made.push(more);
      }
      if (opens.length) opens[0].click();
      return made;
    }
    function collapse(tr) {
      if (tr.kidsRows) tr.kidsRows().forEach(collapse);
      if (tr.parentNode) tr.parentNode.removeChild(tr);
    }
    rows(kidsOf(null), 0, null);
    return t;
  }

  function nodeRow(i) {
    return { name: nodeName(i), node: i, hasKids: KIDS[i].length > 0,
             cost: CUR.keys.map(function (k, j) { return CUR.node(i, j); }) };
  }

  function topDown() {
    var s = section("top-down", "Top-down");
    s.appendChild(el("p", { "class": "legend" }, ["The call tree from the program's entry: each " +
      "function with what it and everything it called cost. Click \u25b8 to open, a name for its callers and callees."]));
    var box = el("div", {}, []);
    s.appendChild(box);
    onView(function () {
      box.textContent = "";
      box.appendChild(treeTable("top-down-table", function (r) {
        var list = r ? KIDS[r.node] : KIDS[0];
        return list.filter(function (i) { return CUR.keys.some(function (k, j) { return CUR.node(i, j); }); }).map(nodeRow);
      }, "function (callees below)", 3));
    });
  }

  // Bottom-up: per allocating function (the first frame outside the
  // allocator and the standard library, as the tables name sites), opened
  // to its callers, their callers, and so on.
  function bottomUp() {
    var s = section("bottom-up", "Bottom-up");
    s.appendChild(el("p", { "class": "legend" }, ["Costs per allocating function (the first frame " +
      "outside the allocator and the standard library), opened to show who called it."]));
    var box = el("div", {}, []);
    s.appendChild(box);
    onView(function () {
      // Built a level at a time, when a row opens: a row holds its sites
      // and how far up their paths it is.
      var nk = CUR.keys.length, at = new Int32Array(NS), live = [];
      for (var site = 0; site < NS; site++) {
        at[site] = siteFrame(site);
        for (var k = 0; k < nk; k++) if (CUR.cost(site, k)) { live.push(site); break; }
      }
      function group(sites, up) {
        var by = {}, out = [];
        sites.forEach(function (st) {
          var i = at[st];
          for (var u = 0; u < up && i > 0; u++) i = PARENT[i];
          if (i <= 0) return;
          var nm = nodeName(i), e = by[nm];
          if (!e) {
            e = by[nm] = { name: nm, cost: new Array(nk).fill(0), sites: [], up: up, hasKids: false };
            out.push(e);
          }
          e.sites.push(st);
          for (var k = 0; k < nk; k++) e.cost[k] += CUR.cost(st, k);
          if (PARENT[i] > 0) e.hasKids = true;
        });
        return out;
      }
      box.textContent = "";
      box.appendChild(treeTable("bottom-up-table", function (r) {
        return r ? group(r.sites, r.up + 1) : group(live, 0);
      }, "allocating function (callers below)", 1));
    });
  }


  // Callers and callees of one function: over every frame of that name that
  // is not inside another one (a recursion counts once), what called it and
  // what it called, with their costs.
  var chooseFunction = function () {};
  function callersCallees() {
    var s = section("callers-callees", "Callers and callees");
    var names = {};
    for (var i = 1; i < NN; i++) names[nodeName(i)] = true;
    var dl = el("datalist", { id: "function-names" }, Object.keys(names).sort().slice(0, 5000).map(function (n) {
      return el("option", { value: n }, []);
    }));
    var input = el("input", { id: "function", list: "function-names", placeholder: "a function (click a name in Bottom-up or Top-down)" });
    var box = el("div", {}, []);
    s.appendChild(el("div", { "class": "controls" }, [el("label", {}, ["Function: ", input]), dl]));
    s.appendChild(box);
    var chosen = VIEW.fn || "";
    input.value = chosen;
    function draw() {
      box.textContent = "";
      if (!chosen) {
        box.appendChild(el("p", { "class": "legend" }, ["Choose a function to see its callers and callees."]));
        return;
      }
      var nk = CUR.keys.length, self = new Array(nk).fill(0), callers = {}, callees = {}, found = false;
      function add(map, name, i) {
        var e = map[name] || (map[name] = { name: name, cost: new Array(nk).fill(0), hasKids: false });
        for (var k = 0; k < nk; k++) e.cost[k] += CUR.node(i, k);
      }
      for (var n = 1; n < NN; n++) {
        if (nodeName(n) !== chosen) continue;
        var outer = true;
        for (var a = PARENT[n]; a > 0 && outer; a = PARENT[a]) outer = nodeName(a) !== chosen;
        if (!outer) continue;
        found = true;
        for (var k = 0; k < nk; k++) self[k] += CUR.node(n, k);
        add(callers, PARENT[n] > 0 ? nodeName(PARENT[n]) : "(program entry)", n);
        KIDS[n].forEach(function (c) { add(callees, nodeName(c), c); });
      }
      if (!found) {
        box.appendChild(el("p", { "class": "note" }, ["No frame is named " + chosen + "."]));
        return;
      }
      box.appendChild(el("p", { id: "function-total" }, [chosen + ": " + CUR.keys.map(function (key, k) {
        return LABEL[key] + " " + cost(key, self[k]);
      }).join(", ")]));
      function listOf(map) { return Object.keys(map).map(function (x) { return map[x]; }); }
      var tc = treeTable("callers-table", function (r) { return r ? [] : listOf(callers); }, "callers of " + chosen);
      var te = treeTable("callees-table", function (r) { return r ? [] : listOf(callees); }, "called by " + chosen);
      box.appendChild(tc);
      box.appendChild(te);
    }
    chooseFunction = function (name) {
      chosen = name;
      input.value = name;
      draw();
      s.scrollIntoView && s.scrollIntoView({ block: "nearest" });
    };
    input.addEventListener("change", function () { chosen = input.value; draw(); });
    onView(draw);
  }

  // The view in the address: #range=A-B or #moment=K (tick intervals).
  function firstView() {
    var m;
    if (VIEW.range && (m = /^(\d+)-(\d+)$/.exec(VIEW.range)) && NTI)
      return rangeView(Math.min(+m[1], NTI - 1), Math.min(+m[2], NTI - 1));
    if (VIEW.moment && /^\d+$/.test(VIEW.moment) && NTI)
      return momentView(Math.min(+VIEW.moment, NTI - 1));
    return wholeView();
  }

  // ---- sizes and contexts --------------------------------------------------------------
  function sizes() {
    var s = section("sizes", "Allocation sizes");
    var count = D.histogram.count, max = Math.max.apply(null, count.concat([1]));
    var t = el("table", { "class": "hist" });
    t.appendChild(el("tr", {}, ["size", "allocations", ""].map(function (h) { return el("th", {}, [h]); })));
    count.forEach(function (n, cls) {
      if (!n) return;
      var range = cls === 0 ? "0" : bytes(Math.pow(2, cls - 1)) + " to " + bytes(Math.pow(2, cls) - 1);
      t.appendChild(el("tr", {}, [el("td", {}, [range]), el("td", { "class": "n" }, [int(n)]),
        el("td", { "class": "bar" }, [el("span", { style: "width:" + (100 * n / max).toFixed(1) + "%" }, [])])]));
    });
    s.appendChild(t);
    if (D.histogram.top.length)
      s.appendChild(el("p", {}, ["Most frequent sizes: " + D.histogram.top.map(function (p) {
        return int(p[0]) + " B \u00d7 " + int(p[1]);
      }).join(", ")]));
  }

  function contexts() {
    if (D.contexts.length < 2 && !(D.contexts.length === 1 && D.contexts[0][1])) return;
    var s = section("contexts", "Per context");
    var t = el("table", { "class": "sites" });
    t.appendChild(el("tr", {}, ["context", "calls", "allocated", "peak", "temporary", "leaked"].map(function (h) {
      return el("th", {}, [h]);
    })));
    D.contexts.forEach(function (cx) {
      var label = cx[1] ? (cx[0] || "context") + " (0x" + cx[1].toString(16) + ")" : "outside any context";
      t.appendChild(el("tr", {}, [el("td", {}, [label]), el("td", { "class": "n" }, [int(cx[3])]),
        el("td", { "class": "n" }, [bytes(cx[4])]), el("td", { "class": "n" }, [bytes(cx[5])]),
        el("td", { "class": "n" }, [int(cx[6])]), el("td", { "class": "n" }, [bytes(cx[7])])]));
    });
    s.appendChild(t);
  }

  summary();
  chart();
  flame();
  tables();
  bottomUp();
  topDown();
  callersCallees();
  sizes();
  contexts();
  setView(firstView());
  // when the page was ready, from navigation start (bench/html_open reads it)
  if (window.performance) document.body.setAttribute("data-render-ms", String(Math.round(performance.now())));
  document.body.setAttribute("data-ready", "1");
})();
