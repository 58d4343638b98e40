"use strict";
(function () {
  var D = JSON.parse(document.getElementById("gpuscope-data").textContent);
  var NS = "http://www.w3.org/2000/svg";

  function el(tag, attrs, parent, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function svgEl(tag, attrs, parent, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function svg(parent, w, h) {
    return svgEl("svg", { viewBox: "0 0 " + w + " " + h, preserveAspectRatio: "xMinYMin meet" }, parent);
  }
  function body(id) { return document.querySelector("#" + id + " .body"); }
  function note(parent, text) { return el("p", { class: "note" }, parent, text); }
  function done(id, n) { document.getElementById(id).setAttribute("data-items", String(n)); }
  function fmt(x, d) { return x === null || x === undefined ? "-" : Number(x).toFixed(d === undefined ? 1 : d); }
  function ms(ns) { return ns === null || ns === undefined ? "-" : (ns / 1e6).toFixed(3); }
  function dur(ns) {
    if (ns === null || ns === undefined) return "-";
    if (ns < 1e3) return ns.toFixed(0) + " ns";
    if (ns < 1e6) return (ns / 1e3).toFixed(1) + " µs";
    return (ns / 1e6).toFixed(3) + " ms";
  }
  function hue(s) { var h = 0; for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) % 360; return "hsl(" + h + ",60%,55%)"; }
  function table(parent, head, rows) {
    var t = el("table", {}, parent), tr = el("tr", {}, el("thead", {}, t));
    head.forEach(function (h) { el("th", {}, tr, h); });
    var tb = el("tbody", {}, t);
    rows.forEach(function (r) {
      var row = el("tr", {}, tb);
      r.forEach(function (c) {
        if (c && typeof c === "object") el("td", { class: c.cls }, row, c.text); else el("td", {}, row, c);
      });
    });
    return t;
  }
  function linear(d0, d1, r0, r1) {
    var k = d1 === d0 ? 0 : (r1 - r0) / (d1 - d0);
    return function (x) { return r0 + (x - d0) * k; };
  }

  function header() {
    var m = D.meta, h = document.getElementById("meta");
    el("h1", {}, h, "gpuscope: " + m.workload);
    el("div", { class: "facts" }, h, m.adapter + " · driver " + (m.driver || "unknown") + " · weights " + m.weights +
      " · timing " + m.timing + " · commit " + (m.commit || "unknown") + " · " + m.tool + ", format " + m.format);
    var line = m.tg ? "tg: " + fmt(m.tg.median) + " tok/s (p10–p90 " + fmt(m.tg.p10) + "–" + fmt(m.tg.p90) + ", n=" + m.tg.n + ", " + m.scope + ")" : "no tokens decoded";
    if (m.pp) line += " · pp" + m.pp.n + ": " + fmt(m.pp.median) + " tok/s";
    el("div", { class: "headline" }, h, line);
    if (m.incomplete) el("div", { class: "fail" }, h, "Incomplete run: " + m.incomplete);
  }

  function tokenTimeline() {
    var b = body("panel-tokens"), T = D.tokens, pts = T.points;
    if (!pts.length) { note(b, "No tokens decoded."); done("panel-tokens", 0); return; }
    var W = 1000, H = 220, L = 50, R = 10, top = 10, bottom = 30;
    var s = svg(b, W, H);
    var maxY = 0;
    pts.forEach(function (p) { maxY = Math.max(maxY, p[2], p[3] || 0); });
    var x = linear(0, pts.length, L, W - R), y = linear(0, maxY, H - bottom, top);
    var bw = Math.max(0.5, (W - L - R) / pts.length);
    pts.forEach(function (p, i) {
      var r = svgEl("rect", { x: x(i), y: y(p[2]), width: Math.max(0.5, bw - 0.5), height: H - bottom - y(p[2]), fill: "#9ecae1" }, s);
      svgEl("title", {}, r, (p[0] === p[1] ? "token " + p[0] : "tokens " + p[0] + "–" + p[1]) + ": wall " + ms(p[2]) + " ms, GPU busy " + ms(p[3]) + " ms");
      if (p[3] !== null) svgEl("rect", { x: x(i) + bw * 0.25, y: y(p[3]), width: Math.max(0.5, bw * 0.5), height: H - bottom - y(p[3]), fill: "#e6550d" }, s);
    });
    svgEl("line", { x1: L, y1: H - bottom, x2: W - R, y2: H - bottom, stroke: "#999" }, s);
    svgEl("text", { x: 2, y: top + 10 }, s, ms(maxY) + " ms");
    svgEl("text", { x: L, y: H - 8 }, s, "token " + pts[0][0]);
    svgEl("text", { x: W - R - 80, y: H - 8 }, s, "token " + pts[pts.length - 1][1]);
    var lg = el("div", { class: "legend" }, b);
    el("i", { style: "background:#9ecae1" }, el("span", {}, lg, "")).after(" wall per token");
    el("i", { style: "background:#e6550d" }, el("span", {}, lg, "")).after(" GPU busy per token");
    if (T.merged) note(b, T.total + " tokens merged into " + pts.length + " points (means of consecutive tokens).");
    done("panel-tokens", pts.length);
  }

  function dispatchTimeline() {
    var b = body("panel-dispatches"), T = D.dispatches;
    if (!T.dispatches && !T.passes) { note(b, T.why); done("panel-dispatches", 0); return; }
    var items = T.dispatches.length ? T.dispatches : T.passes.map(function (p) { return [p[0], p[1], p[2], p[2], 0]; });
    note(b, "Token " + T.token + " (the steady token with the median wall time): " + T.total + " timed dispatches" +
      (T.shown < T.total ? ", first " + T.shown + " drawn" : "") + ". Wheel to zoom, drag to pan, double-click to reset.");
    var W = 1000, H = 120, L = 10, R = 10;
    var s = svg(b, W, H);
    var end = 0;
    items.forEach(function (d) { end = Math.max(end, d[0] + d[1]); });
    T.passes.forEach(function (p) { end = Math.max(end, p[0] + p[1]); });
    var view = [0, end || 1];
    var g = svgEl("g", {}, s), axis = svgEl("g", {}, s);
    function draw() {
      while (g.firstChild) g.removeChild(g.firstChild);
      while (axis.firstChild) axis.removeChild(axis.firstChild);
      var x = linear(view[0], view[1], L, W - R);
      T.passes.forEach(function (p) {
        if (p[0] + p[1] < view[0] || p[0] > view[1]) return;
        var r = svgEl("rect", { x: x(p[0]), y: 10, width: Math.max(0.5, x(p[0] + p[1]) - x(p[0])), height: 18, fill: "#ccc", stroke: "#fff" }, g);
        svgEl("title", {}, r, "pass " + p[2] + ": " + dur(p[1]));
      });
      items.forEach(function (d) {
        if (d[0] + d[1] < view[0] || d[0] > view[1]) return;
        var r = svgEl("rect", { x: x(d[0]), y: 32, width: Math.max(0.5, x(d[0] + d[1]) - x(d[0])), height: 50, fill: hue(d[2]) }, g);
        svgEl("title", {}, r, d[3] + " (" + d[2] + "): " + dur(d[1]) + ", " + d[4] + " bytes");
      });
      svgEl("text", { x: L, y: H - 10 }, axis, dur(view[0]));
      svgEl("text", { x: W - R - 80, y: H - 10 }, axis, dur(view[1]));
    }
    draw();
    function at(ev) { var r = s.getBoundingClientRect(); return view[0] + (ev.clientX - r.left) / r.width * (view[1] - view[0]); }
    s.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var c = at(ev), k = ev.deltaY < 0 ? 0.8 : 1.25;
      view = [c - (c - view[0]) * k, c + (view[1] - c) * k];
      draw();
    }, { passive: false });
    var drag = null;
    s.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, v: view.slice() }; });
    window.addEventListener("mouseup", function () { drag = null; });
    s.addEventListener("mousemove", function (ev) {
      if (!drag) return;
      var r = s.getBoundingClientRect(), dt = (ev.clientX - drag.x) / r.width * (drag.v[1] - drag.v[0]);
      view = [drag.v[0] - dt, drag.v[1] - dt];
      draw();
    });
    s.addEventListener("dblclick", function () { view = [0, end || 1]; draw(); });
    done("panel-dispatches", items.length);
  }

  function opBars() {
    var b = body("panel-ops"), rows = D.ops.rows;
    if (!rows.length) { note(b, "No dispatches recorded."); done("panel-ops", 0); return; }
    var timed = rows.filter(function (r) { return r.total_ns !== null; });
    if (timed.length) {
      var W = 1000, row = 18, L = 160, H = timed.length * row + 10;
      var s = svg(b, W, H), max = Math.max.apply(null, timed.map(function (r) { return r.total_ns; }));
      var x = linear(0, max, L, W - 200);
      timed.forEach(function (r, i) {
        var y = 5 + i * row;
        svgEl("text", { x: 2, y: y + 12 }, s, r.op);
        var bar = svgEl("rect", { x: L, y: y, width: Math.max(0.5, x(r.total_ns) - L), height: row - 4, fill: hue(r.op) }, s);
        svgEl("title", {}, bar, r.op + ": " + ms(r.total_ns) + " ms over " + r.calls + " calls");
        svgEl("text", { x: x(r.total_ns) + 4, y: y + 12 }, s, ms(r.total_ns) + " ms · " + fmt(r.percent) + "% · " + fmt(r.gbps, 2) + " GB/s");
      });
    } else {
      note(b, "No per-dispatch GPU times (timing " + D.meta.timing + "); calls per op below.");
    }
    table(b, ["op", "calls", "total ms", "% GPU", "GB/s", "GFLOP/s", "FLOP/B", "% of ceiling", "bound"], rows.map(function (r) {
      return [r.op, r.calls, ms(r.total_ns), fmt(r.percent), fmt(r.gbps, 2), fmt(r.gflops, 2), fmt(r.intensity, 2), fmt(r.ceiling_percent), r.bound || "-"];
    }));
    done("panel-ops", rows.length);
  }

  function roofline() {
    var b = body("panel-roofline"), R = D.roofline;
    var pts = D.ops.rows.filter(function (r) { return r.intensity > 0 && r.gflops > 0; });
    if (R.why) { note(b, "No measured ceilings: " + R.why); }
    if (!pts.length) { note(b, "No op has both a FLOP count and a GPU time to plot."); done("panel-roofline", R.why ? 1 : 0); return; }
    var W = 1000, H = 320, L = 60, Rm = 20, top = 10, bottom = 30;
    var ix = pts.map(function (p) { return p.intensity; }), gy = pts.map(function (p) { return p.gflops; });
    var xmin = Math.min.apply(null, ix) / 4, xmax = Math.max.apply(null, ix) * 4;
    var ymin = Math.min.apply(null, gy) / 4, ymax = Math.max.apply(null, gy) * 4;
    if (R.bandwidth_gbps) {
      ymax = Math.max(ymax, R.bandwidth_gbps * xmax, R.flops_gflops || 0);
      if (R.flops_gflops) ymax = Math.min(ymax, R.flops_gflops * 2);
    }
    var lx = linear(Math.log10(xmin), Math.log10(xmax), L, W - Rm), ly = linear(Math.log10(ymin), Math.log10(ymax), H - bottom, top);
    var X = function (v) { return lx(Math.log10(v)); }, Y = function (v) { return ly(Math.log10(Math.max(v, ymin))); };
    var s = svg(b, W, H);
    svgEl("line", { x1: L, y1: H - bottom, x2: W - Rm, y2: H - bottom, stroke: "#999" }, s);
    svgEl("line", { x1: L, y1: top, x2: L, y2: H - bottom, stroke: "#999" }, s);
    svgEl("text", { x: W / 2 - 80, y: H - 6 }, s, "intensity (FLOP/byte, log)");
    svgEl("text", { x: 2, y: top + 10 }, s, fmt(ymax, 0) + " GFLOP/s");
    svgEl("text", { x: 2, y: H - bottom }, s, fmt(ymin, 3));
    if (R.bandwidth_gbps) {
      var path = [], n = 64;
      for (var i = 0; i <= n; i++) {
        var v = xmin * Math.pow(xmax / xmin, i / n), c = R.bandwidth_gbps * v;
        if (R.flops_gflops) c = Math.min(c, R.flops_gflops);
        path.push((i ? "L" : "M") + X(v).toFixed(1) + "," + Y(c).toFixed(1));
      }
      svgEl("path", { d: path.join(" "), stroke: "#333", fill: "none", "stroke-width": 2 }, s);
      svgEl("text", { x: L + 6, y: top + 24 }, s, "ceiling: " + fmt(R.bandwidth_gbps, 1) + " GB/s" + (R.flops_gflops ? ", " + fmt(R.flops_gflops, 0) + " GFLOP/s" : ""));
    }
    pts.forEach(function (p) {
      var c = svgEl("circle", { cx: X(p.intensity), cy: Y(p.gflops), r: 6, fill: hue(p.op), stroke: "#333" }, s);
      svgEl("title", {}, c, p.op + ": " + fmt(p.intensity, 2) + " FLOP/B, " + fmt(p.gflops, 2) + " GFLOP/s" + (p.ceiling_percent !== null ? ", " + fmt(p.ceiling_percent) + "% of ceiling" : ""));
      svgEl("text", { x: X(p.intensity) + 8, y: Y(p.gflops) + 4 }, s, p.op);
    });
    done("panel-roofline", pts.length);
  }

  function layerStrip() {
    var b = body("panel-layers"), rows = D.layers.filter(function (r) { return r[1] !== null; });
    if (!rows.length) { note(b, "GPU time per layer unknown (timing " + D.meta.timing + ")."); done("panel-layers", 0); return; }
    var W = 1000, H = 90, cw = (W - 20) / rows.length;
    var max = Math.max.apply(null, rows.map(function (r) { return r[1]; }));
    var s = svg(b, W, H);
    rows.forEach(function (r, i) {
      var k = max ? r[1] / max : 0;
      var c = svgEl("rect", { x: 10 + i * cw, y: 10, width: Math.max(0.5, cw - 1), height: 50, fill: "hsl(20," + Math.round(30 + 60 * k) + "%," + Math.round(85 - 45 * k) + "%)" }, s);
      svgEl("title", {}, c, r[0] + ": median " + ms(r[1]) + " ms (p10–p90 " + ms(r[2]) + "–" + ms(r[3]) + ")");
      if (cw > 24) svgEl("text", { x: 12 + i * cw, y: 75 }, s, r[0]);
    });
    note(b, "Median GPU time per token per section; darker is slower (slowest: " + ms(max) + " ms).");
    done("panel-layers", rows.length);
  }

  function counters() {
    var b = body("panel-counters"), C = D.counters;
    table(b, ["counter", "first token", "median", "max"], C.rows.map(function (r) { return [r[0], fmt(r[1], 0), fmt(r[2], 0), fmt(r[3], 0)]; }));
    el("h3", {}, b, "Checks");
    table(b, ["check", "expected", "observed", "status"], C.checks.map(function (c) {
      return [c[0], c[1], c[2], { text: c[3], cls: c[3] === "n/a" ? "na" : c[3] }];
    }));
    done("panel-counters", C.rows.length + C.checks.length);
  }

  function findings() {
    var b = body("panel-findings"), F = D.findings;
    el("p", {}, b, "Bottleneck: " + F.headline);
    var ul = el("ul", {}, b);
    F.evidence.forEach(function (e) { el("li", {}, ul, e); });
    table(b, ["checklist item", "status", "finding"], F.items.map(function (i) { return [i.title, { text: i.status, cls: i.status }, i.summary]; }));
    el("h3", {}, b, "Opportunities (by estimated time saved per token)");
    if (F.opportunities.length) {
      table(b, ["opportunity", "saved per token", "basis"], F.opportunities.map(function (o) { return [o[0], o[1] === null ? "unknown" : dur(o[1]), o[2]]; }));
    } else {
      note(b, "None found.");
    }
    done("panel-findings", F.items.length + F.evidence.length + 1);
  }

  header();
  [tokenTimeline, dispatchTimeline, opBars, roofline, layerStrip, counters, findings].forEach(function (f) { f(); });
  document.body.setAttribute("data-rendered", "ok");
  // Milliseconds from navigation start to every panel drawn (the load-time benchmark).
  document.body.setAttribute("data-render-ms", String(Math.round(performance.now())));
})();
