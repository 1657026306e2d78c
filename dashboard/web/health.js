// colltest dashboard: health checks (POST /api/v1/health), the last health verdicts (runs labelled
// "health" and "health pair") and the health matrix: every device of the last check (the
// diagonal: its rank in the group profile) and every pair of devices (off the diagonal), each cell
// in its status' colour, with the devices' UUIDs and the culprit of the last hang.
'use strict';

// The matrix shown: from the check this page ran (source 'check'), else rebuilt from the newest
// health runs of the history (source 'history'; cached by the group run's id).
const health = {model: null, historyRunId: ''};

// The last health verdicts: runs labelled "health" (the group profile) and "health pair".
async function loadHealthRuns() {
  try {
    const [group, pairs] = await Promise.all([
      api(`api/v1/runs${query({label: 'health', limit: 5})}`),
      api(`api/v1/runs${query({label: 'health pair', limit: 5})}`),
    ]);
    const runs = [...(group.runs || []), ...(pairs.runs || [])]
      .sort((a, b) => num(b.created_unix_ms) - num(a.created_unix_ms)).slice(0, 5);
    const body = $('#health-runs tbody');
    clear(body);
    for (const r of runs) {
      body.append(el('tr', {class: runIsBad(r) ? 'bad' : '', dataset: {runId: r.run_id}},
        el('td', {}, fmtTime(r.created_unix_ms)),
        el('td', {}, r.label || ''),
        el('td', {}, runStateName(r.state)),
        el('td', {class: 'num'}, String(num(r.ok))),
        el('td', {class: 'num'}, String(num(r.failed))),
        el('td', {}, runLink(r.run_id))));
    }
    $('#health-runs-empty').hidden = runs.length > 0;
    if ((group.runs || []).length) await loadHealthMatrixFromRuns(group.runs[0]);
  } catch (e) {
    showError(e);
  }
}

async function runHealthCheck(event) {
  event.preventDefault();
  await checkHealth({pairs: $('#health-pairs').checked});
}

// POST /api/v1/health with `body` (a HealthRequest); shows the one-line verdict and the matrix.
async function checkHealth(body) {
  const button = $('#health-run');
  const out = $('#health-result');
  button.disabled = true;
  out.hidden = false;
  out.className = 'verdict';
  out.textContent = 'checking...';
  try {
    const r = await api('api/v1/health', {method: 'POST', body});
    const st = statusName(r.status);
    out.className = `verdict ${st === 'OK' ? 'good' : 'bad'}`;
    out.dataset.status = st;
    out.textContent = `${st}: ${r.message || ''} (${fmtNumber(r.wall_ms, 0)} ms)`;
    // A check that could not run (busy) answers the last verdict, if any: the matrix shows that.
    if (r.busy) out.textContent = `BUSY: ${r.busy_reason || ''}${r.message ? ` (last verdict: ${r.message})` : ''}`;
    if ((r.ranks || []).length) {
      health.model = healthModelOfResponse(r);
      renderHealthMatrix();
    }
  } catch (e) {
    out.hidden = true;
    showError(e);
  } finally {
    button.disabled = false;
    loadDevices();
    loadHealthRuns();
  }
}

// ---------------------------------------------------------------------------------------------
// The matrix's model: {source, when, devices: [{index, uuid, name}], ranks: Map(device -> cell),
// pairs: Map('a-b' -> cell)}, a cell {status, message, suspect, phase, detail}.

// The one order of a cell's statuses, best first, as the server's health metrics have it
// (server/runs/metrics_health.h TargetHealth: ok < unsupported < warn < wrong < hang < error); a
// status the API does not define counts as ERROR, as there.
const HEALTH_SEVERITY = ['OK', 'UNSUPPORTED', 'WARN', 'WRONG', 'HANG', 'ERROR'];

function severity(status) {
  const i = HEALTH_SEVERITY.indexOf(status);
  return i < 0 ? HEALTH_SEVERITY.indexOf('ERROR') : i;
}

// Whether status `a` is worse than `b` (the matrix's "worst" uses nothing else).
const worseStatus = (a, b) => severity(a) > severity(b);

const pairKey = (a, b) => `${Math.min(a, b)}-${Math.max(a, b)}`;

// A HealthTarget as a cell: OK but slow or below its expected busbw is a WARN.
function cellOfTarget(t) {
  const st = statusName(t.status);
  const warn = st === 'OK' && (t.slow || t.below_expected);
  const detail = [
    num(t.latency_us) > 0 && `${fmtNumber(t.latency_us)} us (${num(t.median_ratio).toFixed(2)} x the median)`,
    t.slow && 'slow',
    num(t.busbw_gbps) > 0 && `busbw ${fmtNumber(t.busbw_gbps)} GB/s` +
      (num(t.expected_busbw_gbps) > 0 ? ` of ${fmtNumber(t.expected_busbw_gbps)} expected` : ''),
    t.below_expected && 'below the expected busbw',
  ].filter(Boolean).join(', ');
  return {status: warn ? 'WARN' : st, message: t.message || '', suspect: num(t.suspect_peer ?? -1),
    phase: t.phase || '', detail};
}

