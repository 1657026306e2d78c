// colltest dashboard: plain ES2020, no build step. Talks to colltestd's JSON API (docs/http-api.md)
// and draws with the vendored uPlot. Every piece of data reaches the DOM through textContent or
// attributes, never through innerHTML.
'use strict';

// ---------------------------------------------------------------------------------------------
// Small helpers

const $ = (selector) => document.querySelector(selector);

// el('td', {class: 'x', dataset: {runId: id}}, 'text', childNode, ...): children that are not
// nodes become text nodes, so data is never parsed as markup.
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, '');
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

// Proto3 JSON writes 64-bit integers as strings and leaves out fields at their default value.
function num(value) {
  const n = Number(value ?? 0);
  return Number.isFinite(n) ? n : 0;
}

function fmtNumber(value, digits = 2) {
  const n = num(value);
  if (n === 0) return '0';
  if (Math.abs(n) >= 1000) return n.toFixed(0);
  // Small values (busbw on the cpu backend) keep three significant digits.
  if (Math.abs(n) < 1) return n.toPrecision(3);
  return n.toFixed(digits);
}

// A figure a case never measured (a HANG, ERROR or UNSUPPORTED case has zeros): '-' as in the
// CLI's table, where 0 would read as "infinitely fast".
function fmtMeasured(value) {
  return num(value) > 0 ? fmtNumber(value) : '-';
}

// Whether the case's outputs were compared, as the CLI decides it (client/format/format_table.cc
// Checked): otherwise its zero mismatches would read as "no mismatches".
function outputsChecked(c) {
  const st = statusName(c.status);
  const diff = c.diff || {};
  return st === 'OK' || st === 'WRONG' || num(diff.checked) > 0 || num(diff.mismatches) > 0;
}

function fmtTime(unixMs) {
  const ms = num(unixMs);
  if (!ms) return '-';
  const d = new Date(ms);
  const pad = (x) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
         `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// Enums arrive by name ("VARIANT_LAMPORT_TB"); numbers are accepted too. Absent = value 0.
const ENUMS = {
  VARIANT: ['UNSPECIFIED', 'ONE_STAGE', 'TWO_KERNEL', 'LAMPORT', 'LAMPORT_TB', 'NCCL', 'AUTO',
    'LAMPORT_TWO_SHOT', 'PLUGIN'],
  MODE: ['UNSPECIFIED', 'EAGER', 'GRAPH'],
  DTYPE: ['UNSPECIFIED', 'BF16', 'FP16', 'FP32'],
  CASE_STATUS: ['UNSPECIFIED', 'OK', 'WRONG', 'HANG', 'ERROR', 'UNSUPPORTED'],
  RUN_STATE: ['UNSPECIFIED', 'QUEUED', 'RUNNING', 'DONE', 'CANCELLED', 'FAILED', 'INTERRUPTED'],
  GROUP_STATE: ['UNSPECIFIED', 'SERVING', 'DEGRADED', 'RECOVERING'],
  COMPARE_VERDICT: ['UNSPECIFIED', 'SAME', 'REGRESSION', 'IMPROVEMENT', 'ONLY_A', 'ONLY_B'],
  EPILOGUE: ['UNSPECIFIED', 'NONE', 'FP8_TOKEN', 'FP8_TENSOR', 'NVFP4'],
  FP8_FORMAT: ['UNSPECIFIED', 'E4M3FN', 'E4M3FNUZ'],
  QUANT_RULE: ['UNSPECIFIED', 'SCALE', 'FORMAT', 'SATURATION', 'ROUNDING', 'UNEXPLAINED'],
};

// The short upper-case name of an enum value: enumName('VARIANT', 'VARIANT_LAMPORT') = 'LAMPORT'.
function enumName(kind, value) {
  if (value === undefined || value === null || value === '') return 'UNSPECIFIED';
  if (typeof value === 'number') return ENUMS[kind][value] || String(value);
  const prefix = kind + '_';
  return value.startsWith(prefix) ? value.slice(prefix.length) : value;
}

const variantName = (v) => enumName('VARIANT', v).toLowerCase();

// Kernel plugins (docs/plugins.md). A case that ran one has variant VARIANT_PLUGIN and, in
// `plugin`, the build it ran ({name, version, sha256}); a CaseComparison has the name itself in
// `plugin` and the builds in plugin_a / plugin_b.
const isPluginVariant = (v) => enumName('VARIANT', v) === 'PLUGIN';

function pluginNameOf(p) {
  if (!p) return '';
  return typeof p === 'string' ? p : (p.name || '');
}

// The variant of a case as the CLI names it: "lamport", or "plugin:NAME" for a plugin's case, so
// that two plugins never share a name (a table row, a plot series, a compare row).
function caseVariantName(c) {
  if (!isPluginVariant(c.variant)) return variantName(c.variant);
  const name = pluginNameOf(c.plugin);
  return name ? `plugin:${name}` : 'plugin';
}

// "1.0, sha256 dbe47fcd0c1b": which build of a plugin ran (for titles).
function pluginBuild(p) {
  if (!p || typeof p === 'string') return '';
  return [p.version, p.sha256 && `sha256 ${shortHash(p.sha256)}`].filter(Boolean).join(', ');
}

const shortHash = (sha) => String(sha || '').slice(0, 12);
// UNSPECIFIED means eager and bf16 in the API.
const modeName = (v) => (enumName('MODE', v) === 'UNSPECIFIED' ? 'eager' : enumName('MODE', v).toLowerCase());
const dtypeName = (v) => (enumName('DTYPE', v) === 'UNSPECIFIED' ? 'bf16' : enumName('DTYPE', v).toLowerCase());
const statusName = (v) => enumName('CASE_STATUS', v);
// UNSPECIFIED means none for the epilogue; the fp8 format is then the device's.
const epilogueName = (v) => (enumName('EPILOGUE', v) === 'UNSPECIFIED' ? 'none' : enumName('EPILOGUE', v).toLowerCase());
const fp8FormatName = (v) => (enumName('FP8_FORMAT', v) === 'UNSPECIFIED' ? '' : enumName('FP8_FORMAT', v).toLowerCase());
const quantRuleName = (v) => (enumName('QUANT_RULE', v) === 'UNSPECIFIED' ? '' : enumName('QUANT_RULE', v).toLowerCase());
const runStateName = (v) => enumName('RUN_STATE', v);

const TERMINAL_STATES = new Set(['DONE', 'CANCELLED', 'FAILED', 'INTERRUPTED']);
const BAD_STATUSES = new Set(['WRONG', 'HANG', 'ERROR']);

// ---------------------------------------------------------------------------------------------
// Epilogues and their quantisation results (docs/quantisation.md), named as the CLI's tables do

function quantisingEpilogue(epilogue) {
  return epilogueName(epilogue) !== 'none';
}

// "fp8_token+normed": keep_normed only changes what a quantising epilogue writes, as in the
// server's compare key. Works for a CaseResult and a CaseComparison alike.
function epilogueLabel(c) {
  return epilogueName(c.epilogue) + (c.keep_normed && quantisingEpilogue(c.epilogue) ? '+normed' : '');
}

// The order of the enum, the +normed form after the plain one.
function epilogueRank(label) {
  const [name, normed] = label.split('+');
  return ENUMS.EPILOGUE.indexOf(name.toUpperCase()) * 2 + (normed ? 1 : 0);
}

// Whether some case quantised its output: the tables then have an epilogue column.
function anyQuantising(cases) {
  return cases.some((c) => quantisingEpilogue(c.epilogue));
}

// QuantDiffStats.max_code_distance when a NaN code was got or wanted.
const NAN_CODE_DISTANCE = 4294967295;

function quantChecked(q) {
  return !!q && (num(q.checked_codes) > 0 || num(q.checked_scales) > 0 ||
                 num(q.code_mismatches) > 0 || num(q.scale_mismatches) > 0);
}

function codeDistance(q) {
  return num(q.max_code_distance) === NAN_CODE_DISTANCE ? 'nan' : String(num(q.max_code_distance));
}

// One compact cell: '-' when nothing was quantised, '0' when every code and scale matched, else
// "3 codes (d 1), 1 scale, rounding".
function quantCell(q) {
  if (!quantChecked(q)) return '-';
  const codes = num(q.code_mismatches);
  const scales = num(q.scale_mismatches);
  if (codes === 0 && scales === 0) return '0';
  const parts = [];
  if (codes > 0) parts.push(`${codes} ${codes === 1 ? 'code' : 'codes'} (d ${codeDistance(q)})`);
  if (scales > 0) parts.push(`${scales} ${scales === 1 ? 'scale' : 'scales'}`);
  if (quantRuleName(q.rule)) parts.push(quantRuleName(q.rule));
  return parts.join(', ');
}

// Every figure of the comparison, one a line, for the cell's title.
function quantDetails(q) {
  if (!quantChecked(q)) return '';
  const err = (x) => (num(x) === 0 ? '0' : num(x).toPrecision(3));
  const lines = [
    `codes: ${num(q.checked_codes)} checked, ${num(q.code_mismatches)} outside the tolerance, ` +
      `${num(q.tolerated)} tolerated, max code distance ${codeDistance(q)}, ${num(q.nan_codes)} NaN`,
    `scales: ${num(q.checked_scales)} checked, ${num(q.scale_mismatches)} differ, ` +
      `max relative error ${err(q.max_scale_rel_err)}`,
    `max dequantisation error ${err(q.max_dequant_err)} (the format's own ${err(q.expected_dequant_err)})`,
  ];
  if (quantRuleName(q.rule)) lines.push(`rule: ${quantRuleName(q.rule)}`);
  if (q.first_bad) lines.push(`first bad (call ${num(q.first_bad_call)}): ${q.first_bad}`);
  return lines.join('\n');
}

