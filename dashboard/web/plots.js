// colltest dashboard: the plots of one run (latency, speed-up, bus bandwidth against m or bytes),
// the fastest variant's crossovers, and the selectors that choose what they show.
'use strict';

// n, dtype and world: the plots show one combination at a time; x: rows (m) or bytes per rank.
const X_UNIT_KEY = 'colltest.x-unit';
const plotChoice = {n: null, dtype: null, world: null, x: localStorage.getItem(X_UNIT_KEY) === 'bytes' ? 'bytes' : 'rows'};

function renderSelectors(cases) {
  const pick = (key, values, selectId, labelId) => {
    const select = $(selectId);
    const sorted = [...new Set(values)].sort((a, b) => (typeof a === 'number' ? a - b : String(a).localeCompare(String(b))));
    if (!sorted.includes(plotChoice[key])) plotChoice[key] = sorted.length ? sorted[0] : null;
    const current = [...select.options].map((o) => o.value).join('|');
    if (current !== sorted.map(String).join('|')) {
      clear(select);
      for (const v of sorted) select.append(el('option', {value: String(v)}, String(v)));
    }
    select.value = String(plotChoice[key]);
    // A selector with one value says nothing; it stays in the DOM (tests find it) but hidden.
    $(labelId).hidden = sorted.length <= 1;
  };
  pick('n', cases.map((c) => num(c.n)), '#sel-n', '#sel-n-label');
  pick('dtype', cases.map((c) => dtypeName(c.dtype)), '#sel-dtype', '#sel-dtype-label');
  pick('world', cases.map((c) => num(c.world_size)), '#sel-world', '#sel-world-label');
  $('#sel-x').value = plotChoice.x;
}

// Bytes of one element of the dtype ('bf16', 'fp16', 'fp32').
function elementBytes(dtype) {
  return dtype === 'fp32' ? 4 : 2;
}

// Where m lies on the x axis: m itself, or m x n x element size (the bytes each rank reduces).
function xOf(m) {
  return plotChoice.x === 'bytes' ? m * plotChoice.n * elementBytes(plotChoice.dtype) : m;
}

function fmtX(x) {
  return plotChoice.x === 'bytes' ? fmtBytes(x) : String(Math.round(x));
}

// "m=64" or "128 KiB": a point of the x axis in words (crossover text, marker titles).
function atM(m) {
  return plotChoice.x === 'bytes' ? fmtBytes(xOf(m)) : `m=${m}`;
}

function xAxisLabel() {
  return plotChoice.x === 'bytes' ? 'bytes per rank (m x n x element size)' : 'm (rows)';
}

// ---------------------------------------------------------------------------------------------
// Plots

const VARIANT_COLORS = {
  one_stage: '#1f77b4', two_kernel: '#ff7f0e', lamport: '#2ca02c', lamport_tb: '#d62728',
  nccl: '#444444', auto: '#9467bd', lamport_two_shot: '#8c564b',
};
const ANCHOR_VARIANT = 'nccl';
// Plugins ("plugin:NAME") get colours of their own, the same for a name on every page.
const PLUGIN_COLORS = ['#e377c2', '#bcbd22', '#17becf', '#7f7f7f', '#aec7e8', '#98df8a', '#ff9896', '#c5b0d5'];

function variantColor(variant) {
  if (VARIANT_COLORS[variant]) return VARIANT_COLORS[variant];
  let hash = 0;
  for (const ch of variant) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return PLUGIN_COLORS[hash % PLUGIN_COLORS.length];
}

// The enum's order for colltest's own variants; the plugins after them (by name, see the sort).
function variantRank(variant) {
  const i = ENUMS.VARIANT.indexOf(variant.toUpperCase());
  return i >= 0 && variant !== 'plugin' ? i : ENUMS.VARIANT.length;
}

