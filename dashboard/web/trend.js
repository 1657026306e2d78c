// colltest dashboard: the trend view (#trend=RUN_ID&case=INDEX). One case of a run (matched as
// the server's compare matches cases: caseKey and matchCase) across the runs of the same machine:
// its median and p10-p90 band, one point per run in time order, the machine's baselines marked
// and, red, the runs whose comparison with the chosen baseline (GET /api/v1/compare, the server's
// verdict) says REGRESSION for this case.
'use strict';

const TREND_MAX_RUNS = 30;      // the newest runs of the machine that may hold the case
const TREND_LIST_PAGES = 3;     // pages of 100 summaries read to find them
const TREND_PARALLEL = 3;       // GET /api/v1/runs/{id} and compares in flight at once

const trend = {run: null, target: null, machine: '', points: [], baselines: [], seq: 0, judged: 0, read: 0};

function trendHash(runId, index) {
  return `#trend=${encodeURIComponent(runId)}&case=${index}`;
}

// What identifies a case across runs, as the server's compare matches them (server/runs/compare.cc
// KeyOf; CaseComparison in colltest.proto): variant, plugin name (a plugin's case, or the plugin
// `auto` picked), mode, world_size, m, n, dtype (unset mode and dtype as eager and bf16), epilogue
// and keep_normed (only under a quantising epilogue: epilogueLabel). The fp8 format is matched
// apart (matchCase). Works for a CaseResult and a CaseComparison alike.
function caseKey(c) {
  return [variantName(c.variant), pluginNameOf(c.plugin), modeName(c.mode), num(c.world_size), num(c.m),
    num(c.n), dtypeName(c.dtype), epilogueLabel(c)].join('|');
}

// The FP8 format of the case as the server's compare reads it (Fp8FormatOf): the one the fp8
// epilogues wrote; '' for other epilogues and for a case that did not say (one that never ran).
function caseFp8Format(c) {
  const epilogue = epilogueName(c.epilogue);
  return epilogue === 'fp8_token' || epilogue === 'fp8_tensor' ? fp8FormatName(c.fp8_format) : '';
}

// The case of `cases` that the server's compare pairs with a case of this key and fp8 format
// (TakeMatch): the first with the key and the same format, else the first with the key whose
// format either side does not know (e4m3fn and e4m3fnuz are never one case). undefined if none.
function matchCase(cases, key, format) {
  const candidates = (cases || []).filter((c) => caseKey(c) === key);
  return candidates.find((c) => caseFp8Format(c) === format) ||
    candidates.find((c) => !format || !caseFp8Format(c));
}

function caseTitle(c) {
  const format = caseFp8Format(c);
  return `${caseVariantName(c)} ${modeName(c.mode)} world=${num(c.world_size)} m=${num(c.m)} ` +
    `n=${num(c.n)} ${dtypeName(c.dtype)} ${epilogueLabel(c)}${format ? ` ${format}` : ''}`;
}

async function openTrend(params) {
  const runId = params.get('trend') || (state.shown && state.shown.run_id) || '';
  const seq = ++trend.seq;
  trend.points = [];
  resetPlotHost('trend-plot');
  clear($('#trend-table tbody'));
  $('#trend-empty').hidden = !!runId;
  $('#trend-panel').hidden = !runId;
  if (!runId) return;
  setTrendStatus('reading the run...');
  try {
    const run = await trendRun(runId);
    const cases = run.cases || [];
    const target = cases.find((c) => num(c.index) === Number(params.get('case'))) || cases[0];
    if (seq !== trend.seq) return;
    Object.assign(trend, {run, target, machine: '', points: []});
    renderTrendCases(run, target);
    if (!target) return setTrendStatus('the run has no case');
    await loadTrendPoints(run, target, seq);
  } catch (e) {
    setTrendStatus('');
    showError(e);
  }
}

// The run shown already when it is the one asked for and finished; else GET.
async function trendRun(runId) {
  const shown = state.shown;
  if (shown && shown.run_id === runId && TERMINAL_STATES.has(runStateName(shown.state))) return shown;
  return api(`api/v1/runs/${encodeURIComponent(runId)}`);
}

