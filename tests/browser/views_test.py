#!/usr/bin/python3
"""The dashboard's views in headless Chromium, against a real colltestd (cpu backend) that allows
fault injection: the sweep ETA, the plots' x axis (ticks at the measured m, rows or bytes),
crossover labels that do not overlap, the trend of a case across runs, the compare plot and its
"regressions only" filter, the history's world / m / n / dtype columns and the health matrix.

1. A sweep from the form (world 2, m 1,3,8,24,64, n 512, one_stage and lamport: 10 cases). While it
   streams, each render's ETA (#run-eta) is recorded: it must equal the cases left times the mean
   wall time (CaseResult.wall_ms) of the cases finished so far, as the run's record has them.
2. The x ticks of its plots are exactly the 5 measured m (rows), then "1 KiB" .. "64 KiB" (bytes =
   m x n x 2); a synthetic run whose fastest variant changes at each of 13 m has crossover labels
   whose boxes (measured in the page) do not overlap and stay inside the plot.
3. Four runs of one case (m 8, n 1024) through the API, the second made the baseline, the fourth
   slowed by the fault delay_rank:1:20000 (and given m 16 too). A single-m run has one x tick,
   8 (16 KiB). The trend of its one_stage case draws one point per run (4), in time order, the
   baseline's ringed and named, the slow run's red (the server's compare said REGRESSION). The
   slow run shown as if its record had no machine key: the trend is refused in its status, with
   no request.
4. The history's rows show world, m, n and dtype from each run's spec ("1-64 (5)", "8, 16").
   Comparing the baseline run with the slow one: the plot has the two REGRESSION cases in red
   and leaves the two ONLY_B out; "regressions only" hides the ONLY_B rows. Two ordinary runs
   compared: both cases SAME, grey.
5. A health check with pairs and the fault hang_end_sync:1 (1 s timeout, no WARN for slowness on
   busy cores): the matrix has every device's rank and pairs 0-1, 1-2, 1-3 HANG, the other pairs
   OK, and names device 1 with its UUID as the culprit; after a reload the matrix is rebuilt from
   the health runs of the history alike, and again with pages of 2 pair runs (next_page_token
   followed; only the group run and the HANG pairs read in full).

Screenshots of each view go to --screenshot-dir (default: the build folder above --bin-dir):
dashboard-results.png, dashboard-trend.png, dashboard-history.png, dashboard-compare.png,
dashboard-health.png.

Run with Debian's python: /usr/bin/python3 tests/browser/views_test.py --bin-dir build/bin
Needs the packages chromium and python3-websocket (scripts/setup.sh); without them it FAILS.
"""

import argparse
import json
import os
import sys
import time
import urllib.request

sys.dont_write_bytecode = True  # the import below writes nothing into the source tree
from dashboard_test import (Browser, Daemon, TestFailure, fill_and_submit, log,
                            passed_if_console_clean, run_with_browser_tools,
                            wait_for_done_run)

SWEEP_VARIANTS = ['one_stage', 'lamport']
# Not powers of two: a log axis' own ticks (1, 2, 4, ...) would not be these.
SWEEP_M = '1,3,8,24,64'
SWEEP_M_VALUES = [1, 3, 8, 24, 64]
SWEEP_N = 512
SWEEP_CASES = len(SWEEP_VARIANTS) * len(SWEEP_M_VALUES)
# Enough calls a case (~20-40 ms each on the cpu backend) for the page to render the ETA several
# times while the sweep streams.
SWEEP_ITERS = 100
# The trend's runs: one case per variant at m 8, n 1024 (bf16: 16 KiB a rank). 9 calls, so that
# a few slow calls on busy cores do not move the median.
TREND_SPEC = {'world_size': 2, 'm': [8], 'n': [1024], 'variants': ['VARIANT_ONE_STAGE', 'VARIANT_LAMPORT'],
              'modes': ['MODE_EAGER'], 'warmup': 2, 'iters': 9}