// The devices of a check with their UUIDs (MachineIdentity.devices), in index order.
function checkDevices(machine, indices) {
  const known = new Map(((machine && machine.devices) || []).map((d) => [num(d.index), d]));
  return [...new Set(indices)].sort((a, b) => a - b).map((index) => {
    const d = known.get(index) || {};
    return {index, uuid: d.uuid || '', name: d.name || ''};
  });
}

function healthModelOfResponse(r) {
  const ranks = new Map((r.ranks || []).map((t) => [num((t.devices || [])[0]), cellOfTarget(t)]));
  const pairs = new Map((r.pairs || []).map((t) => [pairKey(num(t.devices[0]), num(t.devices[1])), cellOfTarget(t)]));
  const indices = [...(r.ranks || []), ...(r.pairs || [])].flatMap((t) => (t.devices || []).map(num));
  return {source: 'check', when: num(r.verdict_unix_ms), message: r.message || '',
    devices: checkDevices(r.machine, indices), ranks, pairs};
}

// Folds a status into a cell: the worse one stays, with its message and suspect. UNSUPPORTED is
// a property of the variant, not of the hardware: healthy, as the server's check counts it
// (server/health/health_report.cc HealthStatus).
function foldCell(cell, status, message, suspect, phase) {
  const st = status === 'UNSUPPORTED' ? 'OK' : status;
  if (cell && !worseStatus(st, cell.status)) return cell;
  return {status: st, message: message || '', suspect, phase: phase || '', detail: ''};
}

// Each device's worst rank result over the group run's cases (its suspect peer as a device).
function rankCellsOfRun(run) {
  const devices = ((run.spec && run.spec.devices) || []).map(num);
  const cells = new Map(devices.map((d) => [d, {status: 'OK', message: '', suspect: -1, phase: '', detail: ''}]));
  for (const c of run.cases || []) {
    for (const r of c.ranks || []) {
      const device = devices[num(r.rank)];
      const peer = num(r.suspect_peer ?? -1);
      cells.set(device, foldCell(cells.get(device), statusName(r.status), r.message,
        peer >= 0 && peer < devices.length ? devices[peer] : -1, r.phase));
    }
  }
  return cells;
}

// A pair run's worst case, its suspect the device a hung rank waited for.
function pairCellOfRun(run) {
  const devices = ((run.spec && run.spec.devices) || []).map(num);
  let cell = {status: 'OK', message: '', suspect: -1, phase: '', detail: ''};
  for (const c of run.cases || []) {
    const hung = (c.ranks || []).find((r) => statusName(r.status) === 'HANG' && num(r.suspect_peer ?? -1) >= 0);
    const suspect = hung ? devices[num(hung.suspect_peer)] ?? -1 : -1;
    cell = foldCell(cell, statusName(c.status), c.message, suspect, hung && hung.phase);
  }
  return cell;
}

// How the pair runs of a check are listed: pages of `limit` summaries, at most `pages` of them
// (16 devices make 120 pairs; 1000 pair runs are 45 devices). An object, so that a test can page
// a small check.
const HEALTH_PAIR_PAGES = {limit: 100, pages: 10};

// The runs labelled "health pair" made at or after `sinceMs`, newest first, following
// next_page_token for at most HEALTH_PAIR_PAGES.pages pages: {runs, complete}.
async function listPairRuns(sinceMs) {
  const runs = [];
  let token = '';
  for (let page = 0; page < HEALTH_PAIR_PAGES.pages; page++) {
    const reply = await api(`api/v1/runs${query({label: 'health pair', since_unix_ms: sinceMs,
      limit: HEALTH_PAIR_PAGES.limit, page_token: token})}`);
    runs.push(...(reply.runs || []));
    token = reply.next_page_token || '';
    if (!token) return {runs, complete: true};
  }
  return {runs, complete: false};
}

// A pair run's cell from its summary where that says all (every case OK or UNSUPPORTED: the cell
// pairCellOfRun gives), else from the run read in full; the pair from the spec's devices.
async function pairCellOfSummary(s) {
  const run = num(s.ok) === num(s.cases) ? null : await api(`api/v1/runs/${encodeURIComponent(s.run_id)}`);
  const [a, b] = (((run || s).spec && (run || s).spec.devices) || []).map(num);
  return [pairKey(a, b), run ? pairCellOfRun(run) : {status: 'OK', message: '', suspect: -1, phase: '', detail: ''}];
}

