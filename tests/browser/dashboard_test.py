#!/usr/bin/python3
"""The dashboard in a real browser: headless Chromium driven over the DevTools protocol.

Starts colltestd (cpu backend, 4 ranks) on free ports with a fresh --state-dir, opens the page,
submits lists the server refuses (their messages shown next to the m and n fields, no run), starts
a sweep from the form with m as a range of the CLI's grammar, waits for every case and DONE, checks the table and the latency plot
(one series per chosen variant), finds the run in the history, restarts colltestd on the same
state dir and finds the run again (and opens it). Saves a screenshot of the results view.

colltestd is given a kernel plugin (docs/plugins.md): the fixture oneshot_norm.so copied into a
private folder (a plugin and every folder above it may be writable by its owner only). The page
lists it (variant, version, the start of its SHA-256, loaded) and offers it unticked among the
variants; a sweep with it ticked has rows named "plugin:oneshot_norm", OK, a plot series of its
own (and a second plugin's cases would be another), the comparison names it, and the run opened
from the history after the restart still does.

Run with Debian's python: /usr/bin/python3 tests/browser/dashboard_test.py --bin-dir build/bin
Needs the packages chromium and python3-websocket (scripts/setup.sh); without them it FAILS.
Exit status 0 on success, 1 on any failure (with the page's error box, the browser's console
and colltestd's log printed).
"""

import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

VARIANTS = ['one_stage', 'lamport', 'lamport_tb']
# A range in the CLI's grammar (docs/input.md), which the server expands for the form.
M_LIST = '1:64:x4'
M_VALUES = [1, 4, 16, 64]
N_LIST = '1024'
WORLD = 2
CASES = len(VARIANTS) * len(M_VALUES)
# The sweep's one epilogue, ticked instead of none: every case quantises its output.
EPILOGUE = 'fp8_token'
# Lists the server's grammar refuses; the message names the field and the limit.
BAD_M = '1:100000:+1'
BAD_M_MESSAGE = "m: more than 4096 values (range '1:100000:+1'), the limit is 4096"
BAD_N = '8q'
# The kernel plugin (tests/plugins/fixtures, target colltest_fixture_oneshot_norm): the example
# examples/plugins/oneshot_norm built for the cpu backend; its struct says name and version.
PLUGIN = 'oneshot_norm'
PLUGIN_VARIANT = f'plugin:{PLUGIN}'
PLUGIN_VERSION = '1.0'
# Its sweep: one of colltest's variants beside it, the one epilogue it writes (none).
PLUGIN_SWEEP_VARIANTS = ['one_stage', PLUGIN_VARIANT]
PLUGIN_M_LIST = '1,8'
PLUGIN_M_VALUES = [1, 8]
PLUGIN_N_LIST = '256'
PLUGIN_CASES = len(PLUGIN_SWEEP_VARIANTS) * len(PLUGIN_M_VALUES)
LISTEN_RE = re.compile(r'colltestd listening on (\S+) .*http=(\S+)')


class TestFailure(Exception):
    pass


def log(message):
    print(f'[{time.strftime("%H:%M:%S")}] {message}', flush=True)


# ------------------------------------------------------------------------------------------------
# colltestd