// The epilogue's cell; its title names the fp8 format the case wrote, where it has one.
function epilogueCell(c) {
  const format = fp8FormatName(c.fp8_format);
  return el('td', {class: 'epilogue-col', title: format ? `fp8 format ${format}` : null}, epilogueLabel(c));
}

// ---------------------------------------------------------------------------------------------
// API access

const TOKEN_KEY = 'colltest.token';

class ApiError extends Error {
  constructor(code, message, httpStatus) {
    super(message);
    this.code = code;
    this.httpStatus = httpStatus;
  }
}

function authHeaders(extra = {}) {
  const headers = {...extra};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  return headers;
}

// The service's error body is {"code": "...", "message": "..."}; anything else (a proxy's HTML
// page) is shown as the HTTP status and the start of the text.
async function errorFromResponse(response) {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    if (body && (body.code || body.message)) {
      return new ApiError(String(body.code || response.status), String(body.message || ''), response.status);
    }
  } catch (_) { /* not JSON: fall through */ }
  return new ApiError(`HTTP ${response.status}`, text.slice(0, 500) || response.statusText, response.status);
}

async function api(path, {method = 'GET', body, signal} = {}) {
  const init = {method, headers: authHeaders(), signal};
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError('UNAVAILABLE', `cannot reach colltestd: ${e.message}`, 0);
  }
  if (!response.ok) throw await errorFromResponse(response);
  return response.json();
}

