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
    renderHealthMatrix();
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
  renderEta(live && live.streaming && st === 'RUNNING' ? run.cases || [] : [], total - done);
}

// "340 ms", "1.2 s", "12 s", "3 min 20 s", "1 h 5 min".
function fmtDuration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 9950) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

// The time a streaming sweep has left: the cases still to run times the mean wall time of those
// that finished (CaseResult.wall_ms, measured by the server). Hidden until a case has finished.
function renderEta(finished, remaining) {
  const box = $('#run-eta');
  const walls = finished.map((c) => num(c.wall_ms)).filter((w) => w > 0);
  if (walls.length === 0 || remaining <= 0) {
    box.hidden = true;
    box.textContent = '';
    box.dataset.etaMs = '';
    return;
  }
  const mean = walls.reduce((a, b) => a + b, 0) / walls.length;
  const eta = mean * remaining;
  box.hidden = false;
  box.dataset.etaMs = eta.toFixed(1);
  box.dataset.meanMs = mean.toFixed(3);
  box.dataset.measured = String(walls.length);
  box.dataset.remaining = String(remaining);
  box.textContent = `about ${fmtDuration(eta)} left: ${remaining} cases x ${fmtDuration(mean)} ` +
    `(the mean wall time of ${walls.length} finished)`;
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
      el('td', {class: 'message'}, [c.message, diff.first_bad].filter(Boolean).join('; ')),
      el('td', {}, trendLink(state.shown, c))));
  }
}

// The case across the runs of its machine (the trend view); none before the run has an id.
function trendLink(run, c) {
  if (!run || !run.run_id) return '';
  return el('a', {class: 'trend-link', href: trendHash(run.run_id, num(c.index)),
    title: 'this case\'s median across the runs of this machine'}, 'trend');
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
      ...specCells(r.spec),
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

// A list of sizes in little room: "64"; "1, 8, 64"; "1–4096 (13)" (smallest, largest, how many).
function fmtSizes(values) {
  const sorted = [...new Set((values || []).map(num))].sort((a, b) => a - b);
  if (sorted.length === 0) return '-';
  if (sorted.length <= 3) return sorted.join(', ');
  return `${sorted[0]}\u2013${sorted[sorted.length - 1]} (${sorted.length})`;
}

// Every value of a list for a title, the first 64 of a longer one.
function listTitle(values) {
  const list = (values || []).map(num);
  return list.slice(0, 64).join(', ') + (list.length > 64 ? `, ... (${list.length})` : '');
}

// The world, m, n and dtype cells of a history row, from the run's spec as recorded (RunSummary
// .spec); '-' where the server did not send it. Each cell's title lists every value.
function specCells(spec) {
  const cell = (cls, text, title) => el('td', {class: `num ${cls}`, title: title || null}, text);
  if (!spec) return ['h-world', 'h-m', 'h-n', 'h-dtype'].map((cls) => cell(cls, '-'));
  const devices = (spec.devices || []).map(num);
  return [
    cell('h-world', String(num(spec.world_size) || devices.length || '-'),
      devices.length ? `devices ${devices.join(', ')}` : ''),
    cell('h-m', fmtSizes(spec.m), listTitle(spec.m)),
    cell('h-n', fmtSizes(spec.n), listTitle(spec.n)),
    el('td', {class: 'h-dtype'}, dtypeName(spec.dtype)),
  ];
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
// Views: #sweep, #results, #history, #run=ID, #trend=RUN_ID&case=INDEX

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
  } else if (hash.startsWith('#trend')) {
    view = 'trend';
    openTrend(new URLSearchParams(hash.slice(hash.indexOf('=') < 0 ? hash.length : 1)));
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
  redrawPlots(view);
}

// The plots of the view shown, drawn again at the page's width.
function redrawPlots(view = document.body.dataset.view) {
  if (view === 'results' && state.shown) renderPlots(state.shown.cases || []);
  if (view === 'trend') redrawTrend();
  if (view === 'history') redrawComparePlot();
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
  $('#cancel-run').addEventListener('click', cancelShownRun);
  initPlots();
  initHealth();
  initCompare();
  initTrend();
  $('#history-filters').addEventListener('submit', applyHistoryFilters);
  $('#history-prev').addEventListener('click', () => historyPage(-1));
  $('#history-next').addEventListener('click', () => historyPage(1));
  window.addEventListener('hashchange', route);
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => redrawPlots(), 200);
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

