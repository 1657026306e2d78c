#!/usr/bin/python3
"""The dashboard tells the epilogues of a run apart, in headless Chromium.

Starts colltestd (cpu backend) as dashboard_test.py does, runs a sweep from the form with two
epilogues (none and fp8_token, keep normed), one variant, two m, and checks: the results table's
epilogue column names each case's epilogue ("none", "fp8_token+normed") and its quant column
the codes' comparison; the latency plot has one series per epilogue, named in its legend; the
crossover text is given per epilogue; a comparison (the run with itself, through the page's own
runCompare) shows the epilogue of each row; and the same run with only its `none` cases looks as
a run without epilogues (no epilogue column, series named by the variant alone).

Run with Debian's python: /usr/bin/python3 tests/browser/epilogue_test.py --bin-dir build/bin
Needs the packages chromium and python3-websocket (scripts/setup.sh); without them it FAILS.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # the import below writes nothing into the source tree
from dashboard_test import (Browser, Daemon, TestFailure, fill_and_submit, log,
                            passed_if_console_clean, run_with_browser_tools,
                            wait_for_done_run)

VARIANT = 'one_stage'
EPILOGUES = ['none', 'fp8_token']
# keep_normed only changes what a quantising epilogue writes: none stays "none".
LABELS = ['none', 'fp8_token+normed']
M_LIST = '1,8'
M_VALUES = [1, 8]
CASES = len(M_VALUES) * len(EPILOGUES)


def check_table(browser):
    """One row per (epilogue, m), OK; the epilogue column shown and right; quant cells: '-' for
    none, '0' with its figures in the title for fp8_token."""
    table = browser.eval('''(() => {
        const heads = [...document.querySelectorAll('#results-table thead th')];
        const shown = (c) => getComputedStyle(c).display !== 'none';
        const col = (name) => heads.findIndex((h) => h.textContent === name);
        return {epilogueShown: shown(heads[col('epilogue')]), quantShown: shown(heads[col('quant')]),
          rows: [...document.querySelectorAll('#results-table tbody tr')].map((r) => ({
            status: r.dataset.status, dataEpilogue: r.dataset.epilogue, m: r.cells[col('m')].textContent,
            epilogue: r.cells[col('epilogue')].textContent, quant: r.cells[col('quant')].textContent,
            quantTitle: r.cells[col('quant')].title}))}; })()''')
    if not table['epilogueShown'] or not table['quantShown']:
        raise TestFailure(f'a run with fp8_token cases hides the epilogue or quant column: {table}')
    rows = table['rows']
    if any(r['status'] != 'OK' for r in rows):
        raise TestFailure(f'cases not OK: {rows}')
    seen = sorted((r['epilogue'], int(r['m'])) for r in rows)
    want = sorted((e, m) for e in LABELS for m in M_VALUES)
    if seen != want:
        raise TestFailure(f'results table (epilogue, m) = {seen}, expected {want}')
    if any(r['dataEpilogue'] != r['epilogue'] for r in rows):
        raise TestFailure(f'rows\' data-epilogue differs from their cell: {rows}')
    for r in rows:
        quantised = r['epilogue'] != 'none'
        if quantised and (r['quant'] != '0' or 'codes:' not in r['quantTitle']):
            raise TestFailure(f'fp8_token row: quant cell {r["quant"]!r} title {r["quantTitle"]!r}, '
                              'expected 0 with the codes\' figures')
        if not quantised and (r['quant'] != '-' or r['quantTitle']):
            raise TestFailure(f'none row: quant cell {r["quant"]!r} title {r["quantTitle"]!r}, expected -')
    log(f'table: {seen}; quant cells {sorted({r["quant"] for r in rows})}')


def check_plot(browser):
    """The latency plot: one series per epilogue, the legend naming each."""
    want = [f'{VARIANT} {label}' for label in LABELS]
    plot = browser.eval('''(() => { const p = document.getElementById('latency-plot');
        return {count: p.dataset.seriesCount, names: p.dataset.seriesNames,
                legend: [...p.querySelectorAll('.u-legend .u-series .u-label')].map((x) => x.textContent),
                crossover: [...document.querySelectorAll('#crossover li')].map((li) =>
                  ({epilogue: li.dataset.epilogue, text: li.textContent}))}; })()''')
    if plot['count'] != str(len(LABELS)) or plot['names'].split(',') != want:
        raise TestFailure(f'latency plot series {plot["names"]!r} ({plot["count"]}), expected {want}')
    if [x for x in plot['legend'] if x != 'm'] != want:
        raise TestFailure(f'latency plot legend {plot["legend"]}, expected m and {want}')
    if sorted(c['epilogue'] for c in plot['crossover']) != sorted(LABELS) or \
            not all(c['text'].startswith(c['epilogue'] + ': ') for c in plot['crossover']):
        raise TestFailure(f'crossover text not given per epilogue: {plot["crossover"]}')
    log(f'latency plot legend {plot["legend"]}; crossover {[c["text"] for c in plot["crossover"]]}')


def check_compare(browser, run_id):
    """The page's comparison of the run with itself: every row names its epilogue."""
    browser.eval(f'runCompare({{run_a: {json.dumps(run_id)}, run_b: {json.dumps(run_id)}}})')
    rows = browser.wait_for('''(() => {
        const rows = [...document.querySelectorAll('#compare-table tbody tr')];
        const heads = [...document.querySelectorAll('#compare-table thead th')];
        const col = heads.findIndex((h) => h.textContent === 'epilogue');
        return rows.length && getComputedStyle(heads[col]).display !== 'none'
          ? rows.map((r) => [r.dataset.epilogue, r.cells[col].textContent]) : null; })()''',
                            'the comparison rows', 15)
    want = sorted([label, label] for label in LABELS for _ in M_VALUES)
    if sorted(rows) != want:
        raise TestFailure(f'compare rows (data-epilogue, cell) = {rows}, expected {want}')
    log(f'compare: {len(rows)} rows, epilogues {sorted({r[1] for r in rows})}')