// The cases of the selected n / dtype / world as series: one per variant, per mode when the run
// has several modes ("lamport graph"), per epilogue when it has several ("lamport fp8_token",
// "lamport graph fp8_token+normed"). Values are null where a case did not pass (a failed case's
// time means nothing) so that log axes never see 0. Variants compete within a group: one mode
// and one epilogue (its label '' when the run has only one of each).
function buildSeries(cases) {
  const chosen = cases.filter((c) => num(c.n) === plotChoice.n && dtypeName(c.dtype) === plotChoice.dtype &&
                                     num(c.world_size) === plotChoice.world);
  const modes = [...new Set(chosen.map((c) => modeName(c.mode)))];
  const epilogues = [...new Set(chosen.map(epilogueLabel))].sort((a, b) => epilogueRank(a) - epilogueRank(b));
  const xs = [...new Set(chosen.map((c) => num(c.m)))].filter((m) => m > 0).sort((a, b) => a - b);
  const groupOf = (mode, epilogue) =>
    [modes.length > 1 ? mode : '', epilogues.length > 1 ? epilogue : ''].filter(Boolean).join(' ');
  const byKey = new Map();
  for (const c of chosen) {
    // "plugin:NAME" for a plugin's case: each plugin is a series of its own.
    const variant = caseVariantName(c);
    const mode = modeName(c.mode);
    const epilogue = epilogueLabel(c);
    const key = `${variant}|${mode}|${epilogue}`;
    if (!byKey.has(key)) {
      const group = groupOf(mode, epilogue);
      byKey.set(key, {
        variant, mode, epilogue, group, shade: epilogues.indexOf(epilogue),
        name: group ? `${variant} ${group}` : variant,
        latency: xs.map(() => null), busbw: xs.map(() => null),
      });
    }
    const s = byKey.get(key);
    const i = xs.indexOf(num(c.m));
    const median = num(c.timing && c.timing.median_us);
    if (i >= 0 && statusName(c.status) === 'OK' && median > 0) {
      s.latency[i] = median;
      s.busbw[i] = num(c.busbw_gbps) > 0 ? num(c.busbw_gbps) : null;
    }
  }
  const series = [...byKey.values()].sort((a, b) =>
    (variantRank(a.variant) - variantRank(b.variant)) || a.variant.localeCompare(b.variant) ||
    a.mode.localeCompare(b.mode) ||
    (epilogueRank(a.epilogue) - epilogueRank(b.epilogue)));
  const groups = [];
  for (const mode of modes) {
    for (const epilogue of epilogues) {
      if (series.some((s) => s.mode === mode && s.epilogue === epilogue)) {
        groups.push({label: groupOf(mode, epilogue), mode, epilogue});
      }
    }
  }
  return {xs, series, groups};
}

// speed-up of series s at m: the best (lowest) median among the other variants of the same group
// (mode and epilogue), divided by s's median; > 1 means s beats every other variant there.
function speedups(xs, series) {
  return series.map((s) => xs.map((_, i) => {
    const own = s.latency[i];
    if (own === null) return null;
    let best = Infinity;
    for (const o of series) {
      if (o !== s && o.group === s.group && o.latency[i] !== null) best = Math.min(best, o.latency[i]);
    }
    return Number.isFinite(best) ? best / own : null;
  }));
}

// The fastest variant at each m, per group, as segments: [{group, variant, from, to}].
function crossovers(xs, series, groups) {
  const segments = [];
  for (const {label} of groups) {
    let current = null;
    xs.forEach((m, i) => {
      let winner = null;
      for (const s of series) {
        if (s.group !== label || s.latency[i] === null) continue;
        if (!winner || s.latency[i] < winner.latency[i]) winner = s;
      }
      if (!winner) return;
      if (current && current.variant === winner.variant) {
        current.to = m;
      } else {
        current = {group: label, variant: winner.variant, from: m, to: m};
        segments.push(current);
      }
    });
  }
  return segments;
}