SLOW_FAULT = 'delay_rank:1:20000'  # 20 ms before every call: ~100 us cases become ~20 ms
# 1000 %: a case must be 11 times slower to regress, so that only the planted delay does.
THRESHOLD_PERCENT = '1000'
HEALTH_FAULT = 'hang_end_sync:1'


# ------------------------------------------------------------------------------------------------
# The API, for the runs the page then shows

def post_json(url, path, body):
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                     headers={'Content-Type': 'application/json'}, method='POST')
    return urllib.request.urlopen(request, timeout=60)


def get_json(url, path):
    with urllib.request.urlopen(url + path, timeout=30) as reply:
        return json.loads(reply.read())


def run_sweep(url, spec):
    """POST /api/v1/runs and reads the NDJSON stream to its summary; the run's id."""
    with post_json(url, 'api/v1/runs', {'spec': spec}) as reply:
        for raw in reply:
            line = raw.strip()
            if not line:
                continue
            event = json.loads(line)
            if 'error' in event:
                raise TestFailure(f'sweep {spec} failed: {event["error"]}')
            if event.get('summary'):
                summary = event['summary']
                if summary.get('state') != 'RUN_STATE_DONE':
                    raise TestFailure(f'sweep {spec} ended {summary.get("state")}: {summary.get("message")}')
                return summary['run_id']
    raise TestFailure(f'sweep {spec}: the stream ended without a summary')


def make_trend_runs(url, label):
    """Four runs of the trend's case, oldest first; the second is made baseline "default" and the
    fourth is slowed by a fault (and has m 16 too: cases only it has)."""
    runs = []
    for k in range(4):
        spec = dict(TREND_SPEC, label=f'{label}-trend-{k}')
        if k == 3:
            spec.update(fault=SLOW_FAULT, m=[8, 16])
        runs.append(run_sweep(url, spec))
        time.sleep(0.05)  # distinct creation times
    with post_json(url, 'api/v1/baselines', {'run_id': runs[1], 'name': ''}) as reply:
        json.loads(reply.read())
    log(f'trend runs {runs}; baseline default = {runs[1]}; {runs[3]} slowed by {SLOW_FAULT}')
    return runs


# ------------------------------------------------------------------------------------------------
# 1. The ETA while a sweep streams

def record_eta(browser):
    """Records, after each change of the progress or the ETA, what #run-eta shows."""
    browser.eval('''window.__eta = [];
        const record = () => { const e = document.getElementById('run-eta');
          window.__eta.push({hidden: e.hidden, text: e.textContent, eta: e.dataset.etaMs || '',
            measured: Number(e.dataset.measured || 0), remaining: Number(e.dataset.remaining || 0),
            state: document.getElementById('run-progress').dataset.state}); };
        const observer = new MutationObserver(record);
        observer.observe(document.getElementById('run-progress'), {attributes: true, subtree: true,
                                                                  childList: true, characterData: true});''')


def check_eta(browser, url, run_id):
    """Each ETA shown while RUNNING = the cases left x the mean wall_ms of the cases finished
    (the first `measured` of the run's record, which lists them in the order they ran)."""
    seen = browser.eval('window.__eta')
    walls = [float(c.get('wall_ms', 0)) for c in get_json(url, f'api/v1/runs/{run_id}')['cases']]
    shown = [s for s in seen if not s['hidden'] and s['eta']]
    if not shown:
        raise TestFailure(f'no ETA was shown while the sweep ran (recorded: {seen[:5]} ...)')
    for s in shown:
        k = s['measured']
        expected = sum(walls[:k]) / k * (SWEEP_CASES - k)
        if s['remaining'] != SWEEP_CASES - k or abs(float(s['eta']) - expected) > 0.05 + 1e-3 * expected:
            raise TestFailure(f'ETA {s} is not {SWEEP_CASES - k} cases left x the mean wall time of the '
                              f'{k} finished ({expected:.1f} ms; wall_ms {walls})')
        if 'left' not in s['text'] or s['state'] != 'RUNNING':
            raise TestFailure(f'ETA text {s["text"]!r} in state {s["state"]}')
    if not browser.eval("document.getElementById('run-eta').hidden"):
        raise TestFailure('the ETA is still shown after the run ended')
    log(f'ETA shown {len(shown)} times while RUNNING, each = cases left x mean wall_ms; '
        f'e.g. {shown[len(shown) // 2]["text"]!r}')