function query(params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') q.set(key, String(value));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

// ---------------------------------------------------------------------------------------------
// Error box: the service's code and message, verbatim.

function showError(error) {
  if (error && error.name === 'AbortError') return;
  const code = error instanceof ApiError ? error.code : 'ERROR';
  const message = error && error.message ? error.message : String(error);
  $('#error-code').textContent = code;
  $('#error-message').textContent = message;
  $('#error-box').dataset.code = code;
  $('#error-box').hidden = false;
  console.error(`colltest: ${code}: ${message}`);
}

function clearError() {
  $('#error-box').hidden = true;
  $('#error-code').textContent = '';
  $('#error-message').textContent = '';
  delete $('#error-box').dataset.code;
}

// ---------------------------------------------------------------------------------------------
// Page state

const state = {
  devices: null,        // ListDevicesResponse
  live: null,           // {run, progress, controller, streaming} of the sweep this page started
  shown: null,          // the run in the results view (the live one or a fetched RunResult)
  pollTimer: null,      // refreshes a shown run that someone else is running
  history: {tokens: [''], page: 0, nextToken: ''},
  selected: new Set(),  // run ids ticked in the history
};

// ---------------------------------------------------------------------------------------------
// Header and groups

async function loadDevices() {
  try {
    const d = await api('api/v1/devices');
    state.devices = d;
    renderHeader(d);
    renderVariantChoices(d);
    renderKernelPlugins(d);
    renderGroups(d);
  } catch (e) {
    showError(e);
  }
}

function renderHeader(d) {
  const machine = d.machine || {};
  $('#server-backend').textContent = d.backend || '-';
  $('#server-devices').textContent = String((d.devices || []).length);
  $('#server-version').textContent = d.version || machine.colltest_version || '-';
  $('#server-host').textContent = machine.hostname || '-';
  const names = [...new Set((d.devices || []).map((x) => x.name).filter(Boolean))];
  $('#server-devices').title = names.join(', ');
  const world = $('#f-world');
  if (d.max_world_size) world.max = String(d.max_world_size);
}

// Variant checkboxes come from the server (what its backend can run); the choice survives a
// refresh of the list.
function renderVariantChoices(d) {
  const box = $('#f-variants');
  const before = new Set([...box.querySelectorAll('input:checked')].map((x) => x.value));
  const first = box.children.length === 0;
  clear(box);
  for (const v of d.variants || []) {
    const value = typeof v === 'number' ? `VARIANT_${ENUMS.VARIANT[v]}` : v;
    const checked = first ? variantName(value) !== 'auto' : before.has(value);
    box.append(el('label', {},
      el('input', {type: 'checkbox', name: 'variant', value, checked}), ' ', variantName(value)));
  }
  // Each loaded kernel plugin is one more variant of the sweep (SweepSpec.plugins), never ticked
  // until asked for.
  for (const p of loadedPlugins(d)) {
    box.append(el('label', {class: 'plugin-choice', title: `${p.path || ''} (${pluginBuild(p)})`},
      el('input', {type: 'checkbox', name: 'plugin', value: p.name, checked: before.has(p.name)}),
      ' ', `plugin:${p.name}`));
  }
  const filter = $('#h-variant');
  if (filter.options.length <= 1) {
    for (const v of d.variants || []) {
      const value = typeof v === 'number' ? `VARIANT_${ENUMS.VARIANT[v]}` : v;
      filter.append(el('option', {value}, variantName(value)));
    }
  }
}

function loadedPlugins(d) {
  return (d.kernel_plugins || []).filter((p) => p.loaded && p.name);
}

// Every plugin colltestd was given, loaded or refused with the reason (ListDevices kernel_plugins).
function renderKernelPlugins(d) {
  const plugins = d.kernel_plugins || [];
  const body = $('#plugins-table tbody');
  clear(body);
  for (const p of plugins) {
    // A refused plugin whose struct could not be read has no name: its file names it.
    const file = String(p.path || '').split('/').pop();
    const variant = p.variant || (p.name ? `plugin:${p.name}` : file);
    const loaded = !!p.loaded;
    body.append(el('tr', {class: loaded ? '' : 'bad', dataset: {name: p.name || '', loaded: String(loaded)}},
      el('td', {class: 'mono', title: p.path || ''}, variant),
      el('td', {}, p.version || '-'),
      el('td', {class: 'mono', title: p.sha256 || ''}, shortHash(p.sha256) || '-'),
      el('td', {class: loaded ? 'plugin-loaded' : 'message plugin-refused'},
        loaded ? 'loaded' : `refused: ${p.refused || 'no reason given'}`)));
  }
  $('#plugins-empty').hidden = plugins.length > 0;
  $('#plugins-table').hidden = plugins.length === 0;
}

// The last HANG on the group: its verdict names the culprit rank; the culprit's device and when.
function lastHangCell(g) {
  if (!g.last_hang) return el('td', {class: 'message muted', dataset: {lastHang: ''}}, 'none');
  const device = num(g.last_hang_device);
  const who = device >= 0 ? `device ${device}: ` : '';
  return el('td', {class: 'message hang', dataset: {lastHang: String(device)}},
    `${who}${g.last_hang} (${fmtTime(g.last_hang_unix_ms)})`);
}

function renderGroups(d) {
  const body = $('#groups-table tbody');
  clear(body);
  const groups = d.groups || [];
  for (const g of groups) {
    const st = enumName('GROUP_STATE', g.state);
    body.append(el('tr', {class: `group-${st.toLowerCase()}`, dataset: {state: st, devices: (g.devices || []).join(',')}},
      el('td', {}, (g.devices || []).join(',')),
      el('td', {}, el('span', {class: `badge state-${st.toLowerCase()}`}, st)),
      el('td', {}, fmtTime(g.since_unix_ms)),
      el('td', {class: 'num'}, String(num(g.recoveries))),
      el('td', {class: 'num'}, String(num(g.respawns))),
      el('td', {class: 'num'}, g.last_recovery_ms ? fmtNumber(g.last_recovery_ms, 0) : '-'),
      el('td', {class: 'message'}, g.message || ''),
      lastHangCell(g)));
  }
  $('#groups-empty').hidden = groups.length > 0;
}

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
  } catch (e) {
    showError(e);
  }
}