// "lamport_tb fastest up to m=64, one_stage from m=128" (per group when several).
function crossoverText(segments, group) {
  const mine = segments.filter((s) => s.group === group);
  if (mine.length === 0) return '';
  if (mine.length === 1) return `${mine[0].variant} fastest at every m`;
  return mine.map((s, i) => {
    if (i === 0) return `${s.variant} fastest up to ${atM(s.to)}`;
    if (i === mine.length - 1) return `${s.variant} from ${atM(s.from)}`;
    return s.from === s.to ? `${s.variant} at ${atM(s.from)}` : `${s.variant} from ${atM(s.from)} to ${atM(s.to)}`;
  }).join(', ');
}

// '#1f77b4' mixed with white by `fraction` (0: as it is).
function lighten(hex, fraction) {
  const rgb = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return `rgb(${rgb.map((x) => Math.round(x + (255 - x) * fraction)).join(',')})`;
}

// The variant's colour, lighter for each further epilogue of the run (the legend names it).
const EPILOGUE_SHADES = [0, 0.45, 0.65, 0.8];

function seriesStyle(s) {
  const color = variantColor(s.variant);
  const shade = EPILOGUE_SHADES[Math.min(s.shade, EPILOGUE_SHADES.length - 1)] || 0;
  const style = {stroke: shade ? lighten(color, shade) : color, width: 2};
  // The anchor (nccl) is dashed; graph mode is drawn dotted so that modes stay apart.
  if (s.variant === ANCHOR_VARIANT) style.dash = s.mode === 'graph' ? [10, 4, 2, 4] : [8, 5];
  else if (s.mode === 'graph') style.dash = [2, 4];
  return style;
}

// The horizontal line at `y` (speed-up 1) across the plot's area.
function drawHorizontal(u, y) {
  const {left, top, width, height} = u.bbox;
  const pos = u.valToPos(y, 'y', true);
  if (pos < top || pos > top + height) return;
  const ctx = u.ctx;
  const ratio = uPlot.pxRatio || 1;
  ctx.strokeStyle = '#999';
  ctx.setLineDash([4 * ratio, 4 * ratio]);
  ctx.beginPath();
  ctx.moveTo(left, pos);
  ctx.lineTo(left + width, pos);
  ctx.stroke();
}

// A dashed vertical line in the marker's colour at its x.
function drawVertical(u, mk) {
  const {left, top, width, height} = u.bbox;
  const x = u.valToPos(mk.x, 'x', true);
  if (x < left || x > left + width) return;
  const ratio = uPlot.pxRatio || 1;
  u.ctx.strokeStyle = mk.color;
  u.ctx.setLineDash([3 * ratio, 3 * ratio]);
  u.ctx.beginPath();
  u.ctx.moveTo(x, top);
  u.ctx.lineTo(x, top + height);
  u.ctx.stroke();
}

// A uPlot plugin: vertical markers (crossovers) on the canvas, their labels as elements over it
// placed so that none overlaps another (placeMarkerLabels), and an optional horizontal line.
function markersPlugin(markers, horizontal) {
  return {
    hooks: {
      draw: [(u) => {
        u.ctx.save();
        u.ctx.lineWidth = uPlot.pxRatio || 1;
        if (horizontal !== undefined) drawHorizontal(u, horizontal);
        for (const mk of markers) drawVertical(u, mk);
        u.ctx.restore();
        placeMarkerLabels(u, markers);
      }],
    },
  };
}