# ------------------------------------------------------------------------------------------------
# 2. x ticks and crossover labels

def x_ticks(browser):
    return browser.eval('''Object.fromEntries(['latency-plot', 'speedup-plot', 'busbw-plot'].map((id) =>
        [id, document.getElementById(id).dataset.xTicks || '']))''')


def set_x_unit(browser, unit):
    browser.eval(f'''(() => {{ const s = document.getElementById('sel-x'); s.value = {json.dumps(unit)};
        s.dispatchEvent(new Event('change', {{bubbles: true}})); }})()''')


def check_x_ticks(browser, rows, bytes_, what, plots=('latency-plot', 'busbw-plot')):
    """The plots' x labels are the measured values, each once, in rows then in bytes."""
    for unit, want in (('rows', rows), ('bytes', bytes_)):
        set_x_unit(browser, unit)
        ticks = x_ticks(browser)
        for plot in plots:
            if ticks[plot].split(',') != want:
                raise TestFailure(f'{what}: {plot} x ticks in {unit} are {ticks[plot]!r}, expected {want} '
                                  '(the measured values, each once)')
    set_x_unit(browser, 'rows')
    log(f'{what}: x ticks {rows} (rows), {bytes_} (bytes)')


CROSSOVER_RUN = '''(() => {
    const base = state.shown.cases[0];
    const variants = ['VARIANT_ONE_STAGE', 'VARIANT_LAMPORT', 'VARIANT_LAMPORT_TB'];
    const cases = [];
    for (let i = 0; i < 13; i++) {
      variants.forEach((v, k) => cases.push({...base, index: cases.length, variant: v, resolved_variant: v, m: 2 ** i,
        status: 'CASE_STATUS_OK', busbw_gbps: 1 + k,
        timing: {median_us: 10 + 10 * ((k - i % 3 + 3) % 3), p10_us: 9, p90_us: 40}}));
    }
    return {...state.shown, cases};
  })()'''


def check_crossover_labels(browser):
    """A run whose fastest variant changes at each of 13 m: 12 crossovers. Their labels on the
    latency and speed-up plots must not overlap one another and must stay inside the plot area;
    the wide latency plot has room for all 12."""
    boxes = browser.eval(f'''(async () => {{
        const original = state.shown;
        showRun({CROSSOVER_RUN});
        // uPlot draws (and its draw hook places the labels) in a microtask after the call.
        await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
        const out = {{}};
        for (const id of ['latency-plot', 'speedup-plot']) {{
          const over = document.querySelector('#' + id + ' .u-over').getBoundingClientRect();
          const layer = document.querySelector('#' + id + ' .marker-labels');
          out[id] = {{area: [over.left, over.top, over.right, over.bottom],
            hidden: Number(layer.dataset.hiddenLabels),
            labels: [...layer.querySelectorAll('.marker-label')].map((l) => {{
              const r = l.getBoundingClientRect();
              return {{text: l.textContent, box: [r.left, r.top, r.right, r.bottom]}}; }})}};
        }}
        out.crossover = document.getElementById('crossover').textContent;
        showRun(original);
        return out; }})()''')
    for plot in ('latency-plot', 'speedup-plot'):
        labels, area = boxes[plot]['labels'], boxes[plot]['area']
        if len(labels) + boxes[plot]['hidden'] != 12:
            raise TestFailure(f'{plot}: {len(labels)} labels + {boxes[plot]["hidden"]} left out, expected 12 crossovers')
        for i, a in enumerate(labels):
            l, t, r, b = a['box']
            if r - l <= 0 or l < area[0] - 0.5 or r > area[2] + 0.5 or t < area[1] - 0.5 or b > area[3] + 0.5:
                raise TestFailure(f'{plot}: label {a} outside the plot area {area}')
            for other in labels[i + 1:]:
                l2, t2, r2, b2 = other['box']
                if l < r2 and l2 < r and t < b2 and t2 < b:
                    raise TestFailure(f'{plot}: crossover labels overlap: {a} and {other}')
    if boxes['latency-plot']['hidden'] != 0 or len(boxes['speedup-plot']['labels']) < 6:
        raise TestFailure(f'too few crossover labels shown: latency {len(boxes["latency-plot"]["labels"])}, '
                          f'speed-up {len(boxes["speedup-plot"]["labels"])} of 12')
    if boxes['crossover'].count('fastest') != 1 or boxes['crossover'].count('m=') != 13:
        raise TestFailure(f'crossover text: {boxes["crossover"]!r}')
    log(f'12 crossovers: latency {len(boxes["latency-plot"]["labels"])} labels, speed-up '
        f'{len(boxes["speedup-plot"]["labels"])}, none overlapping, all inside their plot')