class Daemon:
    """One colltestd process in its own process group; stdout's announce line gives the ports."""

    def __init__(self, bin_dir, state_dir, log_path, extra_args=()):
        binary = os.path.join(bin_dir, 'colltestd')
        if not os.access(binary, os.X_OK):
            raise TestFailure(f'no colltestd at {binary} (build it: cbuild colltestd colltest-worker)')
        self.log_path = log_path
        self.log_file = open(log_path, 'ab')
        self.proc = subprocess.Popen(
            [binary, '--backend', 'cpu', '--cpu-ranks', '4', '--listen', '127.0.0.1:0',
             '--http', '127.0.0.1:0', '--state-dir', state_dir, *extra_args],
            stdout=subprocess.PIPE, stderr=self.log_file, start_new_session=True)
        self.lines = []
        self.announce = threading.Event()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self.http = None

    def _read_stdout(self):
        for raw in self.proc.stdout:
            line = raw.decode(errors='replace').rstrip()
            self.lines.append(line)
            if LISTEN_RE.search(line):
                self.announce.set()

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while not self.announce.wait(0.1):
            if self.proc.poll() is not None:
                raise TestFailure(f'colltestd exited with {self.proc.returncode} before listening:\n'
                                  f'{self.log_tail()}')
            if time.monotonic() > deadline:
                raise TestFailure(f'colltestd did not announce "listening" within {timeout} s; '
                                  f'stdout: {self.lines}')
        line = next(l for l in self.lines if LISTEN_RE.search(l))
        self.http = LISTEN_RE.search(line).group(2)
        # The announce comes once the ports are bound; the API must answer as well.
        url = f'http://{self.http}/api/v1/devices'
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as reply:
                    if reply.status == 200:
                        return f'http://{self.http}/'
            except OSError as e:
                last = e
            if time.monotonic() > deadline:
                raise TestFailure(f'{url} did not answer 200 within {timeout} s: {last}')
            time.sleep(0.1)

    def terminate(self, timeout=20):
        """SIGTERM and wait; what is left of the process group is killed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise TestFailure(f'colltestd did not stop within {timeout} s of SIGTERM')
        self.kill()
        return self.proc.returncode

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self.log_file.close()

    def log_tail(self, lines=30):
        try:
            with open(self.log_path, errors='replace') as f:
                return ''.join(f.readlines()[-lines:])
        except OSError:
            return ''


# ------------------------------------------------------------------------------------------------
# Chromium over the DevTools protocol

class Browser:
    def __init__(self, chromium, profile_dir, websocket_module):
        self.proc = subprocess.Popen(
            [chromium, '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
             '--remote-debugging-port=0', '--remote-allow-origins=*', f'--user-data-dir={profile_dir}',
             '--no-first-run', '--no-default-browser-check', '--disable-extensions',
             '--disable-background-networking', '--hide-scrollbars', '--window-size=1400,1000',
             'about:blank'],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port = self._devtools_port(profile_dir, 30)
        targets = self._wait_page_target(port, 15)
        self.ws = websocket_module.create_connection(targets['webSocketDebuggerUrl'], timeout=30,
                                                     suppress_origin=True)
        self.next_id = 0
        self.console = []  # console errors and exceptions, as text

    def _devtools_port(self, profile_dir, timeout):
        path = os.path.join(profile_dir, 'DevToolsActivePort')
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise TestFailure(f'chromium exited with {self.proc.returncode} at start')
            try:
                with open(path) as f:
                    first = f.readline().strip()
                if first:
                    return int(first)
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        raise TestFailure(f'chromium wrote no {path} within {timeout} s')

    def _wait_page_target(self, port, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f'http://127.0.0.1:{port}/json/list', timeout=2) as r:
                    pages = [t for t in json.load(r) if t.get('type') == 'page']
                if pages:
                    return pages[0]
            except OSError:
                pass
            time.sleep(0.1)
        raise TestFailure(f'chromium offered no page target within {timeout} s')

    def call(self, method, params=None, timeout=30):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({'id': my_id, 'method': method, 'params': params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TestFailure(f'no answer to {method} within {timeout} s')
            self.ws.settimeout(left)
            message = json.loads(self.ws.recv())
            if message.get('id') == my_id:
                if 'error' in message:
                    raise TestFailure(f'{method}: {message["error"]}')
                return message.get('result', {})
            self._event(message)

    def _event(self, message):
        method = message.get('method')
        params = message.get('params', {})
        if method == 'Runtime.consoleAPICalled' and params.get('type') in ('error', 'assert'):
            text = ' '.join(str(a.get('value', a.get('description', ''))) for a in params.get('args', []))
            self.console.append(f'console.{params["type"]}: {text}')
        elif method == 'Runtime.exceptionThrown':
            d = params.get('exceptionDetails', {})
            text = d.get('exception', {}).get('description') or d.get('text', '')
            self.console.append(f'exception: {text} at {d.get("url", "")}:{d.get("lineNumber", "")}')
        elif method == 'Log.entryAdded' and params.get('entry', {}).get('level') == 'error':
            e = params['entry']
            self.console.append(f'log: {e.get("text", "")} {e.get("url", "")}')

    def eval(self, expression, timeout=30):
        reply = self.call('Runtime.evaluate', {'expression': expression, 'awaitPromise': True,
                                               'returnByValue': True}, timeout)
        if 'exceptionDetails' in reply:
            d = reply['exceptionDetails']
            raise TestFailure(f'evaluating {expression[:80]!r}: '
                              f'{d.get("exception", {}).get("description") or d.get("text")}')
        return reply.get('result', {}).get('value')

    def wait_for(self, expression, what, timeout, fail_on_error_box=True):
        """Polls every 100 ms until the expression is truthy; a visible error box fails at once."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(expression)
            if value:
                return value
            if fail_on_error_box:
                box = self.eval("document.getElementById('error-box') && !document.getElementById('error-box').hidden"
                                " ? document.getElementById('error-box').innerText : ''")
                if box:
                    raise TestFailure(f'waiting for {what}: the page shows an error: {box}')
            if time.monotonic() > deadline:
                raise TestFailure(f'timed out after {timeout} s waiting for {what}')
            time.sleep(0.1)

    def navigate(self, url, timeout=30):
        self.call('Page.navigate', {'url': url}, timeout)
        self.wait_for(f"document.readyState === 'complete' && location.href === {json.dumps(url)}",
                      f'{url} to load', timeout, fail_on_error_box=False)

    def screenshot(self, path, selector=None):
        """A PNG of the whole page (the viewport grown to the page's height)."""
        height = self.eval('Math.ceil(document.documentElement.scrollHeight)') or 1000
        self.call('Emulation.setDeviceMetricsOverride',
                  {'width': 1400, 'height': min(int(height), 6000), 'deviceScaleFactor': 1, 'mobile': False})
        try:
            time.sleep(0.3)  # the resize redraws the plots
            shot = self.call('Page.captureScreenshot', {'format': 'png'}, 60)
        finally:
            self.call('Emulation.clearDeviceMetricsOverride')
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, 'wb') as f:
            f.write(base64.b64decode(shot['data']))

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass


# ------------------------------------------------------------------------------------------------
# The page