function renderTrendCases(run, target) {
  $('#trend-run').textContent = run.run_id;
  $('#trend-run').href = `#run=${encodeURIComponent(run.run_id)}`;
  const select = $('#trend-case');
  clear(select);
  for (const c of [...(run.cases || [])].sort((a, b) => num(a.index) - num(b.index))) {
    select.append(el('option', {value: String(num(c.index)), selected: c === target}, caseTitle(c)));
  }
}

function setTrendStatus(text) {
  $('#trend-status').textContent = text;
}

// Whether a run of this spec may hold the case (a summary without a spec may).
function specMayHold(spec, c) {
  if (!spec) return true;
  const has = (list, v) => !list || list.length === 0 || list.map(num).includes(v);
  return has(spec.m, num(c.m)) && has(spec.n, num(c.n)) &&
    (!num(spec.world_size) || num(spec.world_size) === num(c.world_size)) &&
    dtypeName(spec.dtype) === dtypeName(c.dtype);
}

// The machine's finished runs that may hold the case, newest first, at most TREND_MAX_RUNS.
async function machineRuns(key, c) {
  const found = [];
  let token = '';
  for (let page = 0; page < TREND_LIST_PAGES && found.length < TREND_MAX_RUNS; page++) {
    const reply = await listMachinePage(key, token);
    found.push(...(reply.runs || []).filter((r) =>
      TERMINAL_STATES.has(runStateName(r.state)) && specMayHold(r.spec, c)));
    token = reply.next_page_token || '';
    if (!token) break;
  }
  return found.slice(0, TREND_MAX_RUNS);
}

// One page of the machine's runs (ListRunsRequest.machine_key; the page is compiled into the
// colltestd that answers it, so the filter is always there).
function listMachinePage(key, token) {
  return api(`api/v1/runs${query({machine_key: key, limit: 100, page_token: token})}`);
}

async function loadTrendPoints(run, target, seq) {
  const key = (run.machine && run.machine.key) || '';
  // Without a key the list would not be filtered (an empty machine_key is any machine): the runs
  // of other machines are no trend of this one.
  if (!key) {
    trend.baselines = [];
    renderBaselineChoice([]);
    return setTrendStatus(`this run has no machine key: its record does not say which machine it ran on ` +
      `(MachineIdentity.key), so there is no trend of its machine to show`);
  }
  setTrendStatus('reading the runs of this machine...');
  const [summaries, baselines] = await Promise.all([
    machineRuns(key, target),
    api(`api/v1/baselines${query({machine_key: key})}`),
  ]);
  const runs = await mapLimited(summaries, TREND_PARALLEL, (s) =>
    (s.run_id === run.run_id ? run : api(`api/v1/runs/${encodeURIComponent(s.run_id)}`)));
  if (seq !== trend.seq) return;
  trend.read = runs.length;
  trend.machine = key;
  trend.baselines = baselines.baselines || [];
  trend.points = trendPoints(runs, target, trend.baselines);
  renderBaselineChoice(trend.baselines);
  await judgeTrend(seq);
}

// One point per run whose case (the one the server's compare would pair with the target) passed:
// its median, p10 and p90, oldest first, with the names of the baselines that point at the run.
function trendPoints(runs, target, baselines) {
  const key = caseKey(target);
  const format = caseFp8Format(target);
  return runs.flatMap((r) => {
    const c = matchCase(r.cases, key, format);
    const t = (c && statusName(c.status) === 'OK' && c.timing) || {};
    if (!(num(t.median_us) > 0)) return [];
    return [{run_id: r.run_id, created: num(r.created_unix_ms), label: (r.spec && r.spec.label) || '',
      key, format: caseFp8Format(c),
      median: num(t.median_us), p10: num(t.p10_us) || num(t.median_us), p90: num(t.p90_us) || num(t.median_us),
      baselines: baselines.filter((b) => b.run_id === r.run_id).map((b) => b.name || 'default'),
      verdict: '', reason: ''}];
  }).sort((a, b) => a.created - b.created);
}

