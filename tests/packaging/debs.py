"""The .debs of a build: `cpack -G DEB` into a directory, the packages found by name; and the
temporary directory the package tests work in."""

import glob
import os
import shutil
import subprocess
import tempfile


def in_work_dir(prefix, body):
    """body(work_dir), an exit status, run in a temporary directory that is removed afterwards;
    an AssertionError, a failed or timed-out command is printed as FAIL and gives 1."""
    work_dir = tempfile.mkdtemp(prefix=prefix)
    try:
        return body(work_dir)
    except (AssertionError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        print("FAIL:", error)
        return 1
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


def make(cpack, build_dir, out_dir, made_dir=None):
    """Runs cpack into out_dir, or reads the .debs the fixture test packaging.debs made into
    made_dir (one cpack for every test of the label); returns {package name: .deb path}. Raises
    AssertionError when cpack fails or there is no package."""
    if made_dir:
        out_dir = made_dir
    else:
        result = subprocess.run([cpack, "-G", "DEB", "-B", out_dir], cwd=build_dir,
                                capture_output=True, text=True)
        assert result.returncode == 0, (
            f"cpack exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    debs = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "*.deb"))):
        debs[os.path.basename(path).split("_")[0]] = path
    assert debs, f"cpack made no .deb in {out_dir}"
    return debs