def fill_and_submit(browser, label, m_list=M_LIST, n_list=N_LIST, variants=VARIANTS,
                    epilogues=(EPILOGUE,), keep_normed=False, iters=3):
    """Fills the sweep form as a user would (values, then the submit button's click)."""
    script = '''
    (() => {
      const set = (id, value) => {
        const input = document.getElementById(id);
        input.value = value;
        input.dispatchEvent(new Event('input', {bubbles: true}));
        input.dispatchEvent(new Event('change', {bubbles: true}));
      };
      const want = new Set(%s);
      const boxes = [...document.querySelectorAll('#f-variants input[type=checkbox]')];
      const offered = boxes.map((b) => b.parentElement.textContent.trim());
      for (const v of want) if (!offered.includes(v)) return 'variant ' + v + ' not offered: ' + offered.join(',');
      for (const b of boxes) b.checked = want.has(b.parentElement.textContent.trim());
      for (const b of document.querySelectorAll('#f-modes input[type=checkbox]')) b.checked = b.value === 'MODE_EAGER';
      const epilogues = new Set(%s);
      const epilogueBoxes = [...document.querySelectorAll('#f-epilogues input[type=checkbox]')];
      const epiloguesOffered = epilogueBoxes.map((b) => b.parentElement.textContent.trim());
      for (const e of epilogues) if (!epiloguesOffered.includes(e)) return 'epilogue ' + e + ' not offered';
      for (const b of epilogueBoxes) b.checked = epilogues.has(b.parentElement.textContent.trim());
      document.getElementById('f-keep-normed').checked = %s;
      set('f-world', '%d');
      set('f-m', %s);
      set('f-n', %s);
      set('f-warmup', '1');
      set('f-iters', '%d');
      set('f-label', %s);
      document.getElementById('sweep-submit').click();
      return '';
    })()''' % (json.dumps(list(variants)), json.dumps(list(epilogues)), json.dumps(keep_normed),
           WORLD, json.dumps(m_list), json.dumps(n_list), iters, json.dumps(label))
    problem = browser.eval(script)
    if problem:
        raise TestFailure(problem)


def check_results(browser):
    """The table has every case, OK, and the latency plot one series per variant."""
    rows = browser.eval('''[...document.querySelectorAll('#results-table tbody tr')].map((r) =>
        ({status: r.dataset.status, cells: [...r.cells].map((c) => c.textContent)}))''')
    if len(rows) != CASES:
        raise TestFailure(f'results table has {len(rows)} rows, expected {CASES}')
    bad = [r for r in rows if r['status'] != 'OK']
    if bad:
        raise TestFailure(f'cases not OK: {bad}')
    seen = sorted((r['cells'][0], int(r['cells'][3])) for r in rows)
    want = sorted((v, m) for v in VARIANTS for m in M_VALUES)
    if seen != want:
        raise TestFailure(f'results table (variant, m) = {seen}, expected {want}')
    plot = browser.eval('''(() => { const p = document.getElementById('latency-plot');
        return {count: p.dataset.seriesCount, names: p.dataset.seriesNames,
                canvas: !!p.querySelector('canvas')}; })()''')
    if plot['count'] != str(len(VARIANTS)):
        raise TestFailure(f'latency plot drew {plot["count"]} series ({plot["names"]!r}), '
                          f'expected {len(VARIANTS)}: one per variant')
    if sorted(plot['names'].split(',')) != sorted(VARIANTS):
        raise TestFailure(f'latency plot series {plot["names"]!r}, expected {VARIANTS}')
    if not plot['canvas']:
        raise TestFailure('latency plot has no canvas: uPlot did not draw')
    crossover = browser.eval("document.getElementById('crossover').textContent")
    if 'fastest' not in crossover:
        raise TestFailure(f'no crossover text: {crossover!r}')
    # The gateway forwards the browser's address: the run's owner is that peer, not the
    # in-process channel's.
    meta = browser.eval("document.getElementById('run-meta').textContent")
    if 'ownerpeer:ipv4:127.0.0.1:' not in meta.replace(' ', ''):
        raise TestFailure(f'run owner is not the browser\'s address: {meta!r}')
    log(f'results: {len(rows)} rows OK; latency plot series {plot["names"]}; {crossover}')


def check_untimed_cells(browser):
    """A case that never ran its calls (a HANG here) shows '-' for its timings, busbw, mismatches
    and max ulp, as the CLI's table does, not 0; an OK case keeps its figures. The run shown is
    rendered again with its first case made a HANG, then as it was."""
    cells = browser.eval('''(() => {
        const original = state.shown;
        const run = JSON.parse(JSON.stringify(original));
        const c = [...run.cases].sort((a, b) => Number(a.index) - Number(b.index))[0];
        c.status = 'CASE_STATUS_HANG';
        c.message = 'rank 1 never arrived';
        c.timing = {}; c.diff = {}; c.busbw_gbps = 0; c.algbw_gbps = 0;
        showRun(run);
        const rows = [...document.querySelectorAll('#results-table tbody tr')];
        const text = (r) => [...r.cells].map((x) => x.textContent);
        const out = {hang: text(rows[0]), ok: text(rows[1]),
                     heads: [...document.querySelectorAll('#results-table thead th')]
                       .map((h) => h.textContent)};
        showRun(original);
        return out; })()''')
    heads = cells['heads']
    columns = [i for i, h in enumerate(heads)
               if h.startswith(('median', 'p10', 'p90', 'busbw', 'mismatches', 'max ulp'))]
    if len(columns) != 6:
        raise TestFailure(f'results table headers not as expected: {heads}')
    hang = [cells['hang'][i] for i in columns]
    if hang != ['-'] * 6:
        raise TestFailure(f'a HANG row shows {dict(zip([heads[i] for i in columns], hang))}, '
                          'expected - for every figure it never measured')
    if cells['ok'][columns[0]] in ('-', '0'):
        raise TestFailure(f'an OK row lost its median: {cells["ok"]}')
    log('a HANG row shows - for median, p10, p90, busbw, mismatches and max ulp; OK rows keep theirs')


