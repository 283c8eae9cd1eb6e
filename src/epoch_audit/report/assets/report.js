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
  /* ---- trend over past runs --------------------------------------------------------------- */
  function compact(v) {
    if (v >= 1e9) { return (v / 1e9).toFixed(v >= 1e10 ? 0 : 1) + "G"; }
    if (v >= 1e6) { return (v / 1e6).toFixed(v >= 1e7 ? 0 : 1) + "M"; }
    if (v >= 1e3) { return (v / 1e3).toFixed(v >= 1e4 ? 0 : 1) + "k"; }
    return String(Math.round(v));
  }
  function present(v) { return v !== null && v !== undefined; }
  function drawTrend(container, runs) {
    var W = 960, H = 300, L = 56, R = 16, T = 40, VH = 126, LH = 66;
    var LT = T + VH + 30;                     /* lines-read panel, below the violations panel */
    var n = Math.max(runs.length, 1), slot = (W - L - R) / n;
    var bw = Math.max(2, Math.min(22, slot * 0.6));
    function cx(i) { return L + slot * (i + 0.5); }
    var vmax = 1, lmax = 1;
    runs.forEach(function (r) {
      if (present(r.new)) { vmax = Math.max(vmax, r.new); }
      if (present(r.known)) { vmax = Math.max(vmax, r.known); }
      if (present(r.lines)) { lmax = Math.max(lmax, r.lines); }
    });
    function vy(v) { return T + VH - v * VH / vmax; }
    function ly(v) { return LT + LH - v * LH / lmax; }
    var svg = el("svg", { "class": "trend", width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img" });
    svg.appendChild(el("title", {}, "violations and lines read per run"));
    /* legend */
    var lx = L;
    [["rect", "#c62828", "new violations (this run reported first)"], ["line", "#455a64", "violations known to gold"],
     ["rect", "#1e88e5", "lines read"]].forEach(function (item) {
      if (item[0] === "rect") { svg.appendChild(el("rect", { x: lx, y: 8, width: 12, height: 10, fill: item[1] })); }
      else { svg.appendChild(el("line", { x1: lx, y1: 13, x2: lx + 12, y2: 13, stroke: item[1], "stroke-width": 2 })); }
      var label = el("text", { x: lx + 16, y: 17, "class": "legend" }, item[2]);
      svg.appendChild(label);
      lx += 28 + item[2].length * 6.2;
    });
    /* axes with three ticks each */
    [[vy, vmax, T, VH, "violations"], [ly, lmax, LT, LH, "lines read"]].forEach(function (axis) {
      var f = axis[0], top = axis[2], h = axis[3];
      svg.appendChild(el("line", { x1: L, y1: top, x2: L, y2: top + h, stroke: "#999" }));
      svg.appendChild(el("line", { x1: L, y1: top + h, x2: W - R, y2: top + h, stroke: "#999" }));
      [0, axis[1] / 2, axis[1]].forEach(function (v) {
        svg.appendChild(el("line", { x1: L - 4, y1: f(v), x2: W - R, y2: f(v), stroke: "#eee" }));
        svg.appendChild(el("text", { x: L - 6, y: f(v) + 4, "text-anchor": "end" }, compact(v)));
      });
      svg.appendChild(el("text", { x: L + 4, y: top - 4, fill: "#666" }, axis[4]));
    });
    /* per run: its bars and a hover area over its whole column, linked to its report */
    runs.forEach(function (r, i) {
      var g = r.href ? el("a", { href: r.href, "class": "run" }) : el("g", { "class": "run" });
      g.appendChild(titled(el("rect", { x: L + slot * i, y: T, width: slot, height: LT + LH - T, fill: r.current ? "#fff8e1" : "transparent" }),
        r.run_id + (r.current ? " (this run)" : "") + "\n" + (r.t || "") + "\nexit code " + r.exit_code +
        "\nnew violations " + (present(r.new) ? r.new : "n/a") + ", known " + (present(r.known) ? r.known : "n/a") +
        "\nlines read " + (present(r.lines) ? r.lines : "n/a")));
      if (present(r.new) && r.new > 0) {
        g.appendChild(el("rect", { x: cx(i) - bw / 2, y: vy(r.new), width: bw, height: T + VH - vy(r.new), fill: "#c62828", "class": "new-bar" }));
      }
      if (present(r.lines) && r.lines > 0) {
        g.appendChild(el("rect", { x: cx(i) - bw / 2, y: ly(r.lines), width: bw, height: LT + LH - ly(r.lines), fill: "#1e88e5", "class": "lines-bar" }));
      }
      svg.appendChild(g);
    });
    /* known violations: a line, broken where a run did not check */
    var d = "", open = false;
    runs.forEach(function (r, i) {
      if (!present(r.known)) { open = false; return; }
      d += (open ? "L" : "M") + cx(i) + "," + vy(r.known);
      open = true;
      svg.appendChild(el("circle", { cx: cx(i), cy: vy(r.known), r: 2.5, fill: "#455a64", "pointer-events": "none" }));
    });
    if (d) { svg.appendChild(el("path", { d: d, fill: "none", stroke: "#455a64", "stroke-width": 2, "class": "known-line", "pointer-events": "none" })); }
    /* first and last run */
    if (runs.length) {
      var last = runs[runs.length - 1];
      svg.appendChild(el("text", { x: L, y: H - 8 }, runs[0].t || runs[0].run_id));
      svg.appendChild(el("text", { x: W - R, y: H - 8, "text-anchor": "end" }, (last.t || last.run_id) + (last.current ? " (this run)" : "")));
    }
    svg.appendChild(el("text", { x: W / 2, y: H - 8, "text-anchor": "middle", fill: "#666" }, runs.length + " runs, oldest first"));
    container.appendChild(svg);
  }
  var trend = document.getElementById("trend");
  if (trend && data.trend && data.trend.length) { drawTrend(trend, data.trend); }

  (data.timelines || []).forEach(function (tl, i) {
    var container = document.getElementById("chart-" + i);
    if (container) { drawTimeline(container, tl); }
  });
  window.__rendered = true;
})();