function renderBaselineChoice(baselines) {
  const select = $('#trend-baseline');
  const before = select.value;
  const names = [...new Set(baselines.map((b) => b.name || 'default'))].sort();
  clear(select);
  for (const name of names) select.append(el('option', {value: name}, name));
  select.value = names.includes(before) ? before : (names.includes('default') ? 'default' : names[0] || '');
}

// Each run's verdict for the case against the chosen baseline, as GET /api/v1/compare gives it.
async function judgeTrend(seq = trend.seq) {
  if (!trend.run || !trend.machine) return;  // no trend (yet, or refused: no machine key)
  const judging = ++trend.judged;  // a later judgement (another baseline or threshold) wins
  const name = $('#trend-baseline').value;
  const baseline = trend.baselines.find((b) => (b.name || 'default') === name);
  let verdicts = trend.points.map(() => ({verdict: '', reason: ''}));
  if (baseline) {
    setTrendStatus(`comparing ${trend.points.length} runs with baseline ${name}...`);
    const threshold = thresholdParam('#trend-threshold');
    verdicts = await mapLimited(trend.points, TREND_PARALLEL, (p) => judgePoint(p, baseline, threshold));
  }
  if (seq !== trend.seq || judging !== trend.judged) return;
  trend.points.forEach((p, i) => Object.assign(p, verdicts[i]));
  renderTrend(baseline);
}

// {verdict, reason} of the point's case: BASELINE for the baseline's own run, REFUSED (with the
// server's error) where the server would not compare.
async function judgePoint(p, baseline, threshold) {
  if (p.run_id === baseline.run_id) return {verdict: 'BASELINE', reason: ''};
  try {
    const reply = await api(`api/v1/compare${query({run_b: p.run_id, baseline: baseline.name, threshold})}`);
    const k = matchCase(reply.cases, p.key, p.format);
    return k ? {verdict: enumName('COMPARE_VERDICT', k.verdict), reason: k.reason || ''}
      : {verdict: '', reason: 'the case is not in the comparison'};
  } catch (e) {
    return {verdict: 'REFUSED', reason: `${e.code || 'ERROR'}: ${e.message}`};
  }
}

function renderTrend(baseline) {
  const m = trend.run.machine || {};
  const regressions = trend.points.filter((p) => p.verdict === 'REGRESSION').length;
  setTrendStatus(`${trend.points.length} of the ${trend.read} newest runs of ${m.hostname || 'this machine'} ` +
    `(machine ${m.key || '?'}) that may hold the case passed it` +
    (baseline ? `; against baseline ${baseline.name} (run ${baseline.run_id}): ${regressions} regressed`
      : '; the machine has no baseline: regressions not judged'));
  drawTrend();
  renderTrendTable();
}

// ---------------------------------------------------------------------------------------------
// The plot: the p10-p90 band and the median line drawn by uPlot; the points (one per run, red
// for a regression, ringed for a baseline) as elements over it, each a link to its run.

function drawTrend() {
  const host = resetPlotHost('trend-plot');
  const pts = trend.points;
  host.dataset.pointCount = String(pts.length);
  if (pts.length === 0) {
    host.append(el('p', {class: 'muted'}, 'no run of this machine passed this case'));
    return;
  }
  const xs = pts.map((p) => p.created / 1000);
  const span = xs[xs.length - 1] - xs[0];
  const pad = span > 0 ? span * 0.06 : 3600;  // one run: an hour each side
  const ys = pts.flatMap((p) => [p.p10, p.p90, p.median]);
  mountPlot('trend-plot', {
    title: `${caseTitle(trend.target)}: median and p10-p90 per run`,
    width: plotWidth(host),
    height: PLOT_HEIGHT,
    legend: {live: false},
    scales: {
      x: {time: true, range: (u, min, max) => [min - pad, max + pad]},
      y: {distr: 3, log: 10, range: () => decadeRange(Math.min(...ys), Math.max(...ys))},
    },
    axes: [{label: 'run created'}, {label: 'median us', size: 60}],
    series: [{label: 'created'},
      {label: 'p10', stroke: 'rgba(31,119,180,0.4)', width: 1, points: {show: false}},
      {label: 'p90 (p10-p90 shaded)', stroke: 'rgba(31,119,180,0.4)', width: 1, points: {show: false}},
      {label: 'median', stroke: '#1f77b4', width: 2, points: {show: false}}],
    bands: [{series: [2, 1], fill: 'rgba(31,119,180,0.15)'}],
    hooks: {draw: [(u) => placeTrendPoints(u, host)]},
  }, [xs, pts.map((p) => p.p10), pts.map((p) => p.p90), pts.map((p) => p.median)]);
}