async function runHealthCheck(event) {
  event.preventDefault();
  const button = $('#health-run');
  const out = $('#health-result');
  button.disabled = true;
  out.hidden = false;
  out.className = 'verdict';
  out.textContent = 'checking...';
  try {
    const r = await api('api/v1/health', {method: 'POST', body: {pairs: $('#health-pairs').checked}});
    const st = statusName(r.status);
    out.className = `verdict ${st === 'OK' ? 'good' : 'bad'}`;
    out.dataset.status = st;
    out.textContent = `${st}: ${r.message || ''} (${fmtNumber(r.wall_ms, 0)} ms)`;
  } catch (e) {
    out.hidden = true;
    showError(e);
  } finally {
    button.disabled = false;
    loadDevices();
    loadHealthRuns();
  }
}

function runLink(runId) {
  return el('a', {href: `#run=${encodeURIComponent(runId)}`, class: 'mono'}, runId);
}

// ---------------------------------------------------------------------------------------------
// The sweep form

// A count ("64", "8K"; K M G T powers of 1024, optionally followed by i, iB or B).
function parseCount(text, field) {
  const m = /^(\d+)(?:([kmgtKMGT])(?:i|iB|B)?)?$/.exec(text);
  if (!m) throw new ApiError('INVALID_ARGUMENT', `${field}: '${text}' is not a count (e.g. 64 or 8K)`);
  const scale = {'': 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40}[(m[2] || '').toLowerCase()];
  const value = Number(m[1]) * scale;
  if (value > 4294967295) throw new ApiError('INVALID_ARGUMENT', `${field}: '${text}' is ${value}, the limit is 4294967295`);
  return value;
}

// The form's list fields, sent as typed: the server expands them in the CLI's grammar
// (docs/input.md: "1,8,64", "8..128:x4", "1:1024:x4"), so the page has no grammar of its own.
const LIST_FIELDS = ['m', 'n'];

// Shows (or, with '', hides) the server's message about a field next to it.
function showFieldError(name, message) {
  const box = $(`#f-${name}-error`);
  box.textContent = message;
  box.hidden = message === '';
  $(`#f-${name}`).setAttribute('aria-invalid', message === '' ? 'false' : 'true');
}

// {m: [...], n: [...]}, or null when the server refused a field (its message is then shown next
// to the field). Any other failure (the server out of reach) is thrown.
async function listsFromForm() {
  const replies = await Promise.allSettled(LIST_FIELDS.map((name) =>
    api('api/v1/sizes:parse', {method: 'POST', body: {[name]: $(`#f-${name}`).value}})));
  const lists = {};
  let refused = false;
  replies.forEach((reply, i) => {
    const name = LIST_FIELDS[i];
    if (reply.status === 'fulfilled') {
      lists[name] = reply.value[name];
      showFieldError(name, '');
    } else if (reply.reason instanceof ApiError && reply.reason.code === 'INVALID_ARGUMENT') {
      showFieldError(name, reply.reason.message);
      refused = true;
    } else {
      throw reply.reason;
    }
  });
  return refused ? null : lists;
}

function optionalCount(selector) {
  const text = $(selector).value.trim();
  return text === '' ? undefined : parseCount(text, $(selector).name);
}

// The form as a SweepSpec (proto field names; defaults left out), or null when a list field was
// refused (shown next to it).
async function specFromForm() {
  const lists = await listsFromForm();
  if (!lists) return null;
  const checked = (name) => [...document.querySelectorAll(`#sweep-form input[name="${name}"]:checked`)].map((x) => x.value);
  const spec = {
    world_size: optionalCount('#f-world'),
    m: lists.m,
    n: lists.n,
    dtype: $('#f-dtype').value,
    variants: checked('variant'),
    plugins: checked('plugin'),
    modes: checked('mode'),
    pattern: $('#f-pattern').value,
    tolerance: $('#f-tolerance').value,
    epilogues: checked('epilogue'),
    keep_normed: $('#f-keep-normed').checked || undefined,
    warmup: optionalCount('#f-warmup'),
    iters: optionalCount('#f-iters'),
    stress_calls: optionalCount('#f-stress'),
    label: $('#f-label').value.trim() || undefined,
  };
  if (spec.plugins.length === 0) delete spec.plugins;
  for (const key of Object.keys(spec)) if (spec[key] === undefined) delete spec[key];
  return spec;
}

async function submitSweep(event) {
  event.preventDefault();
  clearError();
  if (state.live && state.live.streaming) {
    showError(new ApiError('FAILED_PRECONDITION', 'this page is already following a sweep; wait for it or cancel it'));
    return;
  }
  let spec = null;
  $('#sweep-submit').disabled = true;
  try {
    spec = await specFromForm();
  } catch (e) {
    showError(e);
  }
  if (!spec) {
    $('#sweep-submit').disabled = false;
    return;
  }
  const live = {
    run: {run_id: '', state: 'RUN_STATE_QUEUED', spec, cases: []},
    progress: {done: 0, total: 0, queue_position: 0},
    controller: new AbortController(),
    streaming: true,
  };
  try {
    await streamSweep(live, spec, () => {
      // Accepted: follow it in the results view. A refused request stays on the form.
      state.live = live;
      showRun(live.run);
      location.hash = '#results';
    });
  } catch (e) {
    showError(e);
  } finally {
    live.streaming = false;
    $('#sweep-submit').disabled = false;
    if (state.live === live) await finishLiveRun(live);
  }
}

// POST /api/v1/runs answers NDJSON: one SweepEvent per line, or {"error": {...}} as the last line
// when the run fails after the stream started.
async function streamSweep(live, spec, onAccepted) {
  const response = await fetch('api/v1/runs', {
    method: 'POST',
    headers: authHeaders({'Content-Type': 'application/json', Accept: 'application/x-ndjson'}),
    body: JSON.stringify({spec}),
    signal: live.controller.signal,
  });
  if (!response.ok) throw await errorFromResponse(response);
  onAccepted();
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, {stream: true});
    let newline;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (line) onSweepLine(live, line);
    }
  }
  buffered += decoder.decode();
  if (buffered.trim()) onSweepLine(live, buffered.trim());
}