# ------------------------------------------------------------------------------------------------
# 3. The trend

def open_trend(browser, runs):
    """Opens the slow run, checks its single-m ticks, then follows its one_stage case's trend
    link with the threshold set, and waits for the verdicts."""
    slow = runs[3]
    browser.eval(f"location.hash = '#run=' + {json.dumps(runs[2])}")
    browser.wait_for(f"document.getElementById('run-id').textContent === {json.dumps(runs[2])} && "
                     "document.getElementById('latency-plot').dataset.xTicks", 'a trend run opened', 15)
    check_x_ticks(browser, ['8'], ['16 KiB'], 'a run of one m',
                  plots=('latency-plot', 'speedup-plot', 'busbw-plot'))
    browser.eval(f"location.hash = '#run=' + {json.dumps(slow)}")
    browser.wait_for(f"document.getElementById('run-id').textContent === {json.dumps(slow)} && "
                     "!!document.querySelector('#results-table tr[data-variant=one_stage] a.trend-link')",
                     'the slow run opened', 15)
    browser.eval(f"document.getElementById('trend-threshold').value = {json.dumps(THRESHOLD_PERCENT)}")
    browser.eval('''[...document.querySelectorAll('#results-table tr[data-variant=one_stage]')]
        .find((r) => r.cells[3].textContent === '8').querySelector('a.trend-link').click()''')
    browser.wait_for("document.body.dataset.view === 'trend' && "
                     "/regressed|not judged/.test(document.getElementById('trend-status').textContent)",
                     'the trend and its verdicts', 30)


