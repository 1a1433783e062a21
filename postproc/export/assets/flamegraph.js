// postproc/export/assets/flamegraph.js: what the SVG flame graph does in a browser
// (postproc/export/flamegraph.c writes the frames; this adds behaviour only).
//   - hover a frame: its title (name, cost, share) in the details line;
//   - click a frame: zoom, so it spans the width; its callers stay below,
//     faded; "Reset Zoom" or Escape returns;
//   - "Search" or Ctrl-F: a regular expression; matching frames turn
//     magenta and the share of the total they cover is shown (nested
//     matches counted once); Escape clears;
//   - the address can carry a view, #zoom=NAME&search=RE (the first frame
//     called NAME), to link to it, and for tests, which cannot click.
// Each frame's drawn position is kept from the file, so every zoom starts
// from the original numbers and never accumulates rounding.
(function () {
  "use strict";
  var svg = document.documentElement;
  var PAD = 10, CHAR = 12 * 0.59, MATCH = "rgb(230,0,230)";
  var width = +svg.getAttribute("width");
  function byId(id) { return document.getElementById(id); }
  var details = byId("details"), unzoomButton = byId("unzoom");
  var searchButton = byId("search"), matched = byId("matched");

  var frames = Array.prototype.map.call(document.querySelectorAll("g.f"), function (g, k) {
    var rect = g.querySelector("rect"), title = g.querySelector("title").textContent;
    g.setAttribute("data-i", k);
    return {
      g: g, rect: rect, text: g.querySelector("text"), title: title,
      name: title.slice(0, title.lastIndexOf(" (")),
      x: +rect.getAttribute("x"), w: +rect.getAttribute("width"), y: +rect.getAttribute("y"),
      fill: rect.getAttribute("fill")
    };
  });

  function label(f, w) {
    var fit = Math.floor(w / CHAR);
    if (fit < 3) return "";
    return f.name.length <= fit ? f.name : f.name.slice(0, fit - 2) + "..";
  }

  function place(f, x, w) {
    f.rect.setAttribute("x", x.toFixed(2));
    f.rect.setAttribute("width", w.toFixed(2));
    f.text.setAttribute("x", (x + 3).toFixed(2));
    f.text.textContent = label(f, w);
  }

  function within(x, f) { return x >= f.x && x <= f.x + f.w; }

  // A frame stays when it is the zoomed one, inside it (its centre is) or
  // one of its callers (drawn below it, containing its centre).
  function zoom(z) {
    var scale = (width - 2 * PAD) / z.w;
    frames.forEach(function (f) {
      var caller = f.y > z.y, keep = caller ? within(z.x + z.w / 2, f) : within(f.x + f.w / 2, z);
      f.g.classList.toggle("hide", !keep);
      f.g.classList.toggle("fade", keep && caller);
      if (!keep) return;
      var x0 = Math.max(f.x, z.x), x1 = Math.min(f.x + f.w, z.x + z.w);
      place(f, PAD + (x0 - z.x) * scale, (x1 - x0) * scale);
    });
    unzoomButton.classList.remove("hide");
  }

  function unzoom() {
    frames.forEach(function (f) {
      f.g.classList.remove("hide", "fade");
      place(f, f.x, f.w);
    });
    unzoomButton.classList.add("hide");
  }

  function clearSearch() {
    frames.forEach(function (f) { f.rect.setAttribute("fill", f.fill); });
    matched.textContent = " ";
    searchButton.textContent = "Search";
  }

  function search(term) {
    var re;
    try { re = new RegExp(term); } catch (e) { matched.textContent = "bad expression"; return; }
    var spans = [];
    frames.forEach(function (f) {
      var hit = re.test(f.name);
      f.rect.setAttribute("fill", hit ? MATCH : f.fill);
      if (hit) spans.push([f.x, f.x + f.w]);
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -Infinity;
    spans.forEach(function (s) {
      if (s[0] >= end) { covered += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { covered += s[1] - end; end = s[1]; }
    });
    var total = frames.length ? frames[0].w : 0;
    matched.textContent = "Matched: " + (total ? (100 * covered / total).toFixed(1) : "0") + "%";
    searchButton.textContent = "Reset Search";
  }

  function askSearch() {
    if (searchButton.textContent !== "Search") { clearSearch(); return; }
    var term = window.prompt("Search frames for (regular expression):", "");
    if (term) search(term);
  }

  function frameOf(e) {
    var g = e.target.closest ? e.target.closest("g.f") : null;
    return g ? frames[+g.getAttribute("data-i")] : null;
  }

  var group = byId("frames");
  group.addEventListener("click", function (e) { var f = frameOf(e); if (f) zoom(f); });
  group.addEventListener("mouseover", function (e) {
    var f = frameOf(e);
    details.textContent = f ? f.title : " ";
  });
  group.addEventListener("mouseout", function () { details.textContent = " "; });
  unzoomButton.addEventListener("click", unzoom);
  searchButton.addEventListener("click", askSearch);
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey && e.key === "f") || e.key === "F3") { e.preventDefault(); askSearch(); }
    else if (e.key === "Escape") { unzoom(); clearSearch(); }
  });
  var view = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
    var i = kv.indexOf("=");
    if (i > 0) view[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
  });
  if (view.zoom)
    frames.some(function (f) { if (f.name === view.zoom) { zoom(f); return true; } return false; });
  if (view.search) search(view.search);
  svg.setAttribute("data-ready", "1");
})();