function pointTitle(p) {
  return [`run ${p.run_id}${p.label ? ` (${p.label})` : ''}, ${fmtTime(p.created)}`,
    `median ${fmtNumber(p.median)} us, p10 ${fmtNumber(p.p10)}, p90 ${fmtNumber(p.p90)}`,
    p.baselines.length && `baseline ${p.baselines.join(', ')}`,
    p.verdict && p.verdict !== 'BASELINE' && `against the baseline: ${p.verdict}${p.reason ? ` (${p.reason})` : ''}`,
  ].filter(Boolean).join('\n');
}

function placeTrendPoints(u, host) {
  for (const old of u.over.querySelectorAll('.trend-points')) old.remove();
  const layer = el('div', {class: 'trend-points'});
  for (const p of trend.points) {
    const x = u.valToPos(p.created / 1000, 'x');
    const y = u.valToPos(p.median, 'y');
    const cls = ['trend-point', p.verdict === 'REGRESSION' && 'regression', p.baselines.length && 'baseline'];
    const dot = el('a', {class: cls.filter(Boolean).join(' '), href: `#run=${encodeURIComponent(p.run_id)}`,
      title: pointTitle(p), dataset: {runId: p.run_id, verdict: p.verdict}});
    dot.style.left = `${x}px`;
    dot.style.top = `${y}px`;
    layer.append(dot);
    if (p.baselines.length) {
      const tag = el('span', {class: 'trend-baseline-label', dataset: {runId: p.run_id}}, `baseline ${p.baselines.join(', ')}`);
      tag.style.left = `${x}px`;
      tag.style.top = `${y - 24}px`;
      layer.append(tag);
    }
  }
  u.over.append(layer);
  host.dataset.regressionRuns = trend.points.filter((p) => p.verdict === 'REGRESSION').map((p) => p.run_id).join(',');
  host.dataset.baselineRuns = trend.points.filter((p) => p.baselines.length).map((p) => p.run_id).join(',');
}

function renderTrendTable() {
  const body = $('#trend-table tbody');
  clear(body);
  for (const p of [...trend.points].reverse()) {
    body.append(el('tr', {class: p.verdict === 'REGRESSION' ? 'bad' : '', dataset: {runId: p.run_id, verdict: p.verdict}},
      el('td', {}, runLink(p.run_id)),
      el('td', {}, fmtTime(p.created)),
      el('td', {}, p.label),
      el('td', {class: 'num'}, fmtNumber(p.median)),
      el('td', {class: 'num'}, fmtNumber(p.p10)),
      el('td', {class: 'num'}, fmtNumber(p.p90)),
      el('td', {}, p.baselines.join(', ')),
      el('td', {}, p.verdict === 'BASELINE' ? 'the baseline' : p.verdict),
      el('td', {class: 'message'}, p.reason)));
  }
}

function redrawTrend() {
  if (trend.points.length && !$('#view-trend').hidden) drawTrend();
}

function initTrend() {
  $('#trend-case').addEventListener('change', () => {
    if (trend.run) location.hash = trendHash(trend.run.run_id, $('#trend-case').value);
  });
  $('#trend-baseline').addEventListener('change', () => judgeTrend());
  $('#trend-threshold').addEventListener('change', () => judgeTrend());
}