def check_trend(browser, runs):
    """One point per run (4) in time order; the baseline's point ringed and named; the slow run's
    point red (and only it)."""
    got = browser.eval('''(() => {
        const plot = document.getElementById('trend-plot');
        const over = plot.querySelector('.u-over').getBoundingClientRect();
        const points = [...plot.querySelectorAll('.trend-point')].map((p) => {
          const r = p.getBoundingClientRect();
          return {run: p.dataset.runId, x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2,
                  regression: p.classList.contains('regression'), baseline: p.classList.contains('baseline'),
                  color: getComputedStyle(p).backgroundColor, verdict: p.dataset.verdict}; });
        return {count: plot.dataset.pointCount, points, area: [over.left, over.top, over.right, over.bottom],
                labels: [...plot.querySelectorAll('.trend-baseline-label')].map((l) => [l.dataset.runId, l.textContent]),
                status: document.getElementById('trend-status').textContent,
                title: plot.dataset.title || plot.querySelector('.u-title').textContent}; })()''')
    points = sorted(got['points'], key=lambda p: p['x'])
    if got['count'] != str(len(runs)) or [p['run'] for p in points] != runs:
        raise TestFailure(f'trend points {[p["run"] for p in points]} (count {got["count"]}), expected one per '
                          f'run in time order: {runs}')
    area = got['area']
    if any(not (area[0] <= p['x'] <= area[2] and area[1] <= p['y'] <= area[3]) for p in points):
        raise TestFailure(f'trend points outside the plot area {area}: {points}')
    if got['labels'] != [[runs[1], 'baseline default']] or [p['baseline'] for p in points] != [False, True, False, False]:
        raise TestFailure(f'baseline marks: labels {got["labels"]}, points {points}; expected {runs[1]} only')
    if [p['regression'] for p in points] != [False, False, False, True] or points[3]['color'] != 'rgb(214, 39, 40)':
        raise TestFailure(f'regression marks {points}: expected the slow run {runs[3]} red, the others not')
    if points[3]['y'] >= points[2]['y']:
        raise TestFailure(f'the slow run\'s median is drawn below the others: {points}')
    log(f'trend: {len(points)} points in time order, baseline {runs[1]} marked, {runs[3]} red; {got["status"]}')


def check_trend_without_machine_key(browser, runs):
    """The slow run as if its record had no machine key (colltestd always records one: rendered
    through showRun, which the trend reads for the run shown): its trend is refused in the status,
    with no point and without a single request (an empty machine_key would list every machine's
    runs)."""
    got = browser.eval(f'''(async () => {{
        const run = await api('api/v1/runs/' + {json.dumps(runs[3])});
        const other = run.cases.find((c) => num(c.index) !== Number(new URLSearchParams(location.hash.slice(1)).get('case')));
        showRun({{...run, machine: {{...run.machine, key: ''}}}});
        performance.clearResourceTimings();
        location.hash = trendHash(run.run_id, num(other.index));
        return run.machine.key; }})()''')
    status_js = "document.getElementById('trend-status').textContent"
    try:
        status = browser.wait_for(f"(s => /no machine key|regressed|not judged/.test(s) && s)({status_js})",
                                  'the trend of a run without a machine key', 15)
    except TestFailure as e:
        raise TestFailure(f'{e}; the trend status says {browser.eval(status_js)!r}') from e
    requests = browser.eval('''performance.getEntriesByType('resource').map((e) => e.name)
        .filter((n) => n.includes('/api/v1/'))''')
    points = browser.eval("document.querySelectorAll('#trend-plot .trend-point, #trend-table tbody tr').length")
    if not status.startswith('this run has no machine key:') or requests or points:
        raise TestFailure(f'a run without a machine key (it has {got!r}): trend status {status!r}, requests '
                          f'{requests}, {points} points and rows; expected the refusal, none and none')
    browser.eval(f"(async () => showRun(await api('api/v1/runs/' + {json.dumps(runs[3])})))()")
    log(f'a run without a machine key: {status!r}, no request')


# ------------------------------------------------------------------------------------------------
# 4. History columns, compare plot and filter

def history_row(browser, run_id):
    return browser.eval(f'''(() => {{ const r = document.querySelector('#history-table tr[data-run-id={json.dumps(run_id)}]');
        return r && Object.fromEntries(['h-world', 'h-m', 'h-n', 'h-dtype'].map((c) =>
          [c.slice(2), r.querySelector('td.' + c).textContent])); }})()''')


