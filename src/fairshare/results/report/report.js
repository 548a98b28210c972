/* fairshare report: draws the plots and tables of the page from the JSON in <script id="fs-data">.
   Every string from the data goes into the page through textContent or setAttribute, never as markup. */
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var POS = "#d62728", NEG = "#1f77b4", GREY = "#7f7f7f", WIDTH = 760, LABEL = 230, ROW = 22;
  var D = JSON.parse(document.getElementById("fs-data").textContent);

  function num(a) {                       // "Infinity", "-Infinity", "NaN" back to numbers, at any depth
    if (a === null || a === undefined) { return a; }
    if (Array.isArray(a)) { return a.map(num); }
    return typeof a === "string" ? Number(a) : a;
  }
  function node(space, tag, attrs, parent, text) {
    var e = space ? document.createElementNS(space, tag) : document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function svg(tag, attrs, parent, text) { return node(NS, tag, attrs, parent, text); }
  function html(tag, attrs, parent, text) { return node(null, tag, attrs, parent, text); }
  function fmt(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) { return "n/a"; }
    if (!isFinite(v)) { return v > 0 ? "\u221e" : "-\u221e"; }
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) { return v.toExponential(digits > 3 ? digits - 1 : 2); }  // the table's digits
    return String(Number(v.toPrecision(digits || 4)));
  }
  function shorten(text, size) { text = String(text); return text.length > size ? text.slice(0, size - 1) + "\u2026" : text; }
  function order(values) {                // positions by |value|, largest first (ties: first player first)
    return values.map(function (v, i) { return i; }).sort(function (a, b) {
      return Math.abs(values[b]) - Math.abs(values[a]) || a - b;
    });
  }
  function finite(v) { return typeof v === "number" && isFinite(v) ? v : 0; }
  function scale(lo, hi, a, b) {
    if (!(hi > lo)) { lo -= 1; hi += 1; }
    return function (v) { return a + (finite(v) - lo) / (hi - lo) * (b - a); };
  }
  function ticks(lo, hi) {                // about five round numbers from lo to hi
    var span = hi - lo;
    if (!(span > 0)) { return [lo]; }
    var raw = span / 5, mag = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / mag;
    var step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag, out = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
      out.push(Math.abs(t) < step * 1e-9 ? 0 : t);
    }
    return out;
  }
  function axis(g, x, lo, hi, y, label) {
    svg("line", {x1: x(lo), x2: x(hi), y1: y, y2: y, stroke: "#999"}, g);
    ticks(lo, hi).forEach(function (t) {
      svg("line", {x1: x(t), x2: x(t), y1: y, y2: y + 4, stroke: "#999"}, g);
      svg("text", {x: x(t), y: y + 16, "text-anchor": "middle", "class": "fs-tick"}, g, fmt(t, 3));
    });
    svg("text", {x: (x(lo) + x(hi)) / 2, y: y + 32, "text-anchor": "middle", "class": "fs-axis"}, g, label);
  }
  function name(text, x, y, g) {          // a player's name at the left of a plot, shortened, whole on hover
    var t = svg("text", {x: x, y: y, "text-anchor": "end", "dominant-baseline": "middle", "class": "fs-name"}, g,
                shorten(text, 34));
    svg("title", {}, t, text);
    return t;
  }
  function plot(host, kind, height, title) {
    html("h3", {}, host, title);
    return svg("svg", {"class": "fs-plot fs-" + kind, width: WIDTH, height: height,
                       viewBox: "0 0 " + WIDTH + " " + height, role: "img"}, host);
  }
  function whisker(g, x0, x1, y, size) {
    svg("line", {x1: x0, x2: x1, y1: y, y2: y, stroke: "#444", "stroke-width": 1}, g);
    [x0, x1].forEach(function (x) { svg("line", {x1: x, x2: x, y1: y - size, y2: y + size, stroke: "#444"}, g); });
  }
  function lowHigh(t) {                    // a feature value's colour: blue (low) to red (high)
    var a = [0, 139, 251], b = [255, 0, 81];
    return "rgb(" + a.map(function (c, k) { return Math.round(c + (b[k] - c) * t); }).join(",") + ")";
  }
  function diverging(t) {                  // -1 blue, 0 near white, +1 red (the images' colours)
    var mid = [247, 247, 247], end = t >= 0 ? [178, 24, 43] : [33, 102, 172], m = Math.min(1, Math.abs(t));
    return "rgb(" + mid.map(function (c, k) { return Math.round(c + (end[k] - c) * m); }).join(",") + ")";
  }
  function sumOf(list) { return list.reduce(function (s, v) { return s + finite(v); }, 0); }

  // ------------------------------------------------------------------------------------------- the summary
  function shownPlayers() {
    var ranked = order(D.mean_abs), k = Math.min(D.max_display, ranked.length);
    return {top: ranked.slice(0, k), rest: ranked.slice(k)};
  }
  function drawBar(host) {               // mean |value| of several rows; one row's signed values, as the plot
    var s = shownPlayers(), items = s.top.map(function (i) {
      return {label: D.players[i], v: D.bar[i], e: D.mean_err[i]};
    });
    if (s.rest.length) {
      items.push({label: s.rest.length + " other players (summed)",
                  v: sumOf(s.rest.map(function (i) { return D.bar[i]; })),
                  e: Math.sqrt(sumOf(s.rest.map(function (i) { return D.mean_err[i] * D.mean_err[i]; })))});
    }
    var ends = items.map(function (it) { return [finite(it.v) - finite(it.e), finite(it.v) + finite(it.e)]; });
    var lo = Math.min.apply(null, ends.map(function (b) { return b[0]; }).concat([0]));
    var hi = Math.max.apply(null, ends.map(function (b) { return b[1]; }).concat([1e-12]));
    var height = items.length * ROW + 56, x = scale(lo, hi, LABEL, WIDTH - 70);
    var what = D.bar_signed ? D.index + " value" + D.label : "|" + D.index + " value|" + D.label;
    var g = plot(host, "bar", height, (D.bar_signed ? what.charAt(0).toUpperCase() + what.slice(1) + " of 1 row"
                 : "Mean " + what + " over " + D.rows.length + " rows") + ", with two standard errors");
    items.forEach(function (it, k) {
      var y = 10 + k * ROW, a = x(0), b = x(finite(it.v));
      name(it.label, LABEL - 6, y + ROW / 2, g);
      svg("rect", {x: Math.min(a, b), y: y + 3, width: Math.abs(b - a), height: ROW - 6,
                   fill: finite(it.v) < 0 ? NEG : POS}, g);
      if (finite(it.e) > 0) { whisker(g, x(it.v - it.e), x(it.v + it.e), y + ROW / 2, 4); }
      svg("text", {x: x(Math.max(0, finite(it.v)) + finite(it.e)) + 5, y: y + ROW / 2, "dominant-baseline": "middle",
                   "class": "fs-value"}, g, fmt(it.v) + (finite(it.e) > 0 ? " \u00b1 " + fmt(it.e, 2) : ""));
    });
    if (lo < 0) { svg("line", {x1: x(0), x2: x(0), y1: 8, y2: 12 + items.length * ROW, stroke: GREY}, g); }
    axis(g, x, lo, hi, 12 + items.length * ROW, (D.bar_signed ? "" : "mean ") + what);
  }
  function swarmLines() {                 // the beeswarm's lines: the players shown, then the others summed
    var s = shownPlayers(), rows = D.values.length, lines = s.top.map(function (i) { return {player: i}; });
    if (s.rest.length) { lines.push({player: -1, name: s.rest.length + " other players (summed)"}); }
    lines.forEach(function (line) {
      line.v = [];
      for (var r = 0; r < rows; r++) {
        line.v.push(finite(line.player >= 0 ? D.values[r][line.player] :
                           sumOf(s.rest.map(function (i) { return D.values[r][i]; }))));
      }
    });
    return lines;
  }
  function dotColour(i, r) {               // the colour bucket of row r's value of feature i (-1: grey)
    if (i < 0 || !D.data || D.low[i] === null) { return -1; }
    var d = D.data[r][i];
    if (typeof d !== "number" || !isFinite(d)) { return -1; }
    var t = D.high[i] > D.low[i] ? (d - D.low[i]) / (D.high[i] - D.low[i]) : 0.5;
    return Math.round(Math.max(0, Math.min(1, t)) * 16);
  }
  function drawBeeswarm(host) {
    // dots of one colour on one line are one path of zero-length round-capped segments: a thousand rows draw fast
    var lines = swarmLines(), lo = Infinity, hi = -Infinity, spots = [];
    lines.forEach(function (line) { line.v.forEach(function (v) { lo = Math.min(lo, v); hi = Math.max(hi, v); }); });
    var pad = (hi - lo) * 0.04 || 1, x = scale(lo - pad, hi + pad, LABEL, WIDTH - 40), height = lines.length * 28 + 70;
    var g = plot(host, "beeswarm", height, "Every row's " + D.index + " values" + D.label +
                 ", coloured by the feature's value (blue low, red high, grey: not a number); click a dot to see its row");
    svg("line", {x1: x(0), x2: x(0), y1: 4, y2: 10 + lines.length * 28, stroke: "#bbb"}, g);
    lines.forEach(function (line, k) {
      var y = 10 + k * 28 + 14, bins = {}, paths = {};
      name(line.player >= 0 ? D.players[line.player] : line.name, LABEL - 6, y, g);
      var rank = line.v.map(function (v, r) { return r; }).sort(function (a, b) { return line.v[a] - line.v[b]; });
      rank.forEach(function (r) {
        var px = x(line.v[r]), bin = Math.round(px / 3), c = bins[bin] || 0, colour = dotColour(line.player, r);
        bins[bin] = c + 1;
        var dy = (c % 2 ? 1 : -1) * Math.ceil(c / 2) * 2.2;
        dy = ((dy + 11) % 22 + 22) % 22 - 11;
        (paths[colour] = paths[colour] || []).push("M" + px.toFixed(1) + " " + (y + dy).toFixed(1) + "h0");
        spots.push([px, y + dy, r]);
      });
      Object.keys(paths).forEach(function (colour) {
        svg("path", {d: paths[colour].join(""), stroke: colour < 0 ? GREY : lowHigh(colour / 16), "stroke-width": 4.4,
                     "stroke-linecap": "round", fill: "none", "class": "fs-dots"}, g);
      });
    });
    axis(g, x, lo - pad, hi + pad, 14 + lines.length * 28, D.index + " value" + D.label);
    g.addEventListener("click", function (event) {
      var m = g.getScreenCTM(), best = null, gap = 25;
      if (!m) { return; }
      var p = new DOMPoint(event.clientX, event.clientY).matrixTransform(m.inverse());
      spots.forEach(function (s) {
        var d = (s[0] - p.x) * (s[0] - p.x) + (s[1] - p.y) * (s[1] - p.y);
        if (d < gap) { gap = d; best = s[2]; }
      });
      if (best !== null) { select(best); }
    });
  }

  // --------------------------------------------------------------------------------------------- one row
  function label(r, i) {
    if (!D.data) { return D.players[i]; }
    var d = D.data[r][i];
    return D.players[i] + " = " + (typeof d === "number" ? fmt(d) : String(d).trim());
  }
  function errorsOf(r) { return D.stderr ? D.stderr[r] : D.values[r].map(function () { return 0; }); }
  function drawWaterfall(host, r) {
    host.textContent = "";
    var v = D.values[r], se = errorsOf(r), ranked = order(v), k = Math.min(D.max_display, ranked.length);
    var items = ranked.slice(0, k).map(function (i) { return {label: label(r, i), v: v[i], e: se[i]}; });
    var rest = ranked.slice(k);
    if (rest.length) {
      items.push({label: rest.length + " other players", v: sumOf(rest.map(function (i) { return v[i]; })),
                  e: Math.sqrt(sumOf(rest.map(function (i) { return se[i] * se[i]; })))});
    }
    var base = finite(D.base[r]), run = base, lo = base, hi = base;
    items.forEach(function (it) {
      it.start = run; run += finite(it.v);
      var e = isFinite(it.e) ? 2 * finite(it.e) : 0;
      lo = Math.min(lo, run - e, it.start); hi = Math.max(hi, run + e, it.start);
    });
    var grand = D.grand ? D.grand[r] : null;
    if (grand !== null && isFinite(grand)) { lo = Math.min(lo, grand); hi = Math.max(hi, grand); }
    var pad = (hi - lo) * 0.15 || 1, x = scale(lo - pad * 0.2, hi + pad, LABEL, WIDTH - 20);
    var height = items.length * ROW + 74;
    var g = plot(host, "waterfall", height, "Row " + D.rows[r] + ": from the base value " + fmt(base) + " to " +
                 fmt(run) + (grand !== null ? " (the model's output: " + fmt(grand) + ")" : "") +
                 ", players by |value|, two standard errors at each bar's end");
    items.forEach(function (it, j) {
      var y = 22 + j * ROW, a = x(it.start), b = x(it.start + finite(it.v)), e = 2 * it.e;
      name(it.label, LABEL - 6, y + ROW / 2, g);
      svg("rect", {x: Math.min(a, b), y: y + 3, width: Math.max(1, Math.abs(b - a)), height: ROW - 6,
                   fill: finite(it.v) >= 0 ? POS : NEG}, g);
      if (isFinite(e) && e > 0) { whisker(g, x(it.start + finite(it.v) - e), x(it.start + finite(it.v) + e), y + ROW / 2, 4); }
      var tip = (finite(it.v) >= 0 ? "+" : "") + fmt(it.v) + (e > 0 ? " \u00b1 " + fmt(e, 2) : "");
      svg("text", {x: Math.max(a, b) + (isFinite(e) ? x(e) - x(0) : 0) + 5, y: y + ROW / 2,
                   "dominant-baseline": "middle", "class": "fs-value"}, g, tip);
    });
    var bottom = 22 + items.length * ROW;
    svg("line", {x1: x(base), x2: x(base), y1: 16, y2: bottom, stroke: GREY, "stroke-dasharray": "4 3"}, g);
    svg("text", {x: x(base), y: 12, "text-anchor": "middle", "class": "fs-tick"}, g, "base " + fmt(base));
    svg("line", {x1: x(run), x2: x(run), y1: 16, y2: bottom, stroke: "#000"}, g);
    axis(g, x, lo - pad * 0.2, hi + pad, bottom + 4, D.index + " value" + D.label);
  }
  function errorBar(parent, v, e, reach) {
    var s = svg("svg", {width: 170, height: 14, "class": "fs-errorbar"}, parent), x = scale(-reach, reach, 4, 166);
    svg("line", {x1: x(0), x2: x(0), y1: 0, y2: 14, stroke: "#bbb"}, s);
    svg("rect", {x: Math.min(x(0), x(v)), y: 3, width: Math.max(1, Math.abs(x(v) - x(0))), height: 8,
                 fill: finite(v) >= 0 ? POS : NEG}, s);
    if (isFinite(e) && e > 0) { whisker(s, x(v - 2 * e), x(v + 2 * e), 7, 3); }
    return s;
  }
  function drawTable(host, r) {
    host.textContent = "";
    var v = D.values[r], se = errorsOf(r);
    var reach = Math.max.apply(null, v.map(function (x, i) {
      return Math.abs(finite(x)) + (isFinite(se[i]) ? 2 * finite(se[i]) : 0);
    }).concat([1e-12]));
    html("h3", {}, host, "Every player's value in row " + D.rows[r] + " (\u00b1 two standard errors), largest |value| first");
    var table = html("table", {"class": "fs-values"}, host), head = html("tr", {}, html("thead", {}, table));
    ["player"].concat(D.data ? ["feature value"] : []).concat(["value", "\u00b1 2 s.e.", ""]).forEach(function (h) {
      html("th", {}, head, h);
    });
    var body = html("tbody", {}, table);
    order(v).forEach(function (i) {
      var tr = html("tr", {}, body);
      html("td", {"class": "fs-player"}, tr, D.players[i]);
      if (D.data) { var d = D.data[r][i]; html("td", {"class": "fs-data"}, tr, typeof d === "number" ? fmt(d) : d); }
      html("td", {"class": "fs-number"}, tr, fmt(v[i], 6));
      html("td", {"class": "fs-number"}, tr, D.stderr ? fmt(2 * se[i], 3) : "not given");
      errorBar(html("td", {}, tr), v[i], se[i], reach);
    });
  }
  function drawImage(host, r) {
    host.textContent = "";
    var layer = D.images[r], side = 320, h = layer.size[0], w = layer.size[1];
    var height = side * Math.min(1, h / w), width = side * Math.min(1, w / h);
    var g = plot(host, "image", height + 50, "Image " + D.rows[r] + layer.label +
                 ": its values over it (red raises the output, blue lowers it)");
    g.setAttribute("height", height + 50);
    svg("image", {href: layer.grey, x: 0, y: 0, width: width, height: height, preserveAspectRatio: "none",
                  "class": "fs-pixels"}, g);
    svg("image", {href: layer.heat, x: 0, y: 0, width: width, height: height, preserveAspectRatio: "none",
                  opacity: 0.6, "class": "fs-pixels"}, g);
    for (var k = 0; k < 50; k++) {
      svg("rect", {x: width + 30 + k * 6, y: height / 2 - 8, width: 6, height: 16, fill: diverging(k / 24.5 - 1)}, g);
    }
    svg("text", {x: width + 30, y: height / 2 + 24, "class": "fs-tick"}, g, fmt(-layer.scale, 3));
    svg("text", {x: width + 180, y: height / 2 + 24, "text-anchor": "middle", "class": "fs-tick"}, g, "0");
    svg("text", {x: width + 330, y: height / 2 + 24, "text-anchor": "end", "class": "fs-tick"}, g, fmt(layer.scale, 3));
  }
  function select(r) {
    r = Math.max(0, Math.min(D.rows.length - 1, Math.floor(r) || 0));
    document.getElementById("fs-pick").value = String(r);
    try { history.replaceState(null, "", "#row=" + r); } catch (e) { /* a sandboxed frame: no address to keep */ }
    if (D.images) { drawImage(document.getElementById("fs-image"), r); }
    drawWaterfall(document.getElementById("fs-waterfall"), r);
    drawTable(document.getElementById("fs-table"), r);
  }
  function controls(host) {
    html("label", {"for": "fs-pick"}, host, "Row ");
    var pick = html("select", {id: "fs-pick"}, host);
    D.rows.forEach(function (row, r) { html("option", {value: String(r)}, pick, row); });
    pick.addEventListener("change", function () { select(Number(pick.value)); });
    [["\u2190 previous", -1], ["next \u2192", 1]].forEach(function (b) {
      html("button", {type: "button"}, host, b[0]).addEventListener("click", function () {
        select(Number(pick.value) + b[1]);
      });
    });
    html("span", {"class": "fs-note"}, host, " " + D.rows.length + " rows");
  }

  // ------------------------------------------------------------------------------------- interactions
  function drawPairs(host, matrix, title, players) {
    var n = players.length, cell = Math.max(4, Math.min(26, Math.floor(460 / Math.max(1, n)))), left = LABEL;
    var longest = Math.max.apply(null, players.map(function (p) { return Math.min(24, String(p).length); }).concat([1]));
    var top = 16 + Math.ceil(longest * 5.8), side = left + n * cell;
    var reach = Math.max.apply(null, [].concat.apply([], matrix).map(function (v) { return Math.abs(finite(v)); })
                                       .concat([1e-12]));
    var g = plot(host, "pairs", top + n * cell + 50, title);
    g.setAttribute("width", Math.max(WIDTH, side + 20));
    g.setAttribute("viewBox", "0 0 " + Math.max(WIDTH, side + 20) + " " + (top + n * cell + 50));
    players.forEach(function (p, i) {
      name(p, left - 6, top + i * cell + cell / 2, g);
      var t = svg("text", {"class": "fs-name", transform: "translate(" + (left + i * cell + cell / 2) + "," + (top - 6) +
                           ") rotate(-60)"}, g, shorten(p, 24));
      svg("title", {}, t, p);
      matrix[i].forEach(function (v, j) {
        var rect = svg("rect", {x: left + j * cell, y: top + i * cell, width: cell, height: cell,
                                fill: diverging(finite(v) / reach), stroke: "#fff"}, g);
        svg("title", {}, rect, players[i] + " \u00d7 " + players[j] + ": " + fmt(v, 6));
      });
    });
    var y = top + n * cell + 14;
    for (var k = 0; k < 50; k++) {
      svg("rect", {x: left + k * 4, y: y, width: 4, height: 10, fill: diverging(k / 24.5 - 1)}, g);
    }
    svg("text", {x: left, y: y + 24, "class": "fs-tick"}, g, fmt(-reach, 3));
    svg("text", {x: left + 200, y: y + 24, "text-anchor": "end", "class": "fs-tick"}, g, fmt(reach, 3));
    svg("text", {x: left + 210, y: y + 9, "class": "fs-tick"}, g, "hover a cell for its value");
  }
  function drawSubsets(host) {
    var ranked = order(D.values), se = D.stderr || D.values.map(function () { return 0; });
    var reach = Math.max.apply(null, D.values.map(function (v, i) {
      return Math.abs(finite(v)) + (isFinite(se[i]) ? 2 * finite(se[i]) : 0);
    }).concat([1e-12]));
    html("h3", {}, host, "Every subset's " + D.index + " value" + D.label + " (\u00b1 two standard errors), largest |value| first" +
         (D.empty !== null ? "; the empty set's value: " + fmt(D.empty) : ""));
    var table = html("table", {"class": "fs-values"}, host), head = html("tr", {}, html("thead", {}, table));
    ["players", "size", "value", "\u00b1 2 s.e.", ""].forEach(function (h) { html("th", {}, head, h); });
    var body = html("tbody", {}, table);
    ranked.forEach(function (i) {
      var tr = html("tr", {}, body);
      html("td", {"class": "fs-player"}, tr, D.subsets[i].join(" \u00d7 "));
      html("td", {"class": "fs-number"}, tr, D.subsets[i].length);
      html("td", {"class": "fs-number"}, tr, fmt(D.values[i], 6));
      html("td", {"class": "fs-number"}, tr, D.stderr ? fmt(2 * se[i], 3) : "not given");
      errorBar(html("td", {}, tr), D.values[i], se[i], reach);
    });
  }

  // ------------------------------------------------------------------------------------------------ run
  ["values", "stderr", "base", "grand", "mean_abs", "mean_err", "bar", "low", "high", "matrix",
   "empty"].forEach(function (k) {
    D[k] = num(D[k]);
  });
  if (D.data) {                            // numeric columns (those with a colour range) back to numbers
    D.data = D.data.map(function (row) {
      return row.map(function (d, i) { return D.low[i] !== null ? num(d) : d; });
    });
  }
  if (D.pairs) { D.pairs.matrix = num(D.pairs.matrix); }
  if (D.kind === "explanation") {
    drawBar(document.getElementById("fs-bar"));
    if (D.values.length > 1) { drawBeeswarm(document.getElementById("fs-beeswarm")); }
    controls(document.getElementById("fs-controls"));
    var asked = /(?:^#|&)row=(\d+)/.exec(location.hash);        // report.html#row=12 opens at row 12
    select(asked ? Number(asked[1]) : 0);
    if (D.pairs) { drawPairs(document.getElementById("fs-pairs"), D.pairs.matrix, D.pairs.title, D.players); }
  } else {
    drawSubsets(document.getElementById("fs-subsets"));
    if (D.matrix) {
      drawPairs(document.getElementById("fs-pairs"), D.matrix, "Pairs: each pair's value in both of its cells, " +
                "each player's own value on the diagonal", D.players);
    }
  }
  document.documentElement.setAttribute("data-fs-rendered", String(Math.round(performance.now())));
})();
