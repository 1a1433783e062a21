// postproc/export/assets/report.js: draws the HTML report (postproc/export/html.c) from
// the JSON in <script id="data">: the summary, memory over time, the flame
// graph and the ranked tables. Plain DOM and SVG, no library, nothing
// fetched: the page must open from disk, offline, in any current browser.
//
// The flame graph keeps every frame's five costs, so switching the cost
// only lays the frames out again. Frames narrower than half a pixel are
// not drawn (their share is still in their parent's numbers), which keeps
// the page quick on traces with thousands of stacks.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("data").textContent);
  var out = document.getElementById("report");
  var SVG = "http://www.w3.org/2000/svg";
  var NK = D.costs.length, STRIDE = 2 + NK;
  var LABEL = { calls: "calls", bytes: "allocated bytes", peak: "bytes at the peak",
                temporary: "temporary allocations", leaked: "leaked bytes" };
  var IS_BYTES = { bytes: true, peak: true, leaked: true };

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
      ["Peak reached", S.leaks_only || !P.index ? "-" : "call #" + int(P.index) +
        (P.time_us !== undefined ? " at " + duration(P.time_us) : "")],
      ["Temporary allocations", S.leaks_only ? "-" : int(S.temporary) + " (" + pct(S.temporary, S.allocations) + ")"],
      ["Leaked", bytes(S.leaked_bytes) + " in " + int(S.leaked_blocks) + " blocks"],
      ["Duration", S.has_time ? duration(S.duration_us) : "no timestamps"]
    ];
    if (S.unknown_releases) items.push(["Releases of unknown blocks", int(S.unknown_releases)]);
    var dl = el("dl", { "class": "cards" });
    items.forEach(function (it) {
      dl.appendChild(el("div", { "class": "card" }, [el("dt", {}, [it[0]]), el("dd", {}, [it[1]])]));
    });
    s.appendChild(dl);
    if (S.leaks_only)
      s.appendChild(el("p", { "class": "note" }, ["This trace holds only leaks (filter=leaks): " +
        "it has no releases and no order in time, so no peak, temporary allocations or time series."]));
  }

  // ---- memory over time --------------------------------------------------------
  function chart() {
    var s = section("memory", "Memory over time");
    var pts = D.series.points, n = pts.length / 6;
    if (!n) {
      s.appendChild(el("p", { "class": "note", id: "no-series" }, [S.leaks_only
        ? "No time series: a leaks-only trace has no order in time."
        : "No time series: the trace has no allocations."]));
      return;
    }
    var W = 960, H = 280, L = 80, R = 16, T = 12, B = 36, width = D.series.width;
    var xmax = pts[(n - 1) * 6] + width, ymax = 1, rmax = 1;
    for (var i = 0; i < n; i++) {
      ymax = Math.max(ymax, pts[i * 6 + 2]);
      rmax = Math.max(rmax, pts[i * 6 + 4]);
    }
    function X(v) { return L + (W - L - R) * v / xmax; }
    function Y(v) { return T + (H - T - B) * (1 - v / ymax); }
    // the axis counts from the first call; labels name the call itself
    function axisLabel(v) {
      return D.series.by_time ? duration(Math.round(v)) : "call " + int(S.first_index + Math.round(v));
    }
    var g = svg("svg", { id: "chart", viewBox: "0 0 " + W + " " + H, role: "img",
                         "aria-label": "live bytes over " + (D.series.by_time ? "time" : "call index") });
    var lastLabel = "";
    for (var k = 0; k <= 4; k++) {
      var yv = ymax * k / 4, xv = xmax * k / 4, label = axisLabel(xv);
      g.appendChild(svg("line", { x1: L, x2: W - R, y1: Y(yv), y2: Y(yv), "class": "grid" }));
      g.appendChild(svg("text", { x: L - 6, y: Y(yv) + 4, "text-anchor": "end" }, bytes(Math.round(yv))));
      if (label === lastLabel) continue; // a short run: no tick twice
      lastLabel = label;
      g.appendChild(svg("text", { x: X(xv), y: H - B + 18, "text-anchor": k ? (k === 4 ? "end" : "middle") : "start" },
                        label));
    }
    // allocation rate: bars at the bottom, on their own scale
    var bars = "";
    for (i = 0; i < n; i++) {
      var h = (H - T - B) * 0.25 * pts[i * 6 + 4] / rmax;
      bars += "M" + X(pts[i * 6]).toFixed(1) + "," + (H - B).toFixed(1) + "v" + (-h).toFixed(1) +
              "h" + (X(width) - X(0)).toFixed(2) + "v" + h.toFixed(1) + "z";
    }
    var maxLine = "M" + X(0) + "," + Y(0), live = "M" + X(0) + "," + Y(0);
    for (i = 0; i < n; i++) {
      var x0 = X(pts[i * 6]).toFixed(1), x1 = X(pts[i * 6] + width).toFixed(1);
      maxLine += "L" + x0 + "," + Y(pts[i * 6 + 2]).toFixed(1) + "L" + x1 + "," + Y(pts[i * 6 + 2]).toFixed(1);
      live += "L" + x1 + "," + Y(pts[i * 6 + 1]).toFixed(1);
    }
    g.appendChild(svg("path", { d: maxLine + "L" + X(xmax) + "," + Y(0) + "Z", "class": "area" }));
    g.appendChild(svg("path", { d: bars, "class": "rate" })); // over the area, under the line
    g.appendChild(svg("path", { d: live, "class": "live", id: "live-line" }));
    var px = D.series.by_time ? P.time_us : P.index - S.first_index;
    if (P.bytes && px !== undefined) {
      g.appendChild(svg("circle", { cx: X(px), cy: Y(P.bytes), r: 4, "class": "peak" }));
      var left = X(px) > W * 0.8; // near the right edge: the label goes to the left
      g.appendChild(svg("text", { x: X(px) + (left ? -8 : 8), y: Y(P.bytes) + 4, "class": "peak-label",
                                  "text-anchor": left ? "end" : "start" },
                        "peak " + bytes(P.bytes)));
    }
    var info = el("div", { "class": "details", id: "chart-details" }, ["\u00a0"]);
    g.addEventListener("mousemove", function (e) {
      var r = g.getBoundingClientRect(), v = ((e.clientX - r.left) * W / r.width - L) / (W - L - R) * xmax;
      var i = Math.floor(v / width);
      if (i < 0 || i >= n) return;
      info.textContent = axisLabel(pts[i * 6]) + " to " + axisLabel(pts[i * 6] + width) + ": live " +
        bytes(pts[i * 6 + 1]) + " (largest " + bytes(pts[i * 6 + 2]) + "), " + int(pts[i * 6 + 3]) +
        " allocations of " + bytes(pts[i * 6 + 4]) + ", " + int(pts[i * 6 + 5]) + " releases";
    });
    s.appendChild(g);
    s.appendChild(el("p", { "class": "legend" }, [
      el("span", { "class": "key live" }, []), " live bytes at the end of each interval ",
      el("span", { "class": "key area" }, []), " largest within it ",
      el("span", { "class": "key rate" }, []), " bytes allocated in it (own scale)"]));
    s.appendChild(info);
  }

  // ---- flame graph ---------------------------------------------------------------
  function flame() {
    var s = section("flamegraph", "Flame graph");
    var nodes = D.nodes, count = nodes.length / STRIDE, kids = [], depth = new Array(count);
    var maxDepth = 0, allocators = {};
    D.allocators.forEach(function (a) { allocators[a] = true; });
    for (var i = 0; i < count; i++) {
      kids.push([]);
      var parent = nodes[i * STRIDE + 1];
      depth[i] = parent < 0 ? 0 : depth[parent] + 1;
      if (parent >= 0) kids[parent].push(i);
      maxDepth = Math.max(maxDepth, depth[i]);
    }
    function name(i) { return D.names[nodes[i * STRIDE]]; }
    function c(i, k) { return nodes[i * STRIDE + 2 + k]; }
    var select = el("select", { id: "cost" });
    var k0 = D.costs.indexOf(VIEW.cost || (S.leaks_only ? "leaked" : "bytes"));
    if (k0 < 0) k0 = D.costs.indexOf("bytes");
    D.costs.forEach(function (key, k) {
      var o = el("option", { value: k }, [LABEL[key] || key]);
      if (k === k0) o.setAttribute("selected", "");
      select.appendChild(o);
    });
    var search = el("input", { id: "search", type: "search", placeholder: "search functions (regular expression)" });
    var reset = el("button", { id: "reset", type: "button" }, ["Reset zoom"]);
    var matched = el("span", { id: "matched" }, []);
    s.appendChild(el("div", { "class": "controls" }, [el("label", {}, ["Cost: ", select]), search, reset, matched]));
    var ROW = 18, box = el("div", { id: "flame", style: "height:" + (maxDepth + 1) * ROW + "px" });
    var details = el("div", { "class": "details", id: "flame-details" }, ["\u00a0"]);
    s.appendChild(box);
    s.appendChild(details);
    s.appendChild(el("p", { "class": "legend" }, [
      "Callers below, callees above; the width of a frame is its share of the chosen cost. ",
      "Click a frame to zoom, hover for its numbers."]));
    var zoomed = 0, re = null, drawn = [];
    if (VIEW.zoom)
      for (i = 0; i < count; i++)
        if (name(i) === VIEW.zoom) { zoomed = i; break; }
    if (VIEW.search) {
      search.value = VIEW.search;
      try { re = new RegExp(VIEW.search); } catch (err) { search.classList.add("bad"); }
    }

    function describe(i) {
      var parts = D.costs.map(function (key, k) {
        return LABEL[key] + " " + cost(key, c(i, k)) + " (" + pct(c(i, k), c(0, k)) + ")";
      });
      return name(i) + ": " + parts.join(", ");
    }

    function frame(i, x, w, faded) {
      var hit = re && re.test(name(i));
      var cls = "fr" + (faded ? " faded" : "") + (hit ? " hit" : "");
      var h = hue(name(i)), colour = allocators[nodes[i * STRIDE]]
        ? "hsl(" + (20 + h % 25) + ",85%," + (55 + h % 10) + "%)"
        : i === 0 ? "hsl(0,0%,80%)" : "hsl(" + (140 + h % 60) + ",45%," + (52 + (h >> 8) % 14) + "%)";
      var d = el("div", { "class": cls, "data-i": i,
        style: "left:" + (100 * x).toFixed(4) + "%;width:" + (100 * w).toFixed(4) + "%;top:" +
               (maxDepth - depth[i]) * ROW + "px;" + (hit ? "" : "background:" + colour) }, [name(i)]);
      drawn.push(d);
      return d;
    }

    function draw() {
      var k = +select.value, total = c(zoomed, k), px = box.clientWidth || 960;
      var frag = document.createDocumentFragment(), hits = 0;
      drawn = [];
      for (var a = nodes[zoomed * STRIDE + 1]; a >= 0; a = nodes[a * STRIDE + 1])
        frag.appendChild(frame(a, 0, 1, true));
      function lay(i, x) {
        var w = total ? c(i, k) / total : 0;
        if (w * px < 0.5) return;
        if (re && re.test(name(i))) { hits += c(i, k); frag.appendChild(frame(i, x, w, false)); return layKids(i, x, true); }
        frag.appendChild(frame(i, x, w, false));
        layKids(i, x, false);
      }
      function layKids(i, x, inHit) {
        var list = kids[i].slice().sort(function (p, q) { return c(q, k) - c(p, k); });
        list.forEach(function (j) {
          if (inHit) layQuiet(j, x); else lay(j, x);
          x += total ? c(j, k) / total : 0;
        });
      }
      // below a match: drawn and highlighted, but not counted again
      function layQuiet(i, x) {
        var w = total ? c(i, k) / total : 0;
        if (w * px < 0.5) return;
        frag.appendChild(frame(i, x, w, false));
        layKids(i, x, true);
      }
      if (total) lay(zoomed, 0);
      box.textContent = "";
      box.appendChild(frag);
      matched.textContent = re ? "matched " + pct(hits, total) + " of " + (LABEL[D.costs[k]] || "") : "";
      reset.disabled = zoomed === 0;
    }

    box.addEventListener("click", function (e) {
      var d = e.target.closest(".fr");
      if (d) { zoomed = +d.getAttribute("data-i"); draw(); }
    });
    box.addEventListener("mouseover", function (e) {
      var d = e.target.closest(".fr");
      details.textContent = d ? describe(+d.getAttribute("data-i")) : "\u00a0";
    });
    select.addEventListener("change", draw);
    reset.addEventListener("click", function () { zoomed = 0; draw(); });
    search.addEventListener("input", function () {
      try { re = search.value ? new RegExp(search.value) : null; search.classList.remove("bad"); }
      catch (err) { re = null; search.classList.add("bad"); }
      draw();
    });
    window.addEventListener("resize", draw);
    draw();
  }

  // ---- ranked tables ----------------------------------------------------------------
  function tables() {
    var s = section("tables", "Top sites");
    var totals = { calls: S.allocations, bytes: S.allocated_bytes, peak: P.bytes,
                   temporary: S.temporary, leaked: S.leaked_bytes };
    D.costs.forEach(function (key, k) {
      var list = D.top[key] || [];
      var t = el("table", { "class": "sites", id: "top-" + key });
      t.appendChild(el("caption", {}, ["By " + LABEL[key]]));
      // the other costs beside the ranked one
      var others = ["calls", "bytes", "peak", "leaked"].filter(function (o) { return o !== key; });
      t.appendChild(el("tr", {}, ["#", LABEL[key], "share"].concat(others.map(function (o) {
        return o === "bytes" ? "allocated" : o;
      }), ["site"]).map(function (h) { return el("th", {}, [h]); })));
      list.forEach(function (si, rank) {
        var site = D.sites[si], v = site[2 + k], lines = site[0];
        var where = lines.length ? D.lines[lines[0]] : "(no backtrace)";
        if (lines.length > 1) where += "  \u2190 " + D.lines[lines[1]];
        var trace = el("details", {}, [el("summary", {}, [where]),
          el("pre", {}, [site[1] + "\n" + lines.map(function (l) { return "  " + D.lines[l]; }).join("\n")])]);
        var row = el("tr", {}, [el("td", { "class": "n" }, [String(rank + 1)]),
          el("td", { "class": "n" }, [cost(key, v)]), el("td", { "class": "n" }, [pct(v, totals[key])])]);
        others.forEach(function (o) {
          row.appendChild(el("td", { "class": "n" }, [cost(o, site[2 + D.costs.indexOf(o)])]));
        });
        row.appendChild(el("td", { "class": "site" }, [trace]));
        t.appendChild(row);
      });
      if (!list.length)
        t.appendChild(el("tr", {}, [el("td", { colspan: 4 + others.length, "class": "none" },
          [S.leaks_only && key !== "leaked" && key !== "calls" && key !== "bytes"
            ? "not known for a leaks-only trace" : "none"])]));
      s.appendChild(t);
    });
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
  sizes();
  contexts();
  document.body.setAttribute("data-ready", "1");
})();
