// colltest dashboard: the comparison of two runs, or of a run and its machine's baseline
// (GET /api/v1/compare): its verdict per case as a table, a "regressions only" filter, and a plot
// of B's median against A's, each case in its verdict's colour. The verdicts are the server's.
'use strict';

// Of two ticked runs the older is the reference (a), the newer the candidate (b).
async function compareSelected() {
  const boxes = [...document.querySelectorAll('#history-table input.pick')];
  const created = new Map(boxes.map((b) => [b.dataset.runId, Number(b.dataset.created)]));
  const [a, b] = [...state.selected].sort((x, y) => (created.get(x) || 0) - (created.get(y) || 0));
  await runCompare({run_a: a, run_b: b});
}

async function compareWithBaseline() {
  const [b] = [...state.selected];
  await runCompare({run_b: b, baseline: $('#baseline-name').value.trim()});
}

// The threshold field ("10", "10 %", empty = the server's 5 %) as CompareRequest.threshold, a
// fraction; text that is no number is sent as typed, for the server to name what is wrong.
function thresholdParam(selector) {
  const text = $(selector).value.trim().replace(/\s*%$/, '');
  if (text === '') return undefined;
  const percent = Number(text);
  return Number.isFinite(percent) ? String(percent / 100) : text;
}

async function runCompare(params) {
  clearError();
  try {
    const threshold = params.threshold ?? thresholdParam('#compare-threshold');
    const reply = await api(`api/v1/compare${query({...params, threshold})}`);
    renderCompare(reply);
  } catch (e) {
    showError(e);
  }
}

let compareShown = null;  // the CompareResponse shown

function renderCompare(c) {
  $('#compare-panel').hidden = false;
  compareShown = c;
  renderCompareSummary(c);
  renderComparePlot(c);
  const body = $('#compare-table tbody');
  clear(body);
  // The epilogue is part of the server's matching key: a column once some case quantised.
  $('#compare-table').classList.toggle('with-epilogue', anyQuantising(c.cases || []));
  for (const k of c.cases || []) body.append(compareRow(k));
  applyRegressionsOnly();
}

// The comparison's message, its two runs and machines, and the threshold it applied.
function renderCompareSummary(c) {
  const message = $('#compare-message');
  message.textContent = c.message || `${num(c.regressions)} regressions, ${num(c.improvements)} improvements`;
  message.className = `verdict ${c.regressed ? 'bad' : 'good'}`;
  message.dataset.regressed = String(!!c.regressed);
  const meta = $('#compare-meta');
  clear(meta);
  const machine = (m) => (m ? [m.hostname, m.backend, m.driver_version && `driver ${m.driver_version}`,
    m.colltest_version && `colltest ${m.colltest_version}`].filter(Boolean).join(', ') : '');
  const rows = [
    ['A (reference)', `${c.run_a || ''}${c.baseline ? ` (baseline ${c.baseline})` : ''}`],
    ['B (candidate)', c.run_b || ''],
    ['machine A', machine(c.machine_a)],
    ['machine B', machine(c.machine_b)],
    ['threshold', c.threshold ? `${(num(c.threshold) * 100).toFixed(1)} %` : ''],
  ];
  for (const [key, value] of rows) if (value) meta.append(el('div', {}, el('dt', {}, key), el('dd', {}, value)));
}

function compareRow(k) {
  const verdict = enumName('COMPARE_VERDICT', k.verdict);
  const variant = caseVariantName(k);
  return el('tr', {class: `verdict-${verdict.toLowerCase()}`, dataset: {verdict, epilogue: epilogueLabel(k), variant}},
    el('td', {title: comparedBuilds(k) || null}, variant),
    el('td', {}, modeName(k.mode)),
    el('td', {class: 'num'}, String(num(k.world_size))),
    el('td', {class: 'num'}, String(num(k.m))),
    el('td', {class: 'num'}, String(num(k.n))),
    el('td', {}, dtypeName(k.dtype)),
    compareEpilogueCell(k),
    el('td', {}, verdict),
    el('td', {class: 'num'}, fmtNumber(k.timing_a && k.timing_a.median_us)),
    el('td', {class: 'num'}, fmtNumber(k.timing_b && k.timing_b.median_us)),
    el('td', {class: 'num'}, k.ratio ? num(k.ratio).toFixed(3) : '-'),
    el('td', {}, statusName(k.status_a)),
    el('td', {}, statusName(k.status_b)),
    el('td', {class: 'message'}, k.reason || ''));
}

// "regressions only": the table keeps its REGRESSION rows; the plot still shows every case.
function applyRegressionsOnly() {
  const only = $('#compare-regressions-only').checked;
  const rows = [...document.querySelectorAll('#compare-table tbody tr')];
  for (const row of rows) row.hidden = only && row.dataset.verdict !== 'REGRESSION';
  const shown = rows.filter((r) => !r.hidden).length;
  $('#compare-filter-count').textContent = only ? `${shown} of ${rows.length} cases` : '';
}