// The newest group run of the history and the pair runs made after it (the same check). The
// group run is read in full; of the pair runs only those whose summary counts a case that was not
// OK or UNSUPPORTED (three at a time), so that a healthy 16-device machine costs two or three
// requests, not 120. Slow and below-expected WARNs exist only in a check's answer.
async function loadHealthMatrixFromRuns(groupSummary) {
  if (health.model && health.model.source === 'check') return;
  if (health.historyRunId === groupSummary.run_id && health.model) return renderHealthMatrix();
  const [group, pairs] = await Promise.all([api(`api/v1/runs/${encodeURIComponent(groupSummary.run_id)}`),
    listPairRuns(num(groupSummary.created_unix_ms))]);
  const pairEntries = await mapLimited(pairs.runs, 3, pairCellOfSummary);
  if (health.model && health.model.source === 'check') return;
  const ranks = rankCellsOfRun(group);
  health.model = {source: 'history', when: num(group.created_unix_ms), message: group.message || '',
    devices: checkDevices(group.machine, [...ranks.keys()]), ranks, pairs: new Map(pairEntries),
    pairRuns: pairs.runs.length, pairsComplete: pairs.complete};
  health.historyRunId = groupSummary.run_id;
  renderHealthMatrix();
}

// ---------------------------------------------------------------------------------------------
// The culprit and the matrix

// The device most hung targets waited for (their suspect peer), with the message of one of them;
// null when none, or two devices are named as often.
function hangCulprit(model) {
  const hung = [...model.ranks.values(), ...model.pairs.values()].filter((t) => t.status === 'HANG' && t.suspect >= 0);
  const votes = new Map();
  for (const t of hung) votes.set(t.suspect, (votes.get(t.suspect) || 0) + 1);
  const ranked = [...votes].sort((a, b) => b[1] - a[1]);
  if (ranked.length === 0 || (ranked.length > 1 && ranked[0][1] === ranked[1][1])) return null;
  const [device, count] = ranked[0];
  const named = hung.find((t) => t.suspect === device);
  return {device, count, message: named.message, phase: named.phase};
}

// The newest last hang over the groups (ListDevicesResponse.groups).
function newestGroupHang() {
  const groups = ((state.devices && state.devices.groups) || []).filter((g) => g.last_hang);
  return groups.sort((a, b) => num(b.last_hang_unix_ms) - num(a.last_hang_unix_ms))[0] || null;
}

function uuidOf(model, device) {
  const d = model.devices.find((x) => x.index === device);
  return d && d.uuid ? ` (${d.uuid})` : '';
}

function renderHealthCulprit(model) {
  const box = $('#health-culprit');
  const culprit = hangCulprit(model);
  const group = newestGroupHang();
  box.dataset.device = culprit ? String(culprit.device) : '';
  clear(box);
  if (culprit) {
    box.append(el('strong', {}, `culprit: device ${culprit.device}${uuidOf(model, culprit.device)}`),
      ` waited for by ${culprit.count} hung ${culprit.count === 1 ? 'target' : 'targets'}` +
      `${culprit.phase ? ` in ${culprit.phase}` : ''}: ${culprit.message}`);
  }
  if (group) {
    const device = num(group.last_hang_device);
    box.append(el('span', {class: 'group-hang', dataset: {device: String(device)}},
      `last hang on devices ${(group.devices || []).join(',')}: ` +
      `${device >= 0 ? `device ${device}${uuidOf(model, device)}: ` : ''}${group.last_hang} (${fmtTime(group.last_hang_unix_ms)})`));
  }
  box.hidden = !culprit && !group;
}

function matrixCell(cell, devices, isRank) {
  const status = cell ? cell.status : '';
  const title = cell ? [isRank ? `device ${devices}` : `pair ${devices}`, status, cell.message, cell.detail]
    .filter(Boolean).join('\n') : `${isRank ? 'device' : 'pair'} ${devices}: not checked`;
  return el('td', {class: `hm ${isRank ? 'hm-rank ' : ''}hm-${(status || 'none').toLowerCase()}`,
    dataset: {devices, status}, title}, status || '-');
}

function renderHealthMatrix() {
  const model = health.model;
  const table = $('#health-matrix');
  $('#health-matrix-panel').hidden = !model;
  if (!model) return;
  table.dataset.source = model.source;
  table.dataset.pairRuns = model.source === 'history' ? String(model.pairRuns) : '';
  $('#health-matrix-source').textContent = model.source === 'check'
    ? `the check this page ran at ${fmtTime(model.when)}`
    : `the health runs of ${fmtTime(model.when)} (history)` + (model.pairsComplete ? ''
      : `; only the newest ${model.pairRuns} pair runs read: the pairs of the others are not checked here`);
  const head = el('tr', {}, el('th', {}, ''), ...model.devices.map((d) =>
    el('th', {class: 'hm-device', dataset: {device: String(d.index)}, title: d.name}, `device ${d.index}`, el('br'), el('span', {class: 'mono'}, d.uuid || '-'))));
  const rows = model.devices.map((row) => el('tr', {dataset: {device: String(row.index)}},
    el('th', {}, `device ${row.index}`),
    ...model.devices.map((col) => (row.index === col.index
      ? matrixCell(model.ranks.get(row.index), String(row.index), true)
      : matrixCell(model.pairs.get(pairKey(row.index, col.index)), pairKey(row.index, col.index), false)))));
  clear(table);
  table.append(el('thead', {}, head), el('tbody', {}, ...rows));
  renderHealthCulprit(model);
}

function initHealth() {
  $('#health-form').addEventListener('submit', runHealthCheck);
}