SHARED_NOTE = ('ranks share a GPU (4 per GPU): times are kernel overhead, not a link measurement; '
               'busbw is not a link figure')


def check_shared_gpu_note(browser):
    """The cpu backend cannot share a GPU (colltestd --ranks-per-gpu needs cuda or hip): the run
    shown is rendered again as its record would read had its ranks shared GPUs, 4 per GPU, the way
    the page renders any run (showRun); then time-sliced; then on separate GPUs, without the note."""
    shown = browser.eval('''(() => {
        const run = JSON.parse(JSON.stringify(state.shown));
        run.ranks_per_gpu = 4;
        showRun(run);
        const note = document.getElementById('shared-gpu-note');
        return {hidden: note.hidden, visible: note.offsetParent !== null, text: note.textContent,
                ranks: note.dataset.ranksPerGpu,
                busbwHead: document.getElementById('busbw-head').textContent,
                busbwTitle: document.getElementById('busbw-plot').dataset.title || '',
                latencyTitle: document.getElementById('latency-plot').dataset.title || '',
                meta: document.getElementById('run-meta').textContent}; })()''')
    if shown['hidden'] or not shown['visible'] or shown['text'] != SHARED_NOTE:
        raise TestFailure(f'a run with ranks_per_gpu 4 shows no shared-GPU note: {shown}')
    if shown['ranks'] != '4' or 'not a link' not in shown['busbwHead']:
        raise TestFailure(f'shared-GPU run: note data or busbw column not labelled: {shown}')
    if 'not a link figure' not in shown['busbwTitle'] or 'kernel overhead' not in shown['latencyTitle']:
        raise TestFailure(f'shared-GPU run: plots not labelled: {shown}')
    if 'ranksperGPU4' not in shown['meta'].replace(' ', ''):
        raise TestFailure(f'shared-GPU run: the run details lack its ranks per GPU: {shown["meta"]!r}')
    sliced = browser.eval('''(() => { const run = JSON.parse(JSON.stringify(state.shown));
        run.ranks_per_gpu = 4; run.time_sliced = true; showRun(run);
        return document.getElementById('shared-gpu-note').textContent; })()''')
    if 'timings are meaningless (time-sliced)' not in sliced:
        raise TestFailure(f'a time-sliced run does not say its timings are meaningless: {sliced!r}')
    apart = browser.eval('''(() => { const run = JSON.parse(JSON.stringify(state.shown));
        run.ranks_per_gpu = 1; run.time_sliced = false; showRun(run);
        return {hidden: document.getElementById('shared-gpu-note').hidden,
                busbwHead: document.getElementById('busbw-head').textContent}; })()''')
    if not apart['hidden'] or apart['busbwHead'] != 'busbw GB/s':
        raise TestFailure(f'a run on separate GPUs shows the shared-GPU note: {apart}')
    log('shared-GPU note: shown for ranks_per_gpu 4 and time-sliced, not for one rank per GPU')


def server_message(url, body):
    """The error message colltestd answers POST /api/v1/sizes:parse with for `body`."""
    request = urllib.request.Request(url + 'api/v1/sizes:parse', data=json.dumps(body).encode(),
                                     headers={'Content-Type': 'application/json'}, method='POST')
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            raise TestFailure(f'sizes:parse took {body}: {reply.read()!r}')
    except urllib.error.HTTPError as e:
        return json.loads(e.read())['message']


def check_epilogue(url, run_id):
    """The form sent the ticked epilogue: the run's spec has it, and every case quantised with it
    and compared its codes."""
    with urllib.request.urlopen(f'{url}api/v1/runs/{run_id}', timeout=10) as reply:
        run = json.loads(reply.read())
    want = 'EPILOGUE_' + EPILOGUE.upper()
    if run['spec'].get('epilogues') != [want]:
        raise TestFailure(f'the run\'s spec has epilogues {run["spec"].get("epilogues")}, expected [{want}]')
    unchecked = [(c.get('variant'), c.get('m')) for c in run['cases']
                 if c.get('epilogue') != want or int(c.get('quant', {}).get('checked_codes', 0)) == 0]
    if unchecked:
        raise TestFailure(f'cases without {want} or without compared codes: {unchecked}')
    log(f'every case ran epilogue {EPILOGUE} and compared its codes')