def check_history_columns(browser, sweep_run, runs):
    browser.eval("location.hash = '#history'")
    browser.wait_for(f"!!document.querySelector('#history-table tr[data-run-id={json.dumps(runs[3])}]')",
                     'the runs in the history', 15)
    want = {sweep_run: {'world': '2', 'm': '1\u201364 (5)', 'n': str(SWEEP_N), 'dtype': 'bf16'},
            runs[0]: {'world': '2', 'm': '8', 'n': '1024', 'dtype': 'bf16'},
            runs[3]: {'world': '2', 'm': '8, 16', 'n': '1024', 'dtype': 'bf16'}}
    for run_id, cells in want.items():
        got = history_row(browser, run_id)
        if got != cells:
            raise TestFailure(f'history row {run_id} shows {got}, expected {cells} (from the run\'s spec)')
    log(f'history rows show world, m, n, dtype: {want[sweep_run]}, {want[runs[3]]}')


def compare_rows(browser):
    return browser.eval('''[...document.querySelectorAll('#compare-table tbody tr')].map((r) =>
        ({verdict: r.dataset.verdict, shown: !r.hidden && r.offsetParent !== null}))''')


def check_compare(browser, runs):
    """The baseline run against the slow one, picked in the history: two REGRESSION, two ONLY_B."""
    browser.eval(f"document.getElementById('compare-threshold').value = {json.dumps(THRESHOLD_PERCENT)}")
    for run_id in (runs[1], runs[3]):
        browser.eval(f"document.querySelector('#history-table input.pick[data-run-id={json.dumps(run_id)}]').click()")
    browser.eval("document.getElementById('compare-runs').click()")
    browser.wait_for(f"document.querySelectorAll('#compare-table tbody tr').length === 4 && "
                     f"document.getElementById('compare-meta').textContent.includes({json.dumps(runs[3])})",
                     'the comparison of the baseline run and the slow run', 15)
    verdicts = sorted(r['verdict'] for r in compare_rows(browser))
    if verdicts != ['ONLY_B', 'ONLY_B', 'REGRESSION', 'REGRESSION']:
        raise TestFailure(f'compare verdicts {verdicts}, expected two REGRESSION (the delay) and two ONLY_B (m 16)')
    plot = browser.eval('''(() => { const p = document.getElementById('compare-plot');
        return {series: p.dataset.series, unplotted: p.dataset.unplotted, canvas: !!p.querySelector('canvas')}; })()''')
    if plot != {'series': 'REGRESSION:#d62728:2', 'unplotted': '2', 'canvas': True}:
        raise TestFailure(f'compare plot {plot}: expected the 2 REGRESSION cases in red, 2 ONLY_B left out')
    browser.eval("document.getElementById('compare-regressions-only').click()")
    only = compare_rows(browser)
    if [r['verdict'] for r in only if r['shown']] != ['REGRESSION', 'REGRESSION']:
        raise TestFailure(f'"regressions only" shows {only}, expected the two REGRESSION rows alone')
    browser.eval("document.getElementById('compare-regressions-only').click()")
    if sum(r['shown'] for r in compare_rows(browser)) != 4:
        raise TestFailure('unticking "regressions only" does not show every row again')
    log(f'compare: plot {plot["series"]}, {plot["unplotted"]} cases without two medians; '
        '"regressions only" keeps the 2 REGRESSION rows')


def check_compare_same(browser, runs):
    """Two ordinary runs: both cases SAME, drawn grey, no red."""
    browser.eval(f"runCompare({{run_a: {json.dumps(runs[0])}, run_b: {json.dumps(runs[2])}, "
                 f"threshold: {float(THRESHOLD_PERCENT) / 100}}})")
    series = browser.wait_for(f'''document.getElementById('compare-meta').textContent.includes({json.dumps(runs[0])}) &&
        document.getElementById('compare-plot').dataset.series''', 'the comparison of two ordinary runs', 15)
    if series != 'SAME:#8a8f98:2':
        raise TestFailure(f'two ordinary runs compared: plot series {series!r}, expected SAME:#8a8f98:2')
    log(f'two ordinary runs compared: {series}')


# ------------------------------------------------------------------------------------------------
# 5. The health matrix

