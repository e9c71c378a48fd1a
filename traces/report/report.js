// The script of every cardsim report page (embedded in the page; plain ES2017, no library):
// tooltips for elements with data-tip, sortable tables, and the zoomable command timeline.
// When it has run, #page-status gets data-ready="yes" and data-ready-ms (the time since the page
// started loading); errors anywhere are counted in data-errors by the catcher in <head>.
(function () {
  'use strict';
  var status = document.getElementById('page-status');
  (window.pageErrors || []).forEach(function (m) { window.noteError(m); });

  // ---- tooltips --------------------------------------------------------------------------
  var tip = document.getElementById('tooltip');
  var tipSource = null; // function(element) -> text, for elements without data-tip
  function showTip(text, ev) {
    if (!tip) return;
    tip.textContent = text;
    tip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    var r = tip.getBoundingClientRect();
    if (x + r.width > window.innerWidth - 8) x = Math.max(8, ev.clientX - r.width - 14);
    if (y + r.height > window.innerHeight - 8) y = Math.max(8, ev.clientY - r.height - 14);
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
  document.addEventListener('mousemove', function (ev) {
    var el = ev.target;
    while (el && el !== document && !(el.dataset && (el.dataset.tip || el.dataset.i || el.dataset.band)))
      el = el.parentNode;
    if (!el || el === document) { if (tip) tip.hidden = true; return; }
    var text = el.dataset.tip || (tipSource ? tipSource(el) : '');
    if (text) showTip(text, ev); else if (tip) tip.hidden = true;
  });

  // ---- sortable tables -------------------------------------------------------------------
  function cellValue(td) {
    var s = (td.dataset.sort !== undefined ? td.dataset.sort : td.textContent).trim();
    var n = parseFloat(s.replace(/[% ,]/g, ''));
    return { text: s, num: isFinite(n) && /^[-+]?[0-9.]/.test(s) ? n : null };
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    var heads = table.querySelectorAll('thead th');
    Array.prototype.forEach.call(heads, function (th, col) {
      th.classList.add('sort');
      th.title = 'sort by ' + th.textContent;
      th.addEventListener('click', function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var desc = th.dataset.dir !== 'desc';
        Array.prototype.forEach.call(heads, function (h) { delete h.dataset.dir; });
        th.dataset.dir = desc ? 'desc' : 'asc';
        var keyed = rows.map(function (r, i) { return { r: r, i: i, v: cellValue(r.cells[col] || r.cells[0]) }; });
        keyed.sort(function (a, b) {
          var x = a.v, y = b.v, c;
          if (x.num !== null && y.num !== null) c = x.num - y.num;
          else if (x.num !== null) c = -1;
          else if (y.num !== null) c = 1;
          else c = x.text < y.text ? -1 : x.text > y.text ? 1 : 0;
          if (desc) c = -c;
          return c || a.i - b.i;
        });
        keyed.forEach(function (k) { body.appendChild(k.r); });
      });
    });
  });

  // ---- the command timeline --------------------------------------------------------------
  function niceTicks(lo, hi, count) {
    if (!(hi > lo)) return [lo];
    var raw = (hi - lo) / count, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag;
    [1, 2, 5, 10].some(function (m) { if (m * mag >= raw) { step = m * mag; return true; } return false; });
    var out = [];
    for (var t = Math.ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) out.push(Math.abs(t) < step * 1e-9 ? 0 : t);
    return out;
  }
  function fmtNum(v) { return Math.abs(v) >= 1e4 || v === Math.round(v) ? String(Math.round(v * 1000) / 1000) : v.toPrecision(4); }
  function hue(name) {
    var h = 0;
    for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return h % 360;
  }
  function escapeXml(s) {
    return String(s).replace(/[&<>"']/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]; });
  }

  function Timeline(root, data) {
    var cols = {}, names = [];
    data.columns.forEach(function (c) {
      names.push(c.name);
      cols[c.name] = c.values ? function (i) { return c.values[i]; } : function (i) { return c.names[c.codes[i]]; };
    });
    var first = data.columns[0];
    var n = first ? (first.values || first.codes).length : 0;
    var start = cols.start, end = cols.end, unit = cols.unit, opcode = cols.opcode, pc = cols.pc;
    var mhz = data.clock_mhz, cycles = Math.max(1, data.cycles);
    // Lanes: per unit in order of first appearance, further lanes where its commands overlap.
    var order = [];
    for (var i = 0; i < n; i++) order.push(i);
    order.sort(function (a, b) { return start(a) - start(b) || a - b; });
    var unitLanes = {}, unitOrder = [];
    order.forEach(function (k) {
      var u = unit(k);
      if (!unitLanes[u]) { unitLanes[u] = []; unitOrder.push(u); }
      var ls = unitLanes[u], s = start(k), l = 0;
      while (l < ls.length && ls[l].last > s) l++;
      if (l === ls.length) ls.push({ name: l ? u + ' #' + (l + 1) : u, items: [], ends: [], last: 0 });
      ls[l].items.push(k);
      ls[l].ends.push(Math.max(end(k), s));
      ls[l].last = Math.max(end(k), s);
    });
    var lanes = [];
    unitOrder.forEach(function (u) { unitLanes[u].forEach(function (l) { lanes.push(l); }); });

    var labelW = 150, laneH = 18, axisH = 26;
    var t0 = 0, t1 = cycles, pending = false, svg = null;
    var range = root.parentNode.querySelector('.tl-range');

    function plotWidth() { return Math.max(200, root.clientWidth - labelW - 12); }
    function firstVisible(lane, t) { // the first item ending after t (ends do not decrease in a lane)
      var lo = 0, hi = lane.ends.length;
      while (lo < hi) { var m = (lo + hi) >> 1; if (lane.ends[m] <= t) lo = m + 1; else hi = m; }
      return lo;
    }
    function draw() {
      pending = false;
      var W = plotWidth(), span = t1 - t0, scale = W / span, parts = [];
      var H = lanes.length * laneH + axisH;
      parts.push('<svg class="tl" width="' + (labelW + W + 12) + '" height="' + H + '" viewBox="0 0 ' + (labelW + W + 12) + ' ' + H + '">');
      lanes.forEach(function (lane, li) {
        var y = li * laneH;
        parts.push('<text class="lane" x="' + (labelW - 6) + '" y="' + (y + laneH - 5) + '">' + escapeXml(lane.name) + '</text>');
        parts.push('<rect class="lane-bg" x="' + labelW + '" y="' + (y + 1) + '" width="' + W + '" height="' + (laneH - 2) + '"/>');
        var cover = new Float64Array(W + 1), count = new Uint32Array(W + 1), any = false;
        for (var j = firstVisible(lane, t0); j < lane.items.length; j++) {
          var k = lane.items[j], s = start(k), e = Math.max(end(k), s + 1);
          if (s >= t1) break;
          var x0 = (Math.max(s, t0) - t0) * scale, x1 = (Math.min(e, t1) - t0) * scale;
          if (x1 - x0 >= 3) {
            parts.push('<rect class="cmd" data-i="' + k + '" x="' + (labelW + x0).toFixed(1) + '" y="' + (y + 2) +
                       '" width="' + (x1 - x0).toFixed(1) + '" height="' + (laneH - 4) + '" fill="hsl(' + hue(opcode(k)) + ',55%,55%)"/>');
          } else { // narrower than a few pixels: add to the per-pixel coverage
            var c0 = Math.floor(x0), c1 = Math.min(W, Math.floor(x1));
            count[Math.min(c0, W)]++;
            for (var c = c0; c <= c1; c++) {
              var lo = Math.max(x0, c), hi = Math.min(x1, c + 1);
              if (hi > lo) cover[c] += hi - lo;
            }
            any = true;
          }
        }
        if (!any) return;
        for (var c = 0; c <= W;) { // runs of pixels of one shade are one band
          if (count[c] === 0 && cover[c] === 0) { c++; continue; }
          var level = Math.min(10, Math.ceil(Math.min(1, cover[c]) * 10)), e2 = c + 1, cmds = count[c];
          while (e2 <= W && (count[e2] > 0 || cover[e2] > 0) && Math.min(10, Math.ceil(Math.min(1, cover[e2]) * 10)) === level) cmds += count[e2++];
          parts.push('<rect class="band" data-band="' + li + ':' + c + ':' + e2 + '" x="' + (labelW + c) + '" y="' + (y + 2) + '" width="' + (e2 - c) +
                     '" height="' + (laneH - 4) + '" fill-opacity="' + (0.2 + 0.08 * level).toFixed(2) + '"/>');
          c = e2;
        }
      });
      // Steps and the time axis.
      (data.step_end || []).forEach(function (s, i) {
        if (s <= t0 || s >= t1) return;
        var x = labelW + (s - t0) * scale;
        parts.push('<line class="step" x1="' + x.toFixed(1) + '" x2="' + x.toFixed(1) + '" y1="0" y2="' + (H - axisH) + '" data-tip="end of step ' + i + ' (cycle ' + s + ')"/>');
      });
      niceTicks(t0 / mhz, t1 / mhz, 8).forEach(function (us) {
        var x = labelW + (us * mhz - t0) * scale;
        if (x < labelW - 0.5 || x > labelW + W + 0.5) return;
        parts.push('<line class="tick" x1="' + x.toFixed(1) + '" x2="' + x.toFixed(1) + '" y1="' + (H - axisH) + '" y2="' + (H - axisH + 4) + '"/>');
        parts.push('<text class="xtick" x="' + x.toFixed(1) + '" y="' + (H - axisH + 16) + '">' + fmtNum(us) + '</text>');
      });
      parts.push('<text class="axisname" x="' + (labelW - 6) + '" y="' + (H - axisH + 16) + '">time (µs)</text></svg>');
      root.innerHTML = parts.join('');
      root.dataset.drawn = String(root.querySelectorAll('rect.cmd, rect.band').length);
      root.dataset.plotWidth = String(W);
      svg = root.firstChild;
      if (range) range.textContent = (t0 / mhz).toFixed(3) + ' to ' + (t1 / mhz).toFixed(3) + ' µs (cycles ' + Math.round(t0) + ' to ' + Math.round(t1) + ')';
    }
    function redraw() { if (!pending) { pending = true; window.requestAnimationFrame(draw); } }
    function setView(a, b) {
      var minSpan = Math.min(10, cycles);
      if (b - a < minSpan) { var m = (a + b) / 2; a = m - minSpan / 2; b = m + minSpan / 2; }
      if (b - a > cycles) { a = 0; b = cycles; }
      if (a < 0) { b -= a; a = 0; }
      if (b > cycles) { a -= b - cycles; b = cycles; }
      t0 = Math.max(0, a); t1 = b;
      redraw();
    }
    function zoomAt(frac, factor) {
      var at = t0 + frac * (t1 - t0), span = (t1 - t0) * factor;
      setView(at - frac * span, at - frac * span + span);
    }
    function fracOf(ev) {
      var r = root.getBoundingClientRect();
      return Math.min(1, Math.max(0, (ev.clientX - r.left - labelW) / plotWidth()));
    }
    root.addEventListener('wheel', function (ev) { ev.preventDefault(); zoomAt(fracOf(ev), ev.deltaY < 0 ? 0.8 : 1.25); }, { passive: false });
    var drag = null;
    root.addEventListener('mousedown', function (ev) { drag = { x: ev.clientX, t0: t0, t1: t1 }; ev.preventDefault(); });
    window.addEventListener('mousemove', function (ev) {
      if (!drag) return;
      var dt = (ev.clientX - drag.x) / plotWidth() * (drag.t1 - drag.t0);
      setView(drag.t0 - dt, drag.t1 - dt);
    });
    window.addEventListener('mouseup', function () { drag = null; });
    root.addEventListener('dblclick', function () { setView(0, cycles); });
    Array.prototype.forEach.call(root.parentNode.querySelectorAll('[data-zoom]'), function (b) {
      b.addEventListener('click', function () {
        var z = b.dataset.zoom;
        if (z === 'reset') setView(0, cycles); else zoomAt(0.5, z === 'in' ? 0.5 : 2);
      });
    });
    window.addEventListener('resize', redraw);

    var shown = { unit: 1, opcode: 1, start: 1, end: 1, duration: 1 };
    function commandTip(k) {
      var s = start(k), e = end(k);
      var lines = [opcode(k) + ' on ' + unit(k),
                   'cycles ' + s + ' to ' + e + ' (' + (e - s) + ' cycles, ' + ((e - s) / mhz).toFixed(3) + ' µs, from ' + (s / mhz).toFixed(3) + ' µs)'];
      names.forEach(function (name) {
        if (shown[name]) return;
        var v = cols[name](k);
        if (v !== null && v !== undefined && v !== '') lines.push(name + ': ' + v);
      });
      var p = pc ? pc(k) : null;
      if (p !== null && p !== undefined && data.operands && data.operands[p]) lines.push('command: ' + data.operands[p]);
      return lines.join('\n');
    }
    function bandTip(spec) {
      var f = spec.split(':').map(Number), lane = lanes[f[0]], W = plotWidth(), scale = W / (t1 - t0);
      var a = t0 + f[1] / scale, b = t0 + f[2] / scale, busy = 0, cmds = 0, ops = {};
      for (var j = firstVisible(lane, a); j < lane.items.length; j++) {
        var k = lane.items[j], s = start(k), e = Math.max(end(k), s + 1);
        if (s >= b) break;
        busy += Math.min(e, b) - Math.max(s, a);
        cmds++;
        ops[opcode(k)] = (ops[opcode(k)] || 0) + 1;
      }
      var top = Object.keys(ops).sort(function (x, y) { return ops[y] - ops[x]; }).slice(0, 4)
        .map(function (o) { return o + ' ×' + ops[o]; }).join(', ');
      return lane.name + ': ' + cmds + (cmds === 1 ? ' command in ' : ' commands in ') + (a / mhz).toFixed(3) + ' to ' + (b / mhz).toFixed(3) + ' µs\n' +
        'busy ' + (100 * busy / Math.max(1e-9, b - a)).toFixed(1) + ' %\n' + top + '\n(zoom in for each command)';
    }
    tipSource = function (el) {
      if (el.dataset.i !== undefined) return commandTip(Number(el.dataset.i));
      if (el.dataset.band !== undefined) return bandTip(el.dataset.band);
      return '';
    };
    draw();
    return { lanes: lanes.length, commands: n };
  }

  try {
    var view = document.getElementById('timeline-view');
    var dataEl = document.getElementById('timeline-data');
    if (view && dataEl) {
      var tl = Timeline(view, JSON.parse(dataEl.textContent));
      view.dataset.lanes = String(tl.lanes);
      view.dataset.commands = String(tl.commands);
    }
  } catch (e) {
    window.noteError('timeline: ' + (e && e.stack ? e.stack : e));
  }
  if (status) {
    status.dataset.readyMs = String(Math.round(performance.now()));
    status.dataset.ready = 'yes';
  }
})();