def check_refused_lists(browser, url, label):
    """Lists the server's grammar refuses: each field shows the server's own message next to it,
    naming the field, the error box stays hidden and no run starts."""
    want = {'m': server_message(url, {'m': BAD_M}), 'n': server_message(url, {'n': BAD_N})}
    if want['m'] != BAD_M_MESSAGE or not want['n'].startswith(f"n: cannot parse '{BAD_N}'"):
        raise TestFailure(f'colltestd refused the lists with unexpected messages: {want}')
    fill_and_submit(browser, label, m_list=BAD_M, n_list=BAD_N)
    shown = browser.wait_for(
        '''(() => { const m = document.getElementById('f-m-error'), n = document.getElementById('f-n-error');
             return !m.hidden && !n.hidden && m.offsetParent !== null &&
                    document.getElementById('sweep-submit').disabled === false
               ? {m: m.textContent, n: n.textContent,
                  invalid: document.getElementById('f-m').getAttribute('aria-invalid')} : null; })()''',
        'the refusals next to the m and n fields', 15)
    if shown['m'] != want['m'] or shown['n'] != want['n'] or shown['invalid'] != 'true':
        raise TestFailure(f'the form shows {shown}, expected the server\'s messages {want}')
    if browser.eval("location.hash") == '#results' or browser.eval("document.getElementById('run-id').textContent.startsWith('r-')"):
        raise TestFailure('a sweep started although its lists were refused')
    # Chromium logs each refused request ("the server responded with a status of 400") as an
    # error; those two are expected, any other error still fails the test at its end.
    time.sleep(0.3)
    browser.eval('0')  # reads the events that arrived meanwhile
    refused = [e for e in browser.console if 'status of 400' in e and 'api/v1/sizes:parse' in e]
    if len(refused) > 2:
        raise TestFailure(f'more refused requests than the two fields: {refused}')
    browser.console = [e for e in browser.console if e not in refused]
    log(f'refused lists shown next to their fields: {shown["m"]!r}; {shown["n"]!r}')


def private_plugin_copy(fixture_dir, work_dirs):
    """The fixture copied into a fresh folder of its own: the worker refuses a plugin that anybody
    but its owner could replace (the file, or a folder above it, writable by others; /tmp above it
    passes by its sticky bit). Returns (path, sha256 of the file); the folder goes to work_dirs."""
    source = os.path.join(fixture_dir, f'{PLUGIN}.so')
    if not os.path.isfile(source):
        raise TestFailure(f'no plugin fixture {source} (build it: cmake --build build --target '
                          'colltest_fixture_oneshot_norm)')
    folder = tempfile.mkdtemp(prefix='colltest-browser-plugin-')
    work_dirs.append(folder)
    os.chmod(folder, 0o755)
    path = os.path.join(folder, f'{PLUGIN}.so')
    shutil.copyfile(source, path)
    os.chmod(path, 0o644)
    with open(path, 'rb') as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    return path, sha


def check_plugin_listed(browser, sha):
    """The sweep view lists the plugin colltestd loaded (variant, version, the first 12 hex digits
    of its SHA-256, loaded) and offers it, unticked, among the variants as "plugin:NAME"."""
    browser.wait_for("!!document.querySelector('#plugins-table tbody tr') && "
                     "!!document.querySelector('#f-variants input[name=plugin]')",
                     'the kernel plugin listed and offered', 15)
    shown = browser.eval('''(() => {
        const table = document.getElementById('plugins-table');
        return {visible: table.offsetParent !== null,
                empty: !document.getElementById('plugins-empty').hidden,
                rows: [...table.querySelectorAll('tbody tr')].map((r) =>
                  ({cells: [...r.cells].map((c) => c.textContent), loaded: r.dataset.loaded})),
                boxes: [...document.querySelectorAll('#f-variants input[name=plugin]')].map((b) =>
                  ({label: b.parentElement.textContent.trim(), value: b.value, checked: b.checked}))}; })()''')
    want = [{'cells': [PLUGIN_VARIANT, PLUGIN_VERSION, sha[:12], 'loaded'], 'loaded': 'true'}]
    if not shown['visible'] or shown['empty'] or shown['rows'] != want:
        raise TestFailure(f'kernel plugins shown as {shown}, expected the rows {want}')
    if shown['boxes'] != [{'label': PLUGIN_VARIANT, 'value': PLUGIN, 'checked': False}]:
        raise TestFailure(f'plugin choices {shown["boxes"]}, expected {PLUGIN_VARIANT} unticked')
    log(f'kernel plugin listed: {shown["rows"][0]["cells"]}; offered unticked')


def result_rows(browser):
    return browser.eval('''[...document.querySelectorAll('#results-table tbody tr')].map((r) =>
        ({status: r.dataset.status, variant: r.cells[0].textContent, dataVariant: r.dataset.variant,
          title: r.cells[0].title, m: Number(r.cells[3].textContent)}))''')


def check_plugin_rows(rows, sha, what):
    """Rows of the plugin sweep: (variant, m) as asked, every one OK, the plugin's named
    "plugin:NAME" with its build in the cell's title."""
    seen = sorted((r['variant'], r['m']) for r in rows)
    want = sorted((v, m) for v in PLUGIN_SWEEP_VARIANTS for m in PLUGIN_M_VALUES)
    if seen != want:
        raise TestFailure(f'{what}: results table (variant, m) = {seen}, expected {want}')
    bad = [r for r in rows if r['status'] != 'OK' or r['dataVariant'] != r['variant']]
    if bad:
        raise TestFailure(f'{what}: rows not OK (or data-variant not their cell): {bad}')
    build = f'{PLUGIN_VERSION}, sha256 {sha[:12]}'
    untitled = [r for r in rows if r['variant'] == PLUGIN_VARIANT and r['title'] != build]
    if untitled:
        raise TestFailure(f'{what}: plugin rows without the title {build!r}: {untitled}')