def matrix(browser):
    return browser.eval('''(() => { const t = document.getElementById('health-matrix');
        return {source: t.dataset.source || '',
          cells: Object.fromEntries([...t.querySelectorAll('td.hm')].map((c) => [c.dataset.devices, c.dataset.status])),
          heads: [...t.querySelectorAll('th.hm-device')].map((h) => h.textContent),
          culprit: document.getElementById('health-culprit').dataset.device || '',
          culpritText: document.getElementById('health-culprit').textContent,
          visible: document.getElementById('health-matrix-panel').offsetParent !== null}; })()''')


def check_matrix(got, uuids, source):
    want = {'0': 'HANG', '1': 'HANG', '2': 'HANG', '3': 'HANG', '0-1': 'HANG', '1-2': 'HANG', '1-3': 'HANG',
            '0-2': 'OK', '0-3': 'OK', '2-3': 'OK'}
    if got['source'] != source or not got['visible'] or any(got['cells'].get(k) != v for k, v in want.items()):
        raise TestFailure(f'health matrix ({source}): {got}, expected the cells {want}')
    if got['heads'] != [f'device {i}{u}' for i, u in enumerate(uuids)]:
        raise TestFailure(f'health matrix heads {got["heads"]}, expected each device with its UUID {uuids}')
    if got['culprit'] != '1' or f'culprit: device 1 ({uuids[1]})' not in got['culpritText']:
        raise TestFailure(f'health matrix culprit {got["culprit"]!r}: {got["culpritText"]!r}, expected device 1 ({uuids[1]})')


def check_health(browser, url, uuids):
    browser.eval("location.hash = '#sweep'")
    # warn_ratio 1000: on 2 busy cores a healthy pair may be 1.5 times slower than the others
    # (a WARN); the planted hang is what is checked.
    browser.eval(f"checkHealth({{pairs: true, fault: {json.dumps(HEALTH_FAULT)}, timeout_ms: 1000, "
                 "warn_ratio: 1000}); 0")
    browser.wait_for("document.getElementById('health-matrix').dataset.source === 'check' && "
                     "document.getElementById('health-run').disabled === false", 'the health check', 60)
    got = matrix(browser)
    check_matrix(got, uuids, 'check')
    log(f'health matrix after the check: culprit {got["culpritText"][:120]!r}')
    return got


def check_health_after_reload(browser, url, uuids):
    browser.navigate('about:blank')
    browser.navigate(url + '#sweep')
    browser.wait_for("document.getElementById('health-matrix').dataset.source === 'history'",
                     'the health matrix rebuilt from the history', 30)
    check_matrix(matrix(browser), uuids, 'history')
    log('health matrix after a reload: rebuilt from the health runs alike')


def check_health_pair_pages(browser, uuids):
    """The matrix rebuilt again with pages of 2 pair runs (as 120 pairs of 16 devices are pages of
    100): every pair comes from following next_page_token (3 pages), and of the runs only the group
    run and the 3 HANG pairs are read in full (the OK pairs' summaries say all)."""
    browser.eval('''HEALTH_PAIR_PAGES.limit = 2; health.model = null; health.historyRunId = '';
        performance.clearResourceTimings(); loadHealthRuns(); 0''')
    browser.wait_for("health.model && health.model.source === 'history'",
                     'the health matrix rebuilt with pages of 2 pair runs', 30)
    got = matrix(browser)
    pages = browser.eval('''(() => { const names = performance.getEntriesByType('resource').map((e) => e.name);
        return {pairPages: names.filter((n) => n.includes('label=health+pair') && n.includes('since_unix_ms')).length,
                fullRuns: names.filter((n) => n.includes('/api/v1/runs/')).length,
                pairRuns: document.getElementById('health-matrix').dataset.pairRuns}; })()''')
    browser.eval('HEALTH_PAIR_PAGES.limit = 100')
    check_matrix(got, uuids, 'history')
    if pages != {'pairPages': 3, 'fullRuns': 4, 'pairRuns': '6'}:
        raise TestFailure(f'pages of 2 pair runs: {pages}, expected 3 pages of the 6 pair runs and 4 runs read '
                          'in full (the group run and the 3 HANG pairs)')
    log(f'health matrix from pages of 2 pair runs: {pages}')