function onSweepLine(live, line) {
  let event;
  try {
    event = JSON.parse(line);
  } catch (_) {
    throw new ApiError('INTERNAL', `unreadable line in the sweep stream: ${line.slice(0, 200)}`);
  }
  if (event.error) {
    throw new ApiError(String(event.error.code || 'UNKNOWN'), String(event.error.message || ''));
  }
  if (event.run_id && !live.run.run_id) {
    live.run.run_id = event.run_id;
    // The address names the run (a reload opens it from the history) without a hashchange.
    if (state.shown === live.run) history.replaceState(null, '', `#run=${encodeURIComponent(event.run_id)}`);
  }
  if (event.progress) {
    live.progress = {
      done: num(event.progress.done),
      total: num(event.progress.total),
      queue_position: num(event.progress.queue_position),
    };
    if (event.progress.state) live.run.state = event.progress.state;
  }
  if (event.result) {
    live.run.cases.push(event.result);
    if (live.run.state !== 'RUN_STATE_DONE') live.run.state = 'RUN_STATE_RUNNING';
  }
  if (event.summary) {
    // The summary is the whole run; keep the same object so that the view follows it.
    Object.assign(live.run, event.summary);
    live.run.cases = event.summary.cases || [];
    live.progress.done = live.run.cases.length;
    live.progress.total = Math.max(live.progress.total, live.progress.done);
  }
  if (state.shown === live.run) scheduleRender();
}

// The stream ended (summary, error, cancel or lost connection): take the run's final record.
async function finishLiveRun(live) {
  if (live.run.run_id && !TERMINAL_STATES.has(runStateName(live.run.state))) {
    try {
      const final = await api(`api/v1/runs/${encodeURIComponent(live.run.run_id)}`);
      Object.assign(live.run, final);
      live.run.cases = final.cases || [];
    } catch (e) {
      showError(e);
    }
  }
  if (state.shown === live.run) scheduleRender();
  loadDevices();
  loadHealthRuns();
}

async function cancelShownRun() {
  const run = state.shown;
  if (!run || !run.run_id) return;
  $('#cancel-run').disabled = true;
  try {
    await api(`api/v1/runs/${encodeURIComponent(run.run_id)}/cancel`, {method: 'POST', body: {}});
  } catch (e) {
    showError(e);
  } finally {
    $('#cancel-run').disabled = false;
  }
  if (!state.live || state.live.run !== run) refreshShownRun();
}

// ---------------------------------------------------------------------------------------------
// The results view

function showRun(run) {
  state.shown = run;
  clearTimeout(state.pollTimer);
  renderRun();
}

let renderPending = false;

// Stream events can come fast: render at most once a frame.
function scheduleRender() {
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(() => {
    renderPending = false;
    renderRun();
  });
}

function renderRun() {
  const run = state.shown;
  $('#run-empty').hidden = !!run;
  $('#plots-panel').hidden = !run || !(run.cases || []).length;
  renderSharedGpuNote(run);
  if (!run) return;
  renderProgress(run);
  renderRunMeta(run);
  renderSelectors(run.cases || []);
  renderCasesTable(run.cases || []);
  renderPlots(run.cases || []);
}

function renderProgress(run) {
  const live = state.live && state.live.run === run ? state.live : null;
  const st = runStateName(run.state);
  const cases = (run.cases || []).length;
  const done = live ? Math.max(live.progress.done, cases) : cases;
  const total = live ? Math.max(live.progress.total, done) : cases;
  const box = $('#run-progress');
  box.dataset.state = st;
  box.dataset.done = String(done);
  box.dataset.total = String(total);
  $('#run-id').textContent = run.run_id || '(starting)';
  const bar = $('#run-progress-bar');
  bar.max = Math.max(total, 1);
  bar.value = done;
  let text = `${st.toLowerCase()}: ${done} / ${total} cases`;
  if (live && st === 'QUEUED' && live.progress.queue_position) text += ` (${live.progress.queue_position} runs ahead)`;
  $('#run-progress-text').textContent = text;
  $('#cancel-run').hidden = !(run.run_id && (st === 'QUEUED' || st === 'RUNNING'));
}

// colltestd --ranks-per-gpu: the most ranks of the run's group on one GPU (absent or 0: one, a run
// on separate GPUs). Shared, the timings are kernel overhead and the busbw no link figure;
// time-sliced, they mean nothing.
function ranksPerGpu(run) {
  return Math.max(1, num(run && run.ranks_per_gpu));
}

function sharedGpu(run) {
  return !!run && (ranksPerGpu(run) > 1 || !!run.time_sliced);
}

function sharedGpuNote(run) {
  if (!sharedGpu(run)) return '';
  const ranks = ranksPerGpu(run);
  if (run.time_sliced) {
    return `ranks share a time-sliced GPU (${ranks} per GPU): timings are meaningless (time-sliced), ` +
      'not a link measurement; busbw is not a link figure';
  }
  return `ranks share a GPU (${ranks} per GPU): times are kernel overhead, not a link measurement; ` +
    'busbw is not a link figure';
}

// The note over the run, and the busbw column's title: said wherever the figures are shown.
function renderSharedGpuNote(run) {
  const note = $('#shared-gpu-note');
  const text = sharedGpuNote(run);
  note.textContent = text;
  note.hidden = !text;
  note.dataset.ranksPerGpu = String(ranksPerGpu(run));
  note.dataset.timeSliced = String(!!(run && run.time_sliced));
  $('#busbw-head').textContent = text ? 'busbw GB/s (not a link)' : 'busbw GB/s';
}