// The two builds of a compared plugin case: "A: 1.0, sha256 ...\nB: 1.1, sha256 ...".
function comparedBuilds(k) {
  if (!isPluginVariant(k.variant)) return '';
  return [['A', k.plugin_a], ['B', k.plugin_b]].filter(([, p]) => pluginBuild(p))
    .map(([side, p]) => `${side}: ${pluginBuild(p)}`).join('\n');
}

// The epilogue of a compared case; its title gives the quantisation figures of A and B.
function compareEpilogueCell(k) {
  const cell = epilogueCell(k);
  const details = [['A', k.quant_a], ['B', k.quant_b]].filter(([, q]) => quantChecked(q))
    .map(([side, q]) => `${side}: ${quantCell(q)}\n${quantDetails(q)}`);
  if (details.length) cell.title = [cell.title, ...details].filter(Boolean).join('\n');
  return cell;
}

// ---------------------------------------------------------------------------------------------
// The compare plot

const VERDICT_COLORS = {SAME: '#8a8f98', IMPROVEMENT: '#2ca02c', REGRESSION: '#d62728'};

// The cases timed in both runs, by A's median: [{verdict, a, b}] (ONLY_A, ONLY_B and cases that
// failed on a side have no pair of medians).
function pairedMedians(c) {
  return (c.cases || []).map((k) => ({
    verdict: enumName('COMPARE_VERDICT', k.verdict),
    a: num(k.timing_a && k.timing_a.median_us),
    b: num(k.timing_b && k.timing_b.median_us),
  })).filter((p) => p.a > 0 && p.b > 0).sort((x, y) => x.a - y.a);
}

// The diagonal B = A: above it B was slower.
function diagonalPlugin() {
  return {
    hooks: {
      draw: [(u) => {
        const [lo, hi] = [u.scales.x.min, u.scales.x.max];
        const ratio = uPlot.pxRatio || 1;
        u.ctx.save();
        u.ctx.strokeStyle = '#999';
        u.ctx.lineWidth = ratio;
        u.ctx.setLineDash([4 * ratio, 4 * ratio]);
        u.ctx.beginPath();
        u.ctx.moveTo(u.valToPos(lo, 'x', true), u.valToPos(lo, 'y', true));
        u.ctx.lineTo(u.valToPos(hi, 'x', true), u.valToPos(hi, 'y', true));
        u.ctx.stroke();
        u.ctx.restore();
      }],
    },
  };
}

// One series of points per verdict, in its colour; both axes log, on the same range. What is
// drawn is written to the host: data-series ("REGRESSION:#d62728:2,SAME:#8a8f98:5") and
// data-unplotted (cases without two medians).
function renderComparePlot(c) {
  const host = resetPlotHost('compare-plot');
  const pairs = pairedMedians(c);
  const verdicts = Object.keys(VERDICT_COLORS).filter((v) => pairs.some((p) => p.verdict === v));
  const columns = verdicts.map((v) => pairs.map((p) => (p.verdict === v ? p.b : null)));
  host.dataset.series = verdicts.map((v, i) =>
    `${v}:${VERDICT_COLORS[v]}:${columns[i].filter((y) => y !== null).length}`).join(',');
  host.dataset.unplotted = String((c.cases || []).length - pairs.length);
  if (pairs.length === 0) {
    host.append(el('p', {class: 'muted'}, 'no case was timed in both runs: nothing to plot'));
    return;
  }
  const all = pairs.flatMap((p) => [p.a, p.b]);
  const range = () => decadeRange(Math.min(...all), Math.max(...all));
  mountPlot('compare-plot', {
    title: `median B against median A, ${pairs.length} cases timed in both (above the diagonal: B slower)`,
    width: plotWidth(host),
    height: PLOT_HEIGHT,
    legend: {live: false},
    scales: {x: {time: false, distr: 3, log: 10, range}, y: {distr: 3, log: 10, range}},
    axes: [{label: 'median A us (reference)'}, {label: 'median B us (candidate)', size: 60}],
    series: [{label: 'A'}, ...verdicts.map((v) => ({
      label: v, stroke: VERDICT_COLORS[v], paths: () => null,
      points: {show: true, size: 9, fill: VERDICT_COLORS[v], stroke: VERDICT_COLORS[v]},
    }))],
    plugins: [diagonalPlugin()],
  }, [pairs.map((p) => p.a), ...columns]);
}

function redrawComparePlot() {
  if (compareShown && !$('#compare-panel').hidden) renderComparePlot(compareShown);
}

function initCompare() {
  $('#compare-runs').addEventListener('click', compareSelected);
  $('#compare-baseline').addEventListener('click', compareWithBaseline);
  $('#compare-regressions-only').addEventListener('change', applyRegressionsOnly);
}