// Draws one plot and records what it drew on the element (data-series-count, data-series-names,
// names comma-separated; data-x-ticks, the x labels drawn) for tests and anyone inspecting it.
function drawPlot(id, {title, xs, series, values, yLabel, yLog, markers = [], horizontal}) {
  const host = resetPlotHost(id);
  const drawn = series.filter((_, k) => values[k].some((v) => v !== null));
  host.dataset.seriesCount = String(drawn.length);
  host.dataset.seriesNames = drawn.map((s) => s.name).join(',');
  host.dataset.title = title;
  host.dataset.xTicks = '';
  if (drawn.length === 0 || xs.length === 0) {
    host.append(el('p', {class: 'muted'}, `${title}: nothing to plot (no passing case, or one variant only)`));
    return;
  }
  const x = xs.map(xOf);
  const opts = {
    title,
    width: plotWidth(host),
    height: PLOT_HEIGHT,
    legend: {live: false},
    scales: {
      x: {time: false, distr: 3, log: 2, range: (u, min, max) => paddedLogRange(min, max)},
      y: yLog ? {distr: 3, log: 10} : {},
    },
    // A tick at each measured m (or its bytes), never between them: one m is one tick.
    axes: [measuredXAxis(host, x, fmtX, xAxisLabel()), {label: yLabel, size: 60}],
    series: [{label: plotChoice.x === 'bytes' ? 'bytes' : 'm'},
      ...drawn.map((s) => ({label: s.name, points: {show: true, size: 6}, spanGaps: true, ...seriesStyle(s)}))],
    plugins: [markersPlugin(markers.map((mk) => ({...mk, x: xOf(mk.x)})), horizontal)],
  };
  mountPlot(id, opts, [x, ...values.filter((v) => v.some((y) => y !== null))]);
}

function renderPlots(cases) {
  const {xs, series, groups} = buildSeries(cases);
  const segments = crossovers(xs, series, groups);
  const list = $('#crossover');
  clear(list);
  for (const {label, mode, epilogue} of groups) {
    const text = crossoverText(segments, label);
    if (text) list.append(el('li', {dataset: {mode, epilogue}}, label ? `${label}: ${text}` : text));
  }
  // A marker where the fastest variant changes, at the first m of the new winner.
  const markers = segments.filter((s, i) => i > 0 && segments[i - 1].group === s.group).map((s) => {
    const label = s.group ? `${s.variant} (${s.group})` : s.variant;
    return {x: s.from, label, title: `${label} fastest from ${atM(s.from)}`, color: variantColor(s.variant)};
  });
  const where = `n=${plotChoice.n} ${plotChoice.dtype} world=${plotChoice.world}`;
  // Ranks that shared a GPU: the plots say what their figures are, as the note above them does.
  const shown = state.shown;
  const timeNote = !sharedGpu(shown) ? '' : shown.time_sliced ? ' (time-sliced: meaningless)'
    : ` (${ranksPerGpu(shown)} ranks per GPU: kernel overhead)`;
  const busbwNote = !sharedGpu(shown) ? '' : ' (ranks share a GPU: not a link figure)';
  drawPlot('latency-plot', {
    title: `median latency, ${where}${timeNote}`, xs, series, values: series.map((s) => s.latency),
    yLabel: 'median us', yLog: true, markers,
  });
  drawPlot('speedup-plot', {
    title: `speed-up over the best other variant, ${where}${timeNote}`, xs, series, values: speedups(xs, series),
    yLabel: 'x', yLog: false, markers, horizontal: 1,
  });
  drawPlot('busbw-plot', {
    title: `bus bandwidth, ${where}${busbwNote}`, xs, series, values: series.map((s) => s.busbw),
    yLabel: 'GB/s', yLog: false,
  });
}

function onSelectorChange() {
  plotChoice.n = Number($('#sel-n').value);
  plotChoice.dtype = $('#sel-dtype').value;
  plotChoice.world = Number($('#sel-world').value);
  plotChoice.x = $('#sel-x').value === 'bytes' ? 'bytes' : 'rows';
  localStorage.setItem(X_UNIT_KEY, plotChoice.x);
  if (state.shown) renderPlots(state.shown.cases || []);
}

function initPlots() {
  for (const id of ['#sel-n', '#sel-dtype', '#sel-world', '#sel-x']) $(id).addEventListener('change', onSelectorChange);
}