def check_none_only(browser):
    """The run's `none` cases alone, rendered by the page's showRun: as a run without epilogues."""
    shown = browser.eval('''(() => {
        const run = JSON.parse(JSON.stringify(state.shown));
        run.cases = run.cases.filter((c) => epilogueName(c.epilogue) === 'none');
        showRun(run);
        const head = [...document.querySelectorAll('#results-table thead th')].find((h) => h.textContent === 'epilogue');
        return {epilogueShown: getComputedStyle(head).display !== 'none',
                names: document.getElementById('latency-plot').dataset.seriesNames}; })()''')
    if shown['epilogueShown'] or shown['names'] != VARIANT:
        raise TestFailure(f'a run of none cases only does not look as without epilogues: {shown}')
    log('none cases alone: no epilogue column, series named by the variant alone')


def run_test(args, websocket_module, work):
    state_dir = os.path.join(work, 'state')
    os.makedirs(state_dir)
    daemon = None
    browser = None
    try:
        t0 = time.monotonic()
        daemon = Daemon(args.bin_dir, state_dir, os.path.join(work, 'colltestd.log'))
        url = daemon.wait_ready(30)
        browser = Browser(args.chromium, os.path.join(work, 'profile'), websocket_module)
        for domain in ('Page', 'Runtime', 'Log'):
            browser.call(f'{domain}.enable')
        browser.navigate(url)
        browser.wait_for("document.querySelectorAll('#f-variants input').length > 0",
                         'the variant choices', 15)
        fill_and_submit(browser, f'epilogue-test-{os.getpid()}', m_list=M_LIST, n_list='1024',
                        variants=[VARIANT], epilogues=EPILOGUES, keep_normed=True)
        run_id = wait_for_done_run(browser, CASES, args.timeout, t0)
        check_table(browser)
        check_plot(browser)
        check_compare(browser, run_id)
        check_none_only(browser)
        return passed_if_console_clean(browser, t0)
    except Exception as e:
        print(f'FAIL: {e}', file=sys.stderr, flush=True)
        if browser:
            print('browser console errors:\n  ' + ('\n  '.join(browser.console) or '(none)'),
                  file=sys.stderr)
        if daemon:
            print(f'colltestd log (last lines):\n{daemon.log_tail()}', file=sys.stderr)
        return 1
    finally:
        if browser:
            browser.close()
        if daemon:
            daemon.kill()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--bin-dir', default=os.path.join(os.path.dirname(os.path.dirname(here)), 'build', 'bin'),
                        help='folder with colltestd and colltest-worker')
    parser.add_argument('--chromium', default=os.environ.get('CHROMIUM', 'chromium'))
    parser.add_argument('--timeout', type=float, default=60, help='seconds for the sweep to finish')
    args = parser.parse_args()
    return run_with_browser_tools(args, run_test, 'colltest-browser-epilogue-')

if __name__ == '__main__':
    sys.exit(main())
