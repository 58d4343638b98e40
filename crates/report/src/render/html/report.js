"use strict";
(function () {
  var D = JSON.parse(document.getElementById("gpuscope-data").textContent);
  var NS = "http://www.w3.org/2000/svg";

  // ---- DOM and number helpers ----

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

  // ---- Colours: one per op, the same in every panel ----

  var PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#79706e"];
  var opColours = {}, nColours = 0;
  function colour(op) {
    if (!(op in opColours)) {
      var i = nColours++;
      // Past the palette, golden-angle hues keep consecutive ops apart; two lightnesses
      // tell apart the ones that come round to a similar hue.
      opColours[op] = i < PALETTE.length ? PALETTE[i] :
        "hsl(" + Math.round(i * 137.508) % 360 + ",55%," + (i % 2 ? 42 : 64) + "%)";
    }
    return opColours[op];
  }
  // The busiest ops get the palette's clearest colours.
  D.ops.rows.forEach(function (r) { colour(r.op); });

  function legend(parent, id, entries) {
    var lg = el("div", { class: "legend", id: id }, parent);
    entries.forEach(function (e) {
      var span = el("span", {}, lg);
      el("i", { style: "background:" + e.colour }, span);
      span.appendChild(document.createTextNode(e.text));
    });
    return lg;
  }

  // ---- Label geometry: boxes in the SVG's user units ----

  // Text is measured on a canvas before it is drawn, in the font SVG text has: measuring
  // drawn SVG text would lay the chart out again for each one (a big timeline has 20,000
  // rects), and a label that does not fit is then never drawn.
  var ctx = null, ascent = 0, descent = 0, measured = {};
  // A canvas drawing in the font that the page's styles give SVG text.
  function svgTextCanvas() {
    var s = svgEl("svg", {}, document.body), style = getComputedStyle(svgEl("text", {}, s, "x"));
    var c = document.createElement("canvas").getContext("2d");
    c.font = style.fontStyle + " " + style.fontWeight + " " + style.fontSize + " " + style.fontFamily;
    document.body.removeChild(s);
    var m = c.measureText("Hg");
    ascent = m.fontBoundingBoxAscent;
    descent = m.fontBoundingBoxDescent;
    return c;
  }
  // The box of `text` drawn at the origin with `anchor` (SVG's text-anchor).
  function measure(text, anchor) {
    ctx = ctx || svgTextCanvas();
    var key = (anchor || "start") + "|" + text;
    if (!(key in measured)) {
      var w = ctx.measureText(text).width;
      measured[key] = { x: anchor === "middle" ? -w / 2 : anchor === "end" ? -w : 0, y: -ascent, w: w, h: ascent + descent };
    }
    return measured[key];
  }
  // The box of `text` drawn at (x, y).
  function textBox(x, y, text, anchor) {
    var m = measure(text, anchor);
    return { x: x + m.x, y: y + m.y, w: m.w, h: m.h };
  }
  function hit(a, b, pad) {
    return a.x < b.x + b.w + pad && b.x < a.x + a.w + pad && a.y < b.y + b.h + pad && b.y < a.y + a.h + pad;
  }
  function inside(b, r) { return b.x >= r.x && b.y >= r.y && b.x + b.w <= r.x + r.w && b.y + b.h <= r.y + r.h; }
  // Whether the segment from (x1, y1) to (x2, y2) crosses box `b` (Liang-Barsky clipping).
  function crosses(x1, y1, x2, y2, b) {
    var t0 = 0, t1 = 1, p = [x1 - x2, x2 - x1, y1 - y2, y2 - y1], q = [x1 - b.x, b.x + b.w - x1, y1 - b.y, b.y + b.h - y1];
    for (var i = 0; i < 4; i++) {
      if (p[i] === 0) { if (q[i] < 0) return false; continue; }
      var r = q[i] / p[i];
      if (p[i] < 0) { if (r > t1) return false; t0 = Math.max(t0, r); } else { if (r < t0) return false; t1 = Math.min(t1, r); }
    }
    return true;
  }
  // What is already drawn in one chart (boxes, and leader lines as segments), which a
  // new label or leader line must not touch.
  function occupied() {
    var boxes = [], lines = [];
    return {
      free: function (b, pad) {
        var p = { x: b.x - pad, y: b.y - pad, w: b.w + 2 * pad, h: b.h + 2 * pad };
        return !boxes.some(function (o) { return hit(o, b, pad); }) &&
          !lines.some(function (l) { return crosses(l[0], l[1], l[2], l[3], p); });
      },
      clear: function (l) { return !boxes.some(function (o) { return crosses(l[0], l[1], l[2], l[3], o); }); },
      add: function (b) { boxes.push(b); },
      addLine: function (l) { lines.push(l); },
    };
  }
  // Draws `text` (measured at the origin as `bb`) so that its box is `to`.
  function textAt(parent, text, bb, to, attrs) {
    attrs = attrs || {};
    attrs.x = (to.x - bb.x).toFixed(1);
    attrs.y = (to.y - bb.y).toFixed(1);
    return svgEl("text", attrs, parent, text);
  }

  // ---- Axes ----

  // Decades from lo to hi; 2× and 5× too when there are few, so a short axis has ticks.
  function logTicks(lo, hi) {
    var out = [], steps = Math.log10(hi / lo) < 2.5 ? [1, 2, 5] : [1];
    for (var e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      steps.forEach(function (m) { var v = m * Math.pow(10, e); if (v >= lo && v <= hi) out.push(v); });
    }
    return out;
  }
  // About `n` ticks at a multiple of 1, 2 or 5 × a power of ten.
  function linearTicks(lo, hi, n) {
    var raw = (hi - lo) / Math.max(1, n), p = Math.pow(10, Math.floor(Math.log10(raw || 1))), m = raw / p;
    var step = (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p, out = [];
    for (var i = Math.ceil(lo / step); i * step <= hi + step * 1e-9; i++) out.push(i * step);
    return { values: out, step: step };
  }
  // 0.002, 0.5, 20, 1k, 10M: short, and exact for 1-2-5 ticks.
  function num(v) {
    var a = Math.abs(v);
    if (a >= 1e9) return +(v / 1e9).toPrecision(3) + "G";
    if (a >= 1e6) return +(v / 1e6).toPrecision(3) + "M";
    if (a >= 1e4) return +(v / 1e3).toPrecision(3) + "k";
    return String(+v.toPrecision(3));
  }
  // Time ticks in the unit that the axis's end (`max`) reads best in, with as many
  // decimals as the step needs.
  function durTick(step, max) {
    var unit = max >= 1e6 ? [1e6, " ms"] : max >= 1e3 ? [1e3, " µs"] : [1, " ns"];
    var decimals = Math.max(0, Math.ceil(-Math.log10(step / unit[0]) - 1e-9));
    return function (ns) { return ns === 0 ? "0" : (ns / unit[0]).toFixed(decimals) + unit[1]; };
  }

  // Ticks and labels under the plot area `plot`. A label that would touch one in `taken`
  // (the one before it, the other axis's) or leave the chart is not drawn; its tick is.
  function xAxis(s, plot, taken, o) {
    var g = svgEl("g", { class: "axis x" }, s), y0 = plot.y + plot.h;
    var width = (s.ownerSVGElement || s).viewBox.baseVal.width;
    svgEl("line", { x1: plot.x, y1: y0, x2: plot.x + plot.w, y2: y0 }, g);
    o.ticks.forEach(function (v) {
      var x = o.at(v);
      if (o.grid) svgEl("line", { x1: x, y1: plot.y, x2: x, y2: y0, class: "grid" }, g);
      svgEl("line", { x1: x, y1: y0, x2: x, y2: y0 + 4 }, g);
      var text = o.text(v), b = textBox(x, y0 + 16, text, "middle");
      if (b.x < 0 || b.x + b.w > width || !taken.free(b, 8)) return;
      svgEl("text", { x: x, y: y0 + 16, "text-anchor": "middle", class: "tick " + o.cls }, g, text);
      taken.add(b);
    });
    if (o.title) {
      svgEl("text", { x: plot.x + plot.w / 2, y: y0 + 34, "text-anchor": "middle", class: "axis-title" }, g, o.title);
      taken.add(textBox(plot.x + plot.w / 2, y0 + 34, o.title, "middle"));
    }
  }
  // The same up the left edge; the title (drawn first, so that labels make way for it)
  // reads bottom to top beside the labels.
  function yAxis(s, plot, taken, o) {
    var g = svgEl("g", { class: "axis y" }, s), x0 = plot.x;
    if (o.title) {
      var cy = plot.y + plot.h / 2;
      var title = measure(o.title).w > plot.h ? o.short || o.title : o.title, len = measure(title).w;
      svgEl("text", { x: 12, y: cy, "text-anchor": "middle", transform: "rotate(-90 12 " + cy + ")", class: "axis-title" }, g, title);
      taken.add({ x: 4, y: cy - len / 2, w: 16, h: len });
    }
    svgEl("line", { x1: x0, y1: plot.y, x2: x0, y2: plot.y + plot.h }, g);
    o.ticks.forEach(function (v) {
      var y = o.at(v);
      if (o.grid) svgEl("line", { x1: x0, y1: y, x2: plot.x + plot.w, y2: y, class: "grid" }, g);
      svgEl("line", { x1: x0 - 4, y1: y, x2: x0, y2: y }, g);
      var text = o.text(v), b = textBox(x0 - 6, y + 4, text, "end");
      if (b.y < 0 || !taken.free(b, 2)) return;
      svgEl("text", { x: x0 - 6, y: y + 4, "text-anchor": "end", class: "tick " + o.cls }, g, text);
      taken.add(b);
    });
  }

  // ---- Header ----

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

  // ---- Token timeline ----

  function tokenTimeline() {
    var b = body("panel-tokens"), T = D.tokens, pts = T.points;
    if (!pts.length) { note(b, "No tokens decoded."); done("panel-tokens", 0); return; }
    var W = 1000, H = 240, plot = { x: 76, y: 10, w: 1000 - 76 - 10, h: 240 - 10 - 46 };
    var s = svg(b, W, H), maxY = 0;
    pts.forEach(function (p) { maxY = Math.max(maxY, p[2], p[3] || 0); });
    var yt = linearTicks(0, maxY || 1, 5), top = yt.values[yt.values.length - 1];
    var x = linear(0, pts.length, plot.x, plot.x + plot.w), y = linear(0, Math.max(top, maxY), plot.y + plot.h, plot.y);
    var bw = plot.w / pts.length, base = plot.y + plot.h;
    var taken = occupied();
    yAxis(s, plot, taken, { ticks: yt.values, at: y, text: durTick(yt.step, top), cls: "tokens-y-tick", grid: true, title: "time per token" });
    pts.forEach(function (p, i) {
      var r = svgEl("rect", { x: x(i), y: y(p[2]), width: Math.max(0.5, bw - 0.5), height: base - y(p[2]), fill: "#9ecae1" }, s);
      svgEl("title", {}, r, (p[0] === p[1] ? "token " + p[0] : "tokens " + p[0] + "–" + p[1]) + ": wall " + ms(p[2]) + " ms, GPU busy " + ms(p[3]) + " ms");
      if (p[3] !== null) svgEl("rect", { x: x(i) + bw * 0.25, y: y(p[3]), width: Math.max(0.5, bw * 0.5), height: base - y(p[3]), fill: "#e6550d" }, s);
    });
    // Ticks at points, labelled with the first token each point stands for.
    var xt = linearTicks(0, pts.length - 1, 10), step = Math.max(1, Math.round(xt.step)), idx = [];
    for (var i = 0; i < pts.length; i += step) idx.push(i);
    xAxis(s, plot, taken, { ticks: idx, at: function (i) { return x(i) + bw / 2; }, text: function (i) { return String(pts[i][0]); }, cls: "tokens-x-tick", title: "token" });
    legend(b, "tokens-legend", [{ colour: "#9ecae1", text: "wall per token" }, { colour: "#e6550d", text: "GPU busy per token" }]);
    if (T.merged) note(b, T.total + " tokens merged into " + pts.length + " points (means of consecutive tokens).");
    done("panel-tokens", pts.length);
  }

  // ---- Dispatch timeline of one token ----

  // Each op (or pass) drawn, busiest first, with its calls and time in this token.
  function dispatchLegend(b, items) {
    var by = {};
    items.forEach(function (d) {
      var e = by[d[2]] || (by[d[2]] = { op: d[2], calls: 0, ns: 0 });
      e.calls++;
      e.ns += d[1];
    });
    var ops = Object.keys(by).map(function (k) { return by[k]; });
    ops.sort(function (a, b) { return b.ns - a.ns; });
    legend(b, "dispatch-legend", ops.map(function (e) {
      return { colour: colour(e.op), text: e.op + " (" + e.calls + "×, " + dur(e.ns) + ")" };
    }));
  }

  function dispatchTimeline() {
    var b = body("panel-dispatches"), T = D.dispatches;
    if (!T.dispatches && !T.passes) { note(b, T.why); done("panel-dispatches", 0); return; }
    var items = T.dispatches.length ? T.dispatches : T.passes.map(function (p) { return [p[0], p[1], p[2], p[2], 0]; });
    note(b, "Token " + T.token + " (the steady token with the median wall time): " + T.total + " timed dispatches" +
      (T.shown < T.total ? ", first " + T.shown + " drawn" : "") + ". Wheel to zoom, drag to pan, double-click to reset.");
    var W = 1000, H = 136, plot = { x: 10, y: 6, w: 980, h: 82 };
    var s = svg(b, W, H);
    var end = 0;
    items.forEach(function (d) { end = Math.max(end, d[0] + d[1]); });
    T.passes.forEach(function (p) { end = Math.max(end, p[0] + p[1]); });
    var view = [0, end || 1];
    var g = svgEl("g", {}, s), axis = svgEl("g", {}, s);
    function draw() {
      while (g.firstChild) g.removeChild(g.firstChild);
      while (axis.firstChild) axis.removeChild(axis.firstChild);
      var x = linear(view[0], view[1], plot.x, plot.x + plot.w);
      T.passes.forEach(function (p) {
        if (p[0] + p[1] < view[0] || p[0] > view[1]) return;
        var r = svgEl("rect", { x: x(p[0]), y: 10, width: Math.max(0.5, x(p[0] + p[1]) - x(p[0])), height: 18, fill: "#ccc", stroke: "#fff" }, g);
        svgEl("title", {}, r, "pass " + p[2] + ": " + dur(p[1]));
      });
      items.forEach(function (d) {
        if (d[0] + d[1] < view[0] || d[0] > view[1]) return;
        var r = svgEl("rect", { x: x(d[0]), y: 32, width: Math.max(0.5, x(d[0] + d[1]) - x(d[0])), height: 50, fill: colour(d[2]) }, g);
        svgEl("title", {}, r, d[3] + " (" + d[2] + "): " + dur(d[1]) + ", " + d[4] + " bytes");
      });
      var t = linearTicks(view[0], view[1], 8);
      xAxis(axis, plot, occupied(), { ticks: t.values, at: x, text: durTick(t.step, Math.max(Math.abs(view[0]), Math.abs(view[1]))), cls: "dispatch-x-tick", title: "time since the token's first GPU timestamp" });
    }
    draw();
    dispatchLegend(b, items);
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

  // ---- GPU time per op ----

  // `name` as lines no wider than `max`, broken after its own separators (`+`, `.`, `_`,
  // `-`, `/`), or anywhere in a run longer than a line, so every character stays visible.
  function wrapName(name, max) {
    function width(s) { return measure(s).w; }
    if (width(name) <= max) return [name];
    var lines = [], line = "";
    name.split(/(?<=[+._\/-])/).forEach(function (part) {
      if (line && width(line + part) > max) { lines.push(line); line = ""; }
      for (var i = 0; i < part.length; i++) {
        if (line && width(line + part[i]) > max) { lines.push(line); line = ""; }
        line += part[i];
      }
    });
    return lines.concat(line ? [line] : []);
  }

  // The op's name in the column left of its bar, wrapped; its title holds it whole.
  function opName(s, lines, y, full) {
    var g = svgEl("g", {}, s), t = svgEl("text", { x: 2, y: y + 11, class: "op-name" }, g);
    svgEl("title", {}, g, full);
    lines.forEach(function (l, i) { svgEl("tspan", { x: 2, dy: i ? 13 : 0 }, t, l); });
    return t;
  }

  function opBars(b, timed) {
    var W = 1000, LINE = 13, s = svg(b, W, 10);
    function widest(texts) { return Math.max.apply(null, texts.map(function (t) { return measure(t).w; })); }
    // The name column is as wide as the longest name, up to 40% of the chart.
    var names = timed.map(function (r) { return wrapName(r.op, W * 0.4); });
    var nameW = widest([].concat.apply([], names));
    var values = timed.map(function (r) { return ms(r.total_ns) + " ms · " + fmt(r.percent) + "% · " + fmt(r.gbps, 2) + " GB/s"; });
    var valueW = widest(values);
    var L = nameW + 12, max = Math.max.apply(null, timed.map(function (r) { return r.total_ns; }));
    var x = linear(0, max, L, W - valueW - 8), y = 5;
    timed.forEach(function (r, i) {
      var h = Math.max(18, names[i].length * LINE + 5);
      opName(s, names[i], y, r.op);
      var bar = svgEl("rect", { x: L, y: y, width: Math.max(0.5, x(r.total_ns) - L), height: 14, fill: colour(r.op) }, s);
      svgEl("title", {}, bar, r.op + ": " + ms(r.total_ns) + " ms over " + r.calls + " calls");
      svgEl("text", { x: x(r.total_ns) + 4, y: y + 11 }, s, values[i]);
      y += h;
    });
    s.setAttribute("viewBox", "0 0 " + W + " " + (y + 5));
  }

  function ops() {
    var b = body("panel-ops"), rows = D.ops.rows;
    if (!rows.length) { note(b, "No dispatches recorded."); done("panel-ops", 0); return; }
    (D.ops.basis || []).forEach(function (t) { note(b, t); });
    var timed = rows.filter(function (r) { return r.total_ns !== null; });
    if (timed.length) opBars(b, timed);
    else note(b, "No per-dispatch GPU times (timing " + D.meta.timing + "); calls per op below.");
    table(b, ["op", "calls", "total ms", "% GPU", "GB/s", "GFLOP/s", "FLOP/B", "% of ceiling", "bound"], rows.map(function (r) {
      return [r.op, r.calls, ms(r.total_ns), fmt(r.percent), fmt(r.gbps, 2), fmt(r.gflops, 2), fmt(r.intensity, 2), fmt(r.ceiling_percent), r.bound || "-"];
    })).setAttribute("class", "ops");
    done("panel-ops", rows.length);
  }

  // ---- Roofline ----

  // The nearest spot around point `p` where a box the size of `bb` fits inside `area`
  // without touching anything in `taken`: right, left, then round the point, then (with
  // more than one of `rings`) farther out with a leader line, which must not cross
  // anything but other leader lines.
  var ANGLES = [0, 180, -30, 30, -150, 150, -60, 60, -120, 120, -90, 90, -15, 15, -165, 165, -45, 45, -135, 135, -75, 75, -105, 105];
  var NEAR = [0], RINGS = [0, 10, 22, 36, 52, 72, 96, 124, 156, 192, 232];
  function freeSpot(p, bb, taken, area, rings) {
    for (var i = 0; i < rings.length; i++) {
      for (var j = 0; j < ANGLES.length; j++) {
        var a = ANGLES[j] * Math.PI / 180, c = Math.cos(a), sn = Math.sin(a), d = p.r + 4 + rings[i];
        var ax = p.x + d * c, ay = p.y + d * sn;
        var spot = {
          x: c > 0.38 ? ax : c < -0.38 ? ax - bb.w : ax - bb.w / 2,
          y: sn > 0.38 ? ay : sn < -0.38 ? ay - bb.h : ay - bb.h / 2,
          w: bb.w, h: bb.h,
        };
        // The leader starts at the circle; checked from past its own point's box.
        var leader = rings[i] > 0 ? [p.x + p.r * c, p.y + p.r * sn, ax, ay] : null;
        var check = leader && [p.x + 1.5 * p.r * c, p.y + 1.5 * p.r * sn, ax, ay];
        if (inside(spot, area) && taken.free(spot, 2) && (!check || taken.clear(check))) return { box: spot, leader: leader };
      }
    }
    return null;
  }

  // Draws `text` for point `p` at the nearest free spot within `rings`; false if none.
  function placeLabel(g, p, text, taken, area, rings) {
    var bb = measure(text), spot = freeSpot(p, bb, taken, area, rings);
    if (!spot) return false;
    textAt(g, text, bb, spot.box);
    taken.add(spot.box);
    if (spot.leader) {
      var l = spot.leader;
      svgEl("line", { x1: l[0], y1: l[1], x2: l[2], y2: l[3], class: "leader" }, g);
      taken.addLine(l);
    }
    return true;
  }

  // Labels for the points, in rounds from best to least (each round busiest op first):
  // the op's name beside its point, then farther out with a leader line, then its number
  // from the legend; a point left without is marked so in the legend.
  function placeLabels(s, points, taken, area) {
    var g = svgEl("g", { class: "point-labels" }, s);
    var rounds = [["name", NEAR], ["name", RINGS], ["number", RINGS]];
    points.forEach(function (p) { p.label = "none"; });
    rounds.forEach(function (round) {
      points.forEach(function (p) {
        if (p.label !== "none") return;
        if (placeLabel(g, p, round[0] === "name" ? p.op : String(p.key), taken, area, round[1])) p.label = round[0];
      });
    });
  }

  // The ceiling's label in the first free corner of the plot, else in a note below.
  function ceilingLabel(s, R, plot, taken) {
    var text = "ceiling: " + fmt(R.bandwidth_gbps, 1) + " GB/s" + (R.flops_gflops ? ", " + fmt(R.flops_gflops, 0) + " GFLOP/s" : "");
    var bb = measure(text), left = plot.x + 6, right = plot.x + plot.w - bb.w - 6;
    var corners = [[left, plot.y + 4], [right, plot.y + 4], [right, plot.y + plot.h - bb.h - 4]];
    for (var i = 0; i < corners.length; i++) {
      var spot = { x: corners[i][0], y: corners[i][1], w: bb.w, h: bb.h };
      if (taken.free(spot, 2)) { textAt(s, text, bb, spot, { class: "ceiling-label" }); taken.add(spot); return; }
    }
    note(s.parentNode, text);
  }

  // The roof; labels keep off it (leader lines may cross it).
  function roofPath(s, R, X, Y, xmin, xmax, taken) {
    var path = [], n = 64, last = null;
    for (var i = 0; i <= n; i++) {
      var v = xmin * Math.pow(xmax / xmin, i / n), c = R.bandwidth_gbps * v;
      if (R.flops_gflops) c = Math.min(c, R.flops_gflops);
      var at = [X(v), Y(c)];
      path.push((i ? "L" : "M") + at[0].toFixed(1) + "," + at[1].toFixed(1));
      if (last) taken.addLine([last[0], last[1], at[0], at[1]]);
      last = at;
    }
    svgEl("path", { d: path.join(" "), stroke: "#333", fill: "none", "stroke-width": 2 }, s);
  }

  // Every point with its number and colour; those without their name in the chart say so.
  function rooflineLegend(b, points) {
    legend(b, "roofline-legend", points.map(function (p) {
      var why = p.label === "name" ? "" : p.label === "number" ? " (by its number in the chart: no room for the name)" : " (not labelled in the chart: no room)";
      return { colour: colour(p.op), text: p.key + " " + p.op + ": " + fmt(p.row.intensity, 2) + " FLOP/B, " + fmt(p.row.gflops, 2) + " GFLOP/s" + why };
    }));
  }

  function roofline() {
    var b = body("panel-roofline"), R = D.roofline;
    var rows = D.ops.rows.filter(function (r) { return r.intensity > 0 && r.gflops > 0; });
    if (R.why) { note(b, "No measured ceilings: " + R.why); }
    if (!rows.length) { note(b, "No op has both a FLOP count and a GPU time to plot."); done("panel-roofline", R.why ? 1 : 0); return; }
    var W = 1000, H = 400, plot = { x: 76, y: 10, w: 1000 - 76 - 20, h: 400 - 10 - 50 };
    var ix = rows.map(function (p) { return p.intensity; }), gy = rows.map(function (p) { return p.gflops; });
    var xmin = Math.min.apply(null, ix) / 4, xmax = Math.max.apply(null, ix) * 4;
    var ymin = Math.min.apply(null, gy) / 4, ymax = Math.max.apply(null, gy) * 4;
    if (R.bandwidth_gbps) {
      ymax = Math.max(ymax, R.bandwidth_gbps * xmax, R.flops_gflops || 0);
      if (R.flops_gflops) ymax = Math.min(ymax, R.flops_gflops * 2);
    }
    var lx = linear(Math.log10(xmin), Math.log10(xmax), plot.x, plot.x + plot.w), ly = linear(Math.log10(ymin), Math.log10(ymax), plot.y + plot.h, plot.y);
    var X = function (v) { return lx(Math.log10(v)); }, Y = function (v) { return ly(Math.log10(Math.max(v, ymin))); };
    var s = svg(b, W, H), taken = occupied();
    yAxis(s, plot, taken, { ticks: logTicks(ymin, ymax), at: Y, text: num, cls: "roofline-y-tick", grid: true, title: "GFLOP/s (log scale)", short: "GFLOP/s" });
    xAxis(s, plot, taken, { ticks: logTicks(xmin, xmax), at: X, text: num, cls: "roofline-x-tick", grid: true, title: "arithmetic intensity (FLOP/byte, log scale)" });
    if (R.bandwidth_gbps) roofPath(s, R, X, Y, xmin, xmax, taken);
    var points = rows.map(function (r, i) { return { op: r.op, row: r, key: i + 1, x: X(r.intensity), y: Y(r.gflops), r: 6 }; });
    points.forEach(function (p) {
      var c = svgEl("circle", { cx: p.x, cy: p.y, r: p.r, fill: colour(p.op), stroke: "#333" }, s);
      svgEl("title", {}, c, p.op + ": " + fmt(p.row.intensity, 2) + " FLOP/B, " + fmt(p.row.gflops, 2) + " GFLOP/s" + (p.row.ceiling_percent !== null ? ", " + fmt(p.row.ceiling_percent) + "% of ceiling" : ""));
      taken.add({ x: p.x - p.r, y: p.y - p.r, w: 2 * p.r, h: 2 * p.r });
    });
    if (R.bandwidth_gbps) ceilingLabel(s, R, plot, taken);
    var busiest = points.slice().sort(function (a, b) { return (b.row.total_ns || 0) - (a.row.total_ns || 0); });
    placeLabels(s, busiest, taken, plot);
    rooflineLegend(b, points);
    done("panel-roofline", points.length);
  }

  // ---- Per-layer strip ----

  // A layer's name under its cell when it clears the name before it, which ends at
  // `right` (every name is in its cell's tooltip); returns where the names now end.
  function layerName(s, name, x, right) {
    if (x < right + 6) return right;
    var w = measure(name).w;
    if (x + w > s.viewBox.baseVal.width) return right;
    svgEl("text", { x: x, y: 75 }, s, name);
    return x + w;
  }

  function layerStrip() {
    var b = body("panel-layers"), rows = D.layers.filter(function (r) { return r[1] !== null; });
    if (!rows.length) { note(b, "GPU time per layer unknown (timing " + D.meta.timing + ")."); done("panel-layers", 0); return; }
    var W = 1000, H = 90, cw = (W - 20) / rows.length, right = -Infinity;
    var max = Math.max.apply(null, rows.map(function (r) { return r[1]; }));
    var s = svg(b, W, H);
    rows.forEach(function (r, i) {
      var k = max ? r[1] / max : 0;
      var c = svgEl("rect", { x: 10 + i * cw, y: 10, width: Math.max(0.5, cw - 1), height: 50, fill: "hsl(20," + Math.round(30 + 60 * k) + "%," + Math.round(85 - 45 * k) + "%)" }, s);
      svgEl("title", {}, c, r[0] + ": median " + ms(r[1]) + " ms (p10–p90 " + ms(r[2]) + "–" + ms(r[3]) + ")");
      right = layerName(s, r[0], 10 + i * cw + 2, right);
    });
    note(b, "Median GPU time per token per section; darker is slower (slowest: " + ms(max) + " ms).");
    done("panel-layers", rows.length);
  }

  // ---- Counters and checks ----

  function counters() {
    var b = body("panel-counters"), C = D.counters;
    table(b, ["counter", "first token", "median", "max"], C.rows.map(function (r) { return [r[0], fmt(r[1], 0), fmt(r[2], 0), fmt(r[3], 0)]; }));
    el("h3", {}, b, "Checks");
    table(b, ["check", "expected", "observed", "status"], C.checks.map(function (c) {
      return [c[0], c[1], c[2], { text: c[3], cls: c[3] === "n/a" ? "na" : c[3] }];
    }));
    done("panel-counters", C.rows.length + C.checks.length);
  }

  // ---- Findings ----

  // The command to run next (as code when it is one), and why.
  function nextStep(parent, n) {
    var d = el("div", { class: "next" }, parent);
    el("span", { class: "next-label" }, d, "next: ");
    el(n.shell ? "code" : "span", {}, d, n.command);
    if (n.why) el("div", { class: "why" }, d, n.why);
  }

  // One row per checklist item: its summary, the evidence behind it, the next step.
  function checklist(b, items) {
    var t = el("table", { class: "checklist" }, b), tr = el("tr", {}, el("thead", {}, t));
    ["checklist item", "status", "finding"].forEach(function (h) { el("th", {}, tr, h); });
    var tb = el("tbody", {}, t);
    items.forEach(function (i) {
      var row = el("tr", { class: "item-" + i.status }, tb);
      el("td", {}, row, i.title);
      el("td", { class: i.status }, row, i.status);
      var cell = el("td", {}, row);
      el("div", { class: "summary" }, cell, i.summary);
      if (i.evidence.length) {
        var ul = el("ul", { class: "evidence" }, cell);
        i.evidence.forEach(function (e) { el("li", {}, ul, e); });
      }
      if (i.next) nextStep(cell, i.next);
    });
  }

  function findings() {
    var b = body("panel-findings"), F = D.findings;
    el("p", {}, b, "Bottleneck: " + F.headline);
    var ul = el("ul", {}, b);
    F.evidence.forEach(function (e) { el("li", {}, ul, e); });
    checklist(b, F.items);
    el("h3", {}, b, "Opportunities (by estimated time saved per token)");
    if (F.opportunities.length) {
      table(b, ["opportunity", "saved per token", "basis"], F.opportunities.map(function (o) { return [o[0], o[1] === null ? "unknown" : dur(o[1]), o[2]]; }));
    } else {
      note(b, "None found.");
    }
    done("panel-findings", F.items.length + F.evidence.length + 1);
  }

  header();
  [tokenTimeline, dispatchTimeline, ops, roofline, layerStrip, counters, findings].forEach(function (f) { f(); });
  document.body.setAttribute("data-rendered", "ok");
  // Milliseconds from navigation start to every panel drawn (the load-time benchmark).
  document.body.setAttribute("data-render-ms", String(Math.round(performance.now())));
})();