def check_plugin_sweep(browser, url, label, sha, timeout, t0):
    """Ticks the plugin with one_stage in the form and runs them: rows "plugin:oneshot_norm" OK,
    a series each, the spec's plugins; two plugins stay two series; the comparison names it.
    Returns the run's id."""
    before = browser.eval("document.getElementById('run-id').textContent")
    browser.eval("location.hash = '#sweep'")
    browser.wait_for("!document.getElementById('view-sweep').hidden && "
                     "!!document.querySelector('#f-variants input[name=plugin]')",
                     'the sweep form with the plugin', 15)
    fill_and_submit(browser, f'{label}-plugin', m_list=PLUGIN_M_LIST, n_list=PLUGIN_N_LIST,
                    variants=PLUGIN_SWEEP_VARIANTS, epilogues=('none',))
    browser.wait_for(f"document.getElementById('run-id').textContent.startsWith('r-') && "
                     f"document.getElementById('run-id').textContent !== {json.dumps(before)}",
                     'the plugin sweep to start', 15)
    # The plugin is one more variant: a form that did not send it starts a run of fewer cases.
    total = browser.wait_for("document.getElementById('run-progress').dataset.total !== '0' && "
                             "document.getElementById('run-progress').dataset.total",
                             'the plugin sweep\'s total', 15)
    if total != str(PLUGIN_CASES):
        raise TestFailure(f'the plugin sweep has {total} cases, expected {PLUGIN_CASES} '
                          f'({PLUGIN_SWEEP_VARIANTS} x m {PLUGIN_M_VALUES})')
    run_id = wait_for_done_run(browser, PLUGIN_CASES, timeout, t0)
    check_plugin_rows(result_rows(browser), sha, 'plugin sweep')
    plot = browser.eval("document.getElementById('latency-plot').dataset.seriesNames")
    if sorted(plot.split(',')) != sorted(PLUGIN_SWEEP_VARIANTS):
        raise TestFailure(f'latency plot series {plot!r}, expected {PLUGIN_SWEEP_VARIANTS}')
    meta = browser.eval("document.getElementById('run-meta').textContent")
    if f'{PLUGIN_VARIANT} {PLUGIN_VERSION} (sha256 {sha[:12]})' not in meta:
        raise TestFailure(f'the run details do not name the plugin\'s build: {meta!r}')

    # The form sent the plugin as SweepSpec.plugins, and the record keeps the build that ran.
    with urllib.request.urlopen(f'{url}api/v1/runs/{run_id}', timeout=10) as reply:
        run = json.loads(reply.read())
    if run['spec'].get('plugins') != [PLUGIN] or run['spec'].get('variants') != ['VARIANT_ONE_STAGE']:
        raise TestFailure(f'the run\'s spec has plugins {run["spec"].get("plugins")} and variants '
                          f'{run["spec"].get("variants")}, expected [{PLUGIN!r}] and one_stage')
    builds = [c.get('plugin') for c in run['cases'] if c.get('variant') == 'VARIANT_PLUGIN']
    want_build = {'name': PLUGIN, 'version': PLUGIN_VERSION, 'sha256': sha}
    if builds != [want_build] * len(PLUGIN_M_VALUES):
        raise TestFailure(f'the plugin cases record {builds}, expected {want_build} each')

    # A second plugin's cases (the same run with them added, rendered as any run is) are a row
    # and a series of their own, not merged into the first's.
    other = browser.eval('''(() => {
        const original = state.shown;
        const run = JSON.parse(JSON.stringify(original));
        const extra = run.cases.filter((c) => c.variant === 'VARIANT_PLUGIN').map((c, k) =>
          ({...c, index: 100 + k, plugin: {...c.plugin, name: 'other_norm', sha256: 'ab'.repeat(32)}}));
        run.cases.push(...extra);
        showRun(run);
        const shown = {series: document.getElementById('latency-plot').dataset.seriesNames,
                       rows: [...document.querySelectorAll('#results-table tbody tr')].map((r) => r.cells[0].textContent)};
        showRun(original);
        return shown; })()''')
    want_series = sorted(PLUGIN_SWEEP_VARIANTS + ['plugin:other_norm'])
    if sorted(other['series'].split(',')) != want_series or other['rows'].count('plugin:other_norm') != 2:
        raise TestFailure(f'two plugins: series {other["series"]!r} and rows {other["rows"]}, '
                          f'expected the series {want_series} and two plugin:other_norm rows')

    # The comparison (the run with itself, through the page's own runCompare) names the plugin.
    browser.eval(f'runCompare({{run_a: {json.dumps(run_id)}, run_b: {json.dumps(run_id)}}})')
    compared = browser.wait_for('''(() => { const rows = [...document.querySelectorAll('#compare-table tbody tr')];
        return rows.length ? rows.map((r) => ({variant: r.cells[0].textContent, title: r.cells[0].title,
                                                m: Number(r.cells[3].textContent)})) : null; })()''',
        'the comparison of the plugin run', 15)
    seen = sorted((r['variant'], r['m']) for r in compared)
    want = sorted((v, m) for v in PLUGIN_SWEEP_VARIANTS for m in PLUGIN_M_VALUES)
    if seen != want:
        raise TestFailure(f'comparison rows (variant, m) = {seen}, expected {want}')
    titles = {r['title'] for r in compared if r['variant'] == PLUGIN_VARIANT}
    build = f'{PLUGIN_VERSION}, sha256 {sha[:12]}'
    if titles != {f'A: {build}\nB: {build}'}:
        raise TestFailure(f'comparison plugin rows titled {titles}, expected both builds {build!r}')
    log(f'plugin sweep {run_id}: {PLUGIN_CASES} rows OK, series {plot}; a second plugin stays '
        'apart; the comparison names it')
    return run_id