function renderRunMeta(run) {
  const meta = $('#run-meta');
  clear(meta);
  const spec = run.spec || {};
  const counts = {};
  for (const c of run.cases || []) counts[statusName(c.status)] = (counts[statusName(c.status)] || 0) + 1;
  const rows = [
    ['label', spec.label || ''],
    ['backend', run.backend || (state.devices && state.devices.backend) || ''],
    ['host', (run.machine && run.machine.hostname) || ''],
    ['owner', run.owner || ''],
    ['created', fmtTime(run.created_unix_ms)],
    ['finished', fmtTime(run.finished_unix_ms)],
    ['statuses', Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')],
    ['plugins', runPlugins(run)],
    ['ranks per GPU', sharedGpu(run) ? `${ranksPerGpu(run)}${run.time_sliced ? ', time-sliced' : ''}` : ''],
    ['message', run.message || ''],
  ];
  for (const [key, value] of rows) {
    if (!value || value === '-') continue;
    meta.append(el('div', {}, el('dt', {}, key), el('dd', {}, value)));
  }
}

// "plugin:oneshot_norm 1.0 (sha256 dbe47fcd0c1b)": the plugins a run asked for, with the build
// its cases ran where a case says.
function runPlugins(run) {
  const builds = new Map();
  for (const c of run.cases || []) {
    if (isPluginVariant(c.variant) && c.plugin && c.plugin.name) builds.set(c.plugin.name, c.plugin);
  }
  const names = [...new Set([...((run.spec && run.spec.plugins) || []), ...builds.keys()])];
  return names.map((name) => {
    const p = builds.get(name);
    return [`plugin:${name}`, p && p.version, p && p.sha256 && `(sha256 ${shortHash(p.sha256)})`].filter(Boolean).join(' ');
  }).join(', ');
}

// n, dtype and world: the plots show one combination at a time.
const plotChoice = {n: null, dtype: null, world: null};

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
}