# ------------------------------------------------------------------------------------------------

def shot(browser, args, name):
    path = os.path.join(args.screenshot_dir, f'dashboard-{name}.png')
    browser.screenshot(path)
    log(f'screenshot {path}')


def run_test(args, websocket_module, work):
    label = f'browser-views-{os.getpid()}'
    daemons = []
    browser = None
    try:
        t0 = time.monotonic()
        daemons.append(Daemon(args.bin_dir, os.path.join(work, 'state'), os.path.join(work, 'colltestd.log'),
                              ['--allow-fault-injection']))
        url = daemons[-1].wait_ready(30)
        uuids = [d['uuid'] for d in get_json(url, 'api/v1/devices')['machine']['devices']]
        browser = Browser(args.chromium, os.path.join(work, 'profile'), websocket_module)
        for domain in ('Page', 'Runtime', 'Log'):
            browser.call(f'{domain}.enable')
        browser.navigate(url)
        browser.wait_for("document.querySelectorAll('#f-variants input').length > 0", 'the variant choices', 15)

        record_eta(browser)
        fill_and_submit(browser, label, m_list=SWEEP_M, n_list=str(SWEEP_N), variants=SWEEP_VARIANTS,
                        epilogues=('none',), iters=SWEEP_ITERS)
        sweep_run = wait_for_done_run(browser, SWEEP_CASES, args.timeout, t0)
        check_eta(browser, url, sweep_run)
        check_x_ticks(browser, [str(m) for m in SWEEP_M_VALUES],
                      [f'{m} KiB' for m in SWEEP_M_VALUES], 'the sweep')
        shot(browser, args, 'results')
        check_crossover_labels(browser)

        runs = make_trend_runs(url, label)
        open_trend(browser, runs)
        check_trend(browser, runs)
        shot(browser, args, 'trend')
        check_trend_without_machine_key(browser, runs)

        check_history_columns(browser, sweep_run, runs)
        shot(browser, args, 'history')
        check_compare(browser, runs)
        shot(browser, args, 'compare')
        check_compare_same(browser, runs)

        check_health(browser, url, uuids)
        shot(browser, args, 'health')
        check_health_after_reload(browser, url, uuids)
        check_health_pair_pages(browser, uuids)
        return passed_if_console_clean(browser, t0)
    except Exception as e:
        print(f'FAIL: {e}', file=sys.stderr, flush=True)
        if browser:
            try:
                shot(browser, args, 'views-failure')
            except Exception as shot_error:
                print(f'(no screenshot of the failure: {shot_error})', file=sys.stderr)
            print('browser console errors:\n  ' + ('\n  '.join(browser.console) or '(none)'), file=sys.stderr)
        if daemons:
            print(f'colltestd log (last lines):\n{daemons[-1].log_tail()}', file=sys.stderr)
        return 1
    finally:
        if browser:
            browser.close()
        for d in daemons:
            d.kill()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--bin-dir', default=os.path.join(os.path.dirname(os.path.dirname(here)), 'build', 'bin'),
                        help='folder with colltestd and colltest-worker')
    parser.add_argument('--screenshot-dir', help='folder for the PNGs of each view (default: the folder '
                                                 'above --bin-dir, the build folder)')
    parser.add_argument('--chromium', default=os.environ.get('CHROMIUM', 'chromium'))
    parser.add_argument('--timeout', type=float, default=60, help='seconds for the sweep to finish')
    args = parser.parse_args()
    if not args.screenshot_dir:
        args.screenshot_dir = os.path.dirname(os.path.abspath(args.bin_dir))
    return run_with_browser_tools(args, run_test, 'colltest-browser-views-')


if __name__ == '__main__':
    sys.exit(main())