def wait_history_row(browser, run_id, timeout=15):
    browser.wait_for(
        f'''(() => {{ const r = document.querySelector('#history-table tr[data-run-id={json.dumps(run_id)}]');
             return r ? r.dataset.state : ''; }})()''', f'run {run_id} in the history', timeout)
    return browser.eval(f'''document.querySelector('#history-table tr[data-run-id={json.dumps(run_id)}]').dataset.state''')


def run_test(args, websocket_module, work):
    label = f'browser-test-{os.getpid()}'
    state_dir = os.path.join(work, 'state')
    os.makedirs(state_dir)
    daemon_log = os.path.join(work, 'colltestd.log')
    daemons = []
    browser = None
    private_dirs = []
    try:
        t0 = time.monotonic()
        plugin_path, plugin_sha = private_plugin_copy(args.plugin_fixture_dir, private_dirs)
        plugin_args = ['--kernel-plugin', plugin_path]
        daemons.append(Daemon(args.bin_dir, state_dir, daemon_log, plugin_args))
        url = daemons[-1].wait_ready(30)
        log(f'colltestd serves {url} ({time.monotonic() - t0:.1f} s)')

        browser = Browser(args.chromium, os.path.join(work, 'profile'), websocket_module)
        for domain in ('Page', 'Runtime', 'Log'):
            browser.call(f'{domain}.enable')
        browser.navigate(url)
        browser.wait_for("document.getElementById('server-backend').textContent === 'cpu' && "
                         "document.querySelectorAll('#f-variants input').length > 0",
                         'the header and the variant choices', 15)
        log('page loaded: ' + browser.eval("document.getElementById('server-info').innerText.replace(/\\s+/g, ' ')"))
        check_plugin_listed(browser, plugin_sha)

        # Records (state, rows) each time the progress changes: rows must arrive while RUNNING,
        # streamed, not only from the final record.
        browser.eval('''window.__progress = [];
            new MutationObserver(() => window.__progress.push([
                document.getElementById('run-progress').dataset.state,
                document.querySelectorAll('#results-table tbody tr').length]))
              .observe(document.getElementById('run-progress'), {attributes: true});''')
        check_refused_lists(browser, url, label)
        fill_and_submit(browser, label)
        browser.wait_for("document.getElementById('run-id').textContent.startsWith('(') === false && "
                         "document.getElementById('run-progress').dataset.total !== '0'",
                         'the run to start (run id and total)', 15)
        if not browser.eval("document.getElementById('f-m-error').hidden && document.getElementById('f-n-error').hidden"):
            raise TestFailure('the fields still show refusals after an accepted sweep')
        run_id = wait_for_done_run(browser, CASES, args.timeout, t0)
        check_results(browser)
        check_epilogue(url, run_id)
        seen = browser.eval('window.__progress')
        live_rows = sorted({rows for state, rows in seen if state == 'RUNNING' and rows > 0})
        if not live_rows:
            raise TestFailure(f'no case row appeared while the run was RUNNING (progress seen: {seen})')
        log(f'rows shown while RUNNING: {live_rows}')
        browser.screenshot(args.screenshot)
        log(f'screenshot {args.screenshot}')
        if args.docs_screenshot:
            browser.screenshot(args.docs_screenshot)
            log(f'screenshot {args.docs_screenshot}')
        plugin_run_id = check_plugin_sweep(browser, url, label, plugin_sha, args.timeout, t0)

        browser.eval("location.hash = '#history'")
        st = wait_history_row(browser, run_id)
        if st != 'DONE':
            raise TestFailure(f'history shows run {run_id} as {st}, expected DONE')
        log('the run is in the history')

        # The history survives a restart: same --state-dir, new ports.
        code = daemons[-1].terminate()
        log(f'colltestd stopped by SIGTERM (exit {code})')
        daemons.append(Daemon(args.bin_dir, state_dir, daemon_log, plugin_args))
        url2 = daemons[-1].wait_ready(30)
        log(f'colltestd restarted: {url2}')
        browser.navigate(url2 + '#history')
        st = wait_history_row(browser, run_id)
        if st != 'DONE':
            raise TestFailure(f'after the restart the history shows run {run_id} as {st}, expected DONE')
        browser.eval(f"document.querySelector('#history-table tr[data-run-id={json.dumps(run_id)}] a').click()")
        browser.wait_for(f"document.getElementById('run-id').textContent === {json.dumps(run_id)} && "
                         f"document.querySelectorAll('#results-table tbody tr').length === {CASES} && "
                         f"document.getElementById('latency-plot').dataset.seriesCount === '{len(VARIANTS)}'",
                         'the run opened from the history after the restart', 15)
        log('after the restart the run is in the history and opens with every case')
        # The plugin run from the history: its cases still name the plugin and its build.
        browser.eval(f"location.hash = '#run=' + encodeURIComponent({json.dumps(plugin_run_id)})")
        browser.wait_for(f"document.getElementById('run-id').textContent === {json.dumps(plugin_run_id)} && "
                         f"document.querySelectorAll('#results-table tbody tr').length === {PLUGIN_CASES}",
                         'the plugin run opened from the history after the restart', 15)
        check_plugin_rows(result_rows(browser), plugin_sha, 'the plugin run after the restart')
        log(f'after the restart the plugin run opens with its rows named {PLUGIN_VARIANT}')
        check_shared_gpu_note(browser)
        check_untimed_cells(browser)

        return passed_if_console_clean(browser, t0)
    except Exception as e:
        print(f'FAIL: {e}', file=sys.stderr, flush=True)
        report_failure(browser, daemons, args)
        return 1
    finally:
        if browser:
            browser.close()
        for d in daemons:
            d.kill()
        for folder in private_dirs:
            shutil.rmtree(folder, ignore_errors=True)