function renderCasesTable(cases) {
  const body = $('#results-table tbody');
  clear(body);
  const notLink = sharedGpu(state.shown);
  // The epilogue and quant columns once some case quantised, as in the CLI's table.
  $('#results-table').classList.toggle('with-epilogue', anyQuantising(cases));
  const sorted = [...cases].sort((a, b) => num(a.index) - num(b.index));
  for (const c of sorted) {
    const st = statusName(c.status);
    const t = c.timing || {};
    const diff = c.diff || {};
    const plugin = isPluginVariant(c.variant);
    const name = caseVariantName(c);
    const variant = name + (!plugin && c.resolved_variant && variantName(c.resolved_variant) !== variantName(c.variant)
      ? ` (${variantName(c.resolved_variant)})` : '');
    const cls = BAD_STATUSES.has(st) ? 'bad' : (st === 'UNSUPPORTED' ? 'unsupported' : '');
    body.append(el('tr', {class: cls, dataset: {index: String(num(c.index)), status: st, epilogue: epilogueLabel(c), variant: name}},
      el('td', {title: plugin ? pluginBuild(c.plugin) || null : null}, variant),
      el('td', {}, modeName(c.mode)),
      el('td', {class: 'num'}, String(num(c.world_size))),
      el('td', {class: 'num'}, String(num(c.m))),
      el('td', {class: 'num'}, String(num(c.n))),
      el('td', {}, dtypeName(c.dtype)),
      epilogueCell(c),
      el('td', {}, el('span', {class: `badge status-${st.toLowerCase()}`}, st)),
      el('td', {class: 'num'}, fmtMeasured(t.median_us)),
      el('td', {class: 'num'}, fmtMeasured(t.p10_us)),
      el('td', {class: 'num'}, fmtMeasured(t.p90_us)),
      el('td', {class: notLink ? 'num not-link' : 'num', title: notLink ? 'ranks shared a GPU: not a link figure' : null},
        fmtMeasured(c.busbw_gbps)),
      el('td', {class: 'num'}, outputsChecked(c) ? String(num(diff.mismatches)) : '-'),
      el('td', {class: 'num'}, outputsChecked(c) ? String(num(diff.max_ulp)) : '-'),
      el('td', {class: 'epilogue-col', title: quantDetails(c.quant) || null}, quantCell(c.quant)),
      el('td', {class: 'message'}, [c.message, diff.first_bad].filter(Boolean).join('; '))));
  }
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
    if (i === 0) return `${s.variant} fastest up to m=${s.to}`;
    if (i === mine.length - 1) return `${s.variant} from m=${s.from}`;
    return s.from === s.to ? `${s.variant} at m=${s.from}` : `${s.variant} from m=${s.from} to m=${s.to}`;
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

// A uPlot plugin that draws vertical markers (crossovers) and an optional horizontal line.
function markersPlugin(markers, horizontal) {
  return {
    hooks: {
      draw: [(u) => {
        const ctx = u.ctx;
        const {left, top, width, height} = u.bbox;
        const ratio = uPlot.pxRatio || 1;
        ctx.save();
        ctx.lineWidth = ratio;
        ctx.font = `${11 * ratio}px sans-serif`;
        if (horizontal !== undefined) {
          const y = u.valToPos(horizontal, 'y', true);
          if (y >= top && y <= top + height) {
            ctx.strokeStyle = '#999';
            ctx.setLineDash([4 * ratio, 4 * ratio]);
            ctx.beginPath();
            ctx.moveTo(left, y);
            ctx.lineTo(left + width, y);
            ctx.stroke();
          }
        }
        markers.forEach((mk, k) => {
          const x = u.valToPos(mk.x, 'x', true);
          if (x < left || x > left + width) return;
          ctx.strokeStyle = mk.color;
          ctx.fillStyle = mk.color;
          ctx.setLineDash([3 * ratio, 3 * ratio]);
          ctx.beginPath();
          ctx.moveTo(x, top);
          ctx.lineTo(x, top + height);
          ctx.stroke();
          ctx.fillText(mk.label, x + 3 * ratio, top + (12 + 12 * (k % 3)) * ratio);
        });
        ctx.restore();
      }],
    },
  };
}

const plots = {};  // id -> uPlot instance

// Draws one plot and records what it drew on the element (data-series-count, data-series-names,
// names comma-separated) for tests and for anyone inspecting the page.
function drawPlot(id, {title, xs, series, values, yLabel, yLog, markers = [], horizontal}) {
  const host = document.getElementById(id);
  if (plots[id]) {
    plots[id].destroy();
    delete plots[id];
  }
  clear(host);
  const drawn = series.filter((_, k) => values[k].some((v) => v !== null));
  host.dataset.seriesCount = String(drawn.length);
  host.dataset.seriesNames = drawn.map((s) => s.name).join(',');
  host.dataset.title = title;
  if (drawn.length === 0 || xs.length === 0) {
    host.append(el('p', {class: 'muted'}, `${title}: nothing to plot (no passing case, or one variant only)`));
    return;
  }
  const opts = {
    title,
    width: Math.max(320, host.clientWidth || 640),
    height: 280,
    scales: {
      x: {time: false, distr: 3, log: 2},
      y: yLog ? {distr: 3, log: 10} : {},
    },
    axes: [
      // Log axes leave some ticks unlabelled (null); the others are whole row counts.
      {label: 'm (rows)', values: (u, ticks) => ticks.map((v) => (v === null ? null : String(Math.round(v))))},
      {label: yLabel, size: 60},
    ],
    series: [{label: 'm'}, ...drawn.map((s) => ({label: s.name, points: {show: true, size: 5}, spanGaps: true, ...seriesStyle(s)}))],
    plugins: [markersPlugin(markers, horizontal)],
  };
  const data = [xs, ...series.map((s, k) => values[k]).filter((v) => v.some((x) => x !== null))];
  plots[id] = new uPlot(opts, data, host);
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
  const markers = segments.filter((s, i) => i > 0 && segments[i - 1].group === s.group)
    .map((s) => ({x: s.from, label: `${s.group ? s.group + ' ' : ''}${s.variant} fastest`, color: variantColor(s.variant)}));
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
  if (state.shown) renderPlots(state.shown.cases || []);
}

// ---------------------------------------------------------------------------------------------
// Opening a run from the history (or a reload of #run=ID)

async function openRun(runId) {
  if (state.live && state.live.run.run_id === runId) {
    showRun(state.live.run);
    return;
  }
  try {
    const run = await api(`api/v1/runs/${encodeURIComponent(runId)}`);
    showRun(run);
    pollIfActive(run);
  } catch (e) {
    showError(e);
  }
}

// A run that someone else is running: follow it by polling while it is shown.
function pollIfActive(run) {
  clearTimeout(state.pollTimer);
  state.pollTimer = null;
  if (TERMINAL_STATES.has(runStateName(run.state))) return;
  state.pollTimer = setTimeout(refreshShownRun, 2000);
}

async function refreshShownRun() {
  const run = state.shown;
  if (!run || !run.run_id || (state.live && state.live.run === run)) return;
  if (location.hash !== `#run=${encodeURIComponent(run.run_id)}`) return;
  try {
    const fresh = await api(`api/v1/runs/${encodeURIComponent(run.run_id)}`);
    showRun(fresh);
    pollIfActive(fresh);
  } catch (e) {
    showError(e);
  }
}

// ---------------------------------------------------------------------------------------------
// History

function runIsBad(r) {
  const st = runStateName(r.state);
  return num(r.failed) > 0 || st === 'CANCELLED' || st === 'FAILED' || st === 'INTERRUPTED';
}

function historyFilters() {
  const since = $('#h-since').value;
  return {
    label: $('#h-label').value.trim(),
    state: $('#h-state').value,
    variant: $('#h-variant').value,
    since_unix_ms: since ? String(new Date(since).getTime()) : '',
  };
}

async function loadHistory() {
  const h = state.history;
  try {
    const reply = await api(`api/v1/runs${query({...historyFilters(), limit: 20, page_token: h.tokens[h.page]})}`);
    h.nextToken = reply.next_page_token || '';
    renderHistory(reply.runs || []);
  } catch (e) {
    showError(e);
  }
}

function renderHistory(runs) {
  const body = $('#history-table tbody');
  clear(body);
  for (const r of runs) {
    const box = el('input', {type: 'checkbox', class: 'pick', 'aria-label': `select ${r.run_id}`,
      checked: state.selected.has(r.run_id), dataset: {runId: r.run_id, created: String(num(r.created_unix_ms))}});
    box.addEventListener('change', () => {
      if (box.checked) state.selected.add(r.run_id); else state.selected.delete(r.run_id);
      updateCompareButtons();
    });
    const baseline = el('button', {type: 'button', class: 'small set-baseline',
      disabled: runStateName(r.state) !== 'DONE', title: 'make this run the baseline of its machine'}, 'Set as baseline');
    baseline.addEventListener('click', () => setBaseline(r.run_id));
    body.append(el('tr', {class: runIsBad(r) ? 'bad' : '', dataset: {runId: r.run_id, state: runStateName(r.state)}},
      el('td', {}, box),
      el('td', {}, runLink(r.run_id)),
      el('td', {}, fmtTime(r.created_unix_ms)),
      el('td', {}, runStateName(r.state)),
      el('td', {}, r.label || ''),
      el('td', {class: 'num'}, String(num(r.cases))),
      el('td', {class: 'num'}, String(num(r.ok))),
      el('td', {class: 'num'}, String(num(r.failed))),
      el('td', {}, (r.variants || []).map(variantName).join(', ')),
      el('td', {}, r.owner || ''),
      el('td', {}, r.hostname || r.backend || ''),
      el('td', {}, baseline)));
  }
  const h = state.history;
  $('#history-empty').hidden = runs.length > 0;
  $('#history-prev').disabled = h.page === 0;
  $('#history-next').disabled = !h.nextToken;
  $('#history-page').textContent = `page ${h.page + 1}`;
  updateCompareButtons();
}

function applyHistoryFilters(event) {
  event.preventDefault();
  state.history = {tokens: [''], page: 0, nextToken: ''};
  loadHistory();
}

function historyPage(step) {
  const h = state.history;
  if (step > 0) {
    if (!h.nextToken) return;
    h.tokens[h.page + 1] = h.nextToken;
    h.page += 1;
  } else if (h.page > 0) {
    h.page -= 1;
  }
  loadHistory();
}

function updateCompareButtons() {
  $('#compare-runs').disabled = state.selected.size !== 2;
  $('#compare-baseline').disabled = state.selected.size !== 1;
}

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

async function runCompare(params) {
  clearError();
  try {
    const reply = await api(`api/v1/compare${query(params)}`);
    renderCompare(reply);
  } catch (e) {
    showError(e);
  }
}

function renderCompare(c) {
  $('#compare-panel').hidden = false;
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
  const body = $('#compare-table tbody');
  clear(body);
  // The epilogue is part of the server's matching key: a column once some case quantised.
  $('#compare-table').classList.toggle('with-epilogue', anyQuantising(c.cases || []));
  for (const k of c.cases || []) {
    const verdict = enumName('COMPARE_VERDICT', k.verdict);
    const variant = caseVariantName(k);
    body.append(el('tr', {class: `verdict-${verdict.toLowerCase()}`, dataset: {verdict, epilogue: epilogueLabel(k), variant}},
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
      el('td', {class: 'message'}, k.reason || '')));
  }
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

async function setBaseline(runId) {
  clearError();
  try {
    const b = await api('api/v1/baselines', {method: 'POST', body: {run_id: runId, name: $('#baseline-name').value.trim()}});
    loadBaselines();
    console.info(`colltest: ${b.run_id} is baseline ${b.name} of ${b.hostname || b.machine_key}`);
  } catch (e) {
    showError(e);
  }
}

async function loadBaselines() {
  try {
    const reply = await api('api/v1/baselines');
    const body = $('#baselines-table tbody');
    clear(body);
    const list = reply.baselines || [];
    for (const b of list) {
      body.append(el('tr', {dataset: {runId: b.run_id, name: b.name}},
        el('td', {}, b.name || 'default'),
        el('td', {}, b.hostname || b.machine_key || ''),
        el('td', {}, runLink(b.run_id)),
        el('td', {}, fmtTime(b.set_unix_ms)),
        el('td', {}, b.set_by || '')));
    }
    $('#baselines-empty').hidden = list.length > 0;
  } catch (e) {
    showError(e);
  }
}

// ---------------------------------------------------------------------------------------------
// Views: #sweep, #results, #history, #run=ID

function route() {
  const hash = location.hash || '#sweep';
  let view = 'sweep';
  if (hash.startsWith('#run=')) {
    view = 'results';
    openRun(decodeURIComponent(hash.slice(5)));
  } else if (hash === '#results') {
    view = 'results';
    if (!state.shown && state.live) showRun(state.live.run);
    renderRun();
  } else if (hash === '#history') {
    view = 'history';
    loadHistory();
    loadBaselines();
  } else {
    loadDevices();
    loadHealthRuns();
  }
  for (const section of document.querySelectorAll('main > .view')) {
    section.hidden = section.dataset.view !== view;
  }
  for (const link of document.querySelectorAll('#views-nav a')) {
    link.classList.toggle('active', link.id === `nav-${view}`);
  }
  document.body.dataset.view = view;
  // Plots drawn while hidden had no width: draw them again now that they are visible.
  if (view === 'results' && state.shown) renderPlots(state.shown.cases || []);
}

function saveToken(event) {
  event.preventDefault();
  const token = $('#token-input').value.trim();
  if (token) sessionStorage.setItem(TOKEN_KEY, token); else sessionStorage.removeItem(TOKEN_KEY);
  clearError();
  loadDevices();
  route();
}

function clearToken() {
  $('#token-input').value = '';
  sessionStorage.removeItem(TOKEN_KEY);
  loadDevices();
}

let resizeTimer = null;

function init() {
  $('#token-input').value = sessionStorage.getItem(TOKEN_KEY) || '';
  $('#token-form').addEventListener('submit', saveToken);
  $('#token-clear').addEventListener('click', clearToken);
  $('#error-dismiss').addEventListener('click', clearError);
  $('#sweep-form').addEventListener('submit', submitSweep);
  $('#groups-refresh').addEventListener('click', () => { loadDevices(); loadHealthRuns(); });
  $('#health-form').addEventListener('submit', runHealthCheck);
  $('#cancel-run').addEventListener('click', cancelShownRun);
  for (const id of ['#sel-n', '#sel-dtype', '#sel-world']) $(id).addEventListener('change', onSelectorChange);
  $('#history-filters').addEventListener('submit', applyHistoryFilters);
  $('#history-prev').addEventListener('click', () => historyPage(-1));
  $('#history-next').addEventListener('click', () => historyPage(1));
  $('#compare-runs').addEventListener('click', compareSelected);
  $('#compare-baseline').addEventListener('click', compareWithBaseline);
  window.addEventListener('hashchange', route);
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { if (state.shown && !$('#view-results').hidden) renderPlots(state.shown.cases || []); }, 200);
  });
  // Leaving the page ends the stream, and a sweep ends with its stream (docs/http-api.md).
  window.addEventListener('beforeunload', (event) => {
    if (state.live && state.live.streaming) {
      event.preventDefault();
      event.returnValue = '';
    }
  });
  if (!location.hash.startsWith('#sweep') && location.hash) loadDevices();
  route();
}

init();
