/* epoch-audit run report: table sorting and per-partition epoch timelines (inline SVG, no libraries). */
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var PALETTE = ["#1565c0", "#2e7d32", "#6a1b9a", "#00838f", "#f9a825", "#4e342e", "#ad1457", "#283593", "#558b2f"];

  function el(name, attrs, text) {
    var node = document.createElementNS(SVGNS, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function titled(node, text) { node.appendChild(el("title", {}, text)); return node; }
  function leaderColor(leader) {
    if (leader === null || leader === undefined || leader < 0) { return "#9e9e9e"; }
    return PALETTE[Math.abs(leader) % PALETTE.length];
  }
  // membership, not order: a controller may log the same ISR in another order
  function sortedIsr(a) { return a ? a.slice().sort(function (x, y) { return x - y; }) : null; }
  function sameIsr(a, b) { return JSON.stringify(sortedIsr(a)) === JSON.stringify(sortedIsr(b)); }

  /* ---- sortable tables ------------------------------------------------------------------ */
  function cellKey(td) {
    var v = td.getAttribute("data-sort");
    return v === null ? td.textContent.trim() : v;
  }
  function sortTable(table, col, th) {
    var asc = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (ra, rb) {
      var a = cellKey(ra.cells[col]), b = cellKey(rb.cells[col]);
      var na = parseFloat(a), nb = parseFloat(b);
      var cmp = (!isNaN(na) && !isNaN(nb) && String(na) === a && String(nb) === b) ? na - nb : a.localeCompare(b);
      return asc ? cmp : -cmp;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.addEventListener("click", function () { sortTable(table, i, th); });
    });
  });

  /* ---- timelines ------------------------------------------------------------------------ */
  function drawTimeline(container, tl) {
    var pts = tl.points, W = 960, H = 250, L = 48, R = 30, T = 18, B = 56;
    var plotH = H - T - B - 26;               /* leader-epoch panel; below it the ISR band */
    var n = Math.max(pts.length, 1);
    var les = pts.map(function (p) { return p.le; }).filter(function (v) { return v !== null; });
    tl.marks.forEach(function (m) { if (m.le !== null) { les.push(m.le); } });
    var lo = les.length ? Math.min.apply(null, les) : 0, hi = les.length ? Math.max.apply(null, les) : 1;
    if (hi === lo) { hi = lo + 1; }
    function x(i) { return L + (n === 1 ? (W - L - R) / 2 : i * (W - L - R) / (n - 1)); }
    function y(le) { return T + plotH - (le - lo) * plotH / (hi - lo); }
    var svg = el("svg", { "class": "timeline", width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img" });
    svg.appendChild(el("title", {}, "leader and leader epoch of " + tl.title));
    /* axes and LE ticks */
    svg.appendChild(el("line", { x1: L, y1: T, x2: L, y2: T + plotH, stroke: "#999" }));
    svg.appendChild(el("line", { x1: L, y1: T + plotH, x2: W - R, y2: T + plotH, stroke: "#999" }));
    var step = Math.max(1, Math.ceil((hi - lo) / 5));
    for (var v = lo; v <= hi; v += step) {
      svg.appendChild(el("line", { x1: L - 4, y1: y(v), x2: W - R, y2: y(v), stroke: "#eee" }));
      svg.appendChild(el("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" }, v));
    }
    svg.appendChild(el("text", { x: 4, y: T - 6 }, "leader epoch"));
    /* LE step line */
    var d = "", prev = null;
    pts.forEach(function (p, i) {
      if (p.le === null) { return; }
      d += prev === null ? "M" + x(i) + "," + y(p.le) : "H" + x(i) + "V" + y(p.le);
      prev = p.le;
    });
    if (d) { svg.appendChild(el("path", { d: d, fill: "none", stroke: "#455a64", "stroke-width": 1.5, "class": "le-line" })); }
    /* one point per decision, coloured by leader; a label where the leader changes */
    var bandY = T + plotH + 18, lastLeader;
    pts.forEach(function (p, i) {
      var cy = p.le === null ? T + plotH : y(p.le);
      var c = titled(el("circle", { cx: x(i), cy: cy, r: 4, fill: leaderColor(p.leader), "class": "decision" }),
        "#" + p.seq + " " + (p.t || "no time") + "\nleader " + p.leader + ", LE " + p.le + ", PE " + p.pe +
        "\nISR " + JSON.stringify(p.isr) + (p.source ? "\n" + p.source : ""));
      svg.appendChild(c);
      if (i === 0 || p.leader !== lastLeader) {
        svg.appendChild(el("text", { x: x(i) + 5, y: cy - 6, fill: leaderColor(p.leader) }, "B" + p.leader));
      }
      lastLeader = p.leader;
      /* ISR band: a diamond where the ISR changed */
      if (i > 0 && !sameIsr(p.isr, pts[i - 1].isr)) {
        var s = 5, cx = x(i);
        svg.appendChild(titled(el("path", {
          d: "M" + cx + "," + (bandY - s) + "L" + (cx + s) + "," + bandY + "L" + cx + "," + (bandY + s) + "L" + (cx - s) + "," + bandY + "Z",
          fill: "#00897b", "class": "isr-change"
        }), "#" + p.seq + " ISR " + JSON.stringify(pts[i - 1].isr) + " \u2192 " + JSON.stringify(p.isr)));
      }
    });
    svg.appendChild(el("text", { x: 4, y: bandY + 4 }, "ISR \u0394"));
    /* violation markers: at the first decision whose LE reaches the violation's epoch */
    tl.marks.forEach(function (m) {
      var idx = pts.length - 1;
      for (var i = 0; i < pts.length; i++) { if (m.le !== null && pts[i].le !== null && pts[i].le >= m.le) { idx = i; break; } }
      var mx = pts.length ? x(idx) : L;
      var link = el("a", { href: "#v-" + m.vid, "class": "violation-mark" });
      link.appendChild(el("line", { x1: mx, y1: T, x2: mx, y2: T + plotH, stroke: m.severity === "error" ? "#c62828" : "#ef6c00", "stroke-dasharray": "4 3", "stroke-width": 1.5 }));
      link.appendChild(el("path", { d: "M" + (mx - 6) + "," + (T - 2) + "L" + (mx + 6) + "," + (T - 2) + "L" + mx + "," + (T + 8) + "Z", fill: m.severity === "error" ? "#c62828" : "#ef6c00" }));
      titled(link, m.invariant + " (" + m.severity + ", LE " + m.le + ")\n" + m.text);
      svg.appendChild(link);
    });
    /* time labels: first and last decision */
    if (pts.length) {
      svg.appendChild(el("text", { x: L, y: H - 8 }, "#" + pts[0].seq + "  " + (pts[0].t || "")));
      svg.appendChild(el("text", { x: W - R, y: H - 8, "text-anchor": "end" }, "#" + pts[pts.length - 1].seq + "  " + (pts[pts.length - 1].t || "")));
    }
    svg.appendChild(el("text", { x: W / 2, y: H - 8, "text-anchor": "middle", fill: "#666" }, "controller decisions in causal order (" + pts.length + (tl.truncated ? ", latest shown" : "") + ")"));
    container.appendChild(svg);
  }
  (data.timelines || []).forEach(function (tl, i) {
    var container = document.getElementById("chart-" + i);
    if (container) { drawTimeline(container, tl); }
  });
  window.__rendered = true;
})();