def report_failure(browser, daemons, args):
    if browser:
        try:
            box = browser.eval("(() => { const b = document.getElementById('error-box');"
                               " return b && !b.hidden ? b.innerText : '(hidden)'; })()", timeout=5)
            print(f'error box: {box}', file=sys.stderr)
            failed = os.path.splitext(args.screenshot)[0] + '-failure.png'
            browser.screenshot(failed)
            print(f'screenshot of the failure: {failed}', file=sys.stderr)
        except Exception as e:
            print(f'(could not read the page: {e})', file=sys.stderr)
        print('browser console errors:\n  ' + ('\n  '.join(browser.console) or '(none)'), file=sys.stderr)
    if daemons:
        print(f'colltestd log (last lines):\n{daemons[-1].log_tail()}', file=sys.stderr)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--bin-dir', default=os.path.join(repo, 'build', 'bin'),
                        help='folder with colltestd and colltest-worker')
    parser.add_argument('--screenshot', default=os.environ.get('COLLTEST_DASHBOARD_SCREENSHOT'),
                        help='PNG of the results view (default: $COLLTEST_DASHBOARD_SCREENSHOT or '
                             'BIN_DIR/../dashboard.png)')
    parser.add_argument('--docs-screenshot', help='also save the screenshot here (docs/dashboard.png)')
    parser.add_argument('--chromium', default=os.environ.get('CHROMIUM', 'chromium'))
    parser.add_argument('--timeout', type=float, default=60, help='seconds for the sweep to finish')
    parser.add_argument('--plugin-fixture-dir', default=os.path.join(repo, 'build', 'plugin-fixtures'),
                        help='folder with the kernel plugin fixture oneshot_norm.so (CMake: '
                             'COLLTEST_PLUGIN_FIXTURE_DIR)')
    args = parser.parse_args()
    if not args.screenshot:
        args.screenshot = os.path.join(os.path.dirname(os.path.abspath(args.bin_dir)), 'dashboard.png')

    return run_with_browser_tools(args, run_test, 'colltest-browser-')


def wait_for_done_run(browser, cases, timeout, t0):
    """Waits for the page's run to be DONE with `cases` result rows; its run id."""
    browser.wait_for(
        f"document.getElementById('run-progress').dataset.state === 'DONE' && "
        f"document.querySelectorAll('#results-table tbody tr').length === {cases}",
        f'{cases} result rows and DONE', timeout)
    run_id = browser.eval("document.getElementById('run-id').textContent")
    log(f'run {run_id} DONE ({time.monotonic() - t0:.1f} s)')
    return run_id


def passed_if_console_clean(browser, t0):
    """The end of a page test: an error the page logged fails it, else PASS (exit status 0)."""
    if browser.console:
        raise TestFailure('the browser reported errors:\n  ' + '\n  '.join(browser.console))
    log(f'PASS ({time.monotonic() - t0:.1f} s)')
    return 0


def run_with_browser_tools(args, run, prefix):
    """run(args, websocket, work) with the websocket module, args.chromium resolved to its path and
    a work folder removed afterwards. Missing tools are a failure, not a skip: CI installs them
    (scripts/setup.sh)."""
    try:
        import websocket
    except ImportError:
        print(f'FAIL: the Python module "websocket" is missing for {sys.executable}: '
              'apt-get install python3-websocket (scripts/setup.sh), and run this test with '
              '/usr/bin/python3', file=sys.stderr)
        return 1
    chromium = shutil.which(args.chromium)
    if not chromium:
        print(f'FAIL: no chromium ({args.chromium!r} not found): apt-get install chromium '
              '(scripts/setup.sh)', file=sys.stderr)
        return 1
    args.chromium = chromium
    work = tempfile.mkdtemp(prefix=prefix)
    try:
        return run(args, websocket, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

if __name__ == '__main__':
    sys.exit(main())
