// colltest dashboard: what every plot shares (uPlot instances, sizes, x ticks at the measured
// values, labels placed without overlap, byte units). Plain functions over app.js's helpers.
'use strict';

const PLOT_HEIGHT = 340;
const plotInstances = {};  // host element id -> uPlot

// Destroys the plot drawn in the host (if any) and empties it; returns the host.
function resetPlotHost(id) {
  const host = document.getElementById(id);
  if (plotInstances[id]) {
    plotInstances[id].destroy();
    delete plotInstances[id];
  }
  clear(host);
  return host;
}

function mountPlot(id, opts, data) {
  plotInstances[id] = new uPlot(opts, data, document.getElementById(id));
  return plotInstances[id];
}

// The width a plot gets: its host's, at least 360 px (a hidden host has none yet).
function plotWidth(host) {
  return Math.max(360, host.clientWidth || 640);
}

// "512 B", "4 KiB", "1.5 MiB": powers of 1024, at most three significant digits.
const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

function fmtBytes(bytes) {
  let value = num(bytes);
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${Number(value.toPrecision(3))} ${BYTE_UNITS[unit]}`;
}

// A log scale's range around [min, max]: a single value gets room on both sides.
function paddedLogRange(min, max, factor = 1.6) {
  if (!(min > 0) || !(max > 0)) return [1, 10];
  return [min / factor, max * factor];
}

// A log-10 scale's range: whole decades around [min, max] with some room, so that its ticks are
// 1, 10, 100, ...
function decadeRange(min, max) {
  if (!(min > 0) || !(max > 0)) return [1, 10];
  return [10 ** Math.floor(Math.log10(min / 1.2)), 10 ** Math.ceil(Math.log10(max * 1.2))];
}

let measureContext = null;

// The width in px of a label in the axes' 12 px font.
function textWidth(text, font = '12px sans-serif') {
  if (!measureContext) measureContext = document.createElement('canvas').getContext('2d');
  measureContext.font = font;
  return measureContext.measureText(String(text)).width;
}

// Tick labels that fit, left to right: a label is left out (null) where it would touch the one
// kept before it.
function thinTickLabels(u, values, labels) {
  let right = -Infinity;
  return values.map((v, i) => {
    const x = u.valToPos(v, 'x');
    const half = textWidth(labels[i]) / 2;
    if (x - half < right + 8) return null;
    right = x + half;
    return labels[i];
  });
}

// An x axis with a tick at each of `values` (what was measured) and nowhere else, labelled by
// `format`. The labels drawn are written to host's data-x-ticks, comma-separated.
function measuredXAxis(host, values, format, label) {
  return {
    label,
    splits: () => values,
    values: (u, splits) => {
      const labels = thinTickLabels(u, splits, splits.map(format));
      host.dataset.xTicks = labels.filter((l) => l !== null).join(',');
      return labels;
    },
  };
}

const LABEL_LANE_PX = 16;

// A place for a label `width` px wide beside x: right of it, else left of it, in the first lane
// (row) where it keeps 4 px from every label placed before; null when no lane has room.
function findLabelSpot(x, width, placed, lanes, areaWidth) {
  for (let lane = 0; lane < lanes; lane++) {
    for (const left of [x + 3, x - 3 - width]) {
      if (left < 0 || left + width > areaWidth) continue;
      const clash = placed.some((p) => p.lane === lane && left < p.right + 4 && left + width + 4 > p.left);
      if (!clash) return {left, lane, right: left + width};
    }
  }
  return null;
}

// Writes labels ({x, label, title, color}) as elements over the plot's area (u.over), each
// beside its x without overlapping another; one with no room is left out (the layer's
// data-hidden-labels counts them; the crossover list above the plots names every change).
function placeMarkerLabels(u, markers, lanes = 4) {
  for (const old of u.over.querySelectorAll('.marker-labels')) old.remove();
  const layer = el('div', {class: 'marker-labels'});
  u.over.append(layer);
  const placed = [];
  let hidden = 0;
  const sorted = [...markers].sort((a, b) => a.x - b.x);
  for (const mk of sorted) {
    const span = el('span', {class: 'marker-label', title: mk.title || mk.label}, mk.label);
    span.style.color = mk.color;
    layer.append(span);
    const spot = findLabelSpot(u.valToPos(mk.x, 'x'), span.offsetWidth, placed, lanes, u.over.clientWidth);
    if (!spot) {
      span.remove();
      hidden += 1;
      continue;
    }
    span.style.left = `${spot.left}px`;
    span.style.top = `${spot.lane * LABEL_LANE_PX + 2}px`;
    placed.push(spot);
  }
  layer.dataset.hiddenLabels = String(hidden);
}

// Runs fn over items with at most `limit` calls in flight; the results in the items' order.
async function mapLimited(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({length: Math.min(limit, items.length)}, worker));
  return results;
}
