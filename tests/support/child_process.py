"""Run a snippet in a fresh interpreter that imports the same lucid as the tests.

Checks that once crashed the interpreter (segfaults) run here, so a regression fails one test
with the child's stderr instead of killing the whole suite.
"""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

import lucid

LUCID_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(lucid.__file__)))

_PRELUDE = f"""
import faulthandler, sys
faulthandler.enable()
import lucid
assert lucid.__file__ == {os.path.abspath(lucid.__file__)!r}, lucid.__file__
"""


def run_child(code, args=(), timeout=120):
    """Run code (dedented) in a child interpreter; return its stdout, or fail the test with the
    child's stderr when it exits non-zero or dies from a signal."""
    env = dict(os.environ)
    env["PYTHONPATH"] = LUCID_ROOT + (os.pathsep + env["PYTHONPATH"]
                                      if env.get("PYTHONPATH") else "")
    script = _PRELUDE + textwrap.dedent(code)
    try:
        proc = subprocess.run([sys.executable, "-c", script, *map(str, args)],
                              capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=LUCID_ROOT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"child interpreter timed out after {timeout} s\n--- stderr\n{e.stderr}",
                    pytrace=False)
    rc = proc.returncode
    if rc != 0:
        how = f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
        pytest.fail(f"child interpreter failed ({how})\n--- stdout\n{proc.stdout[-3000:]}\n"
                    f"--- stderr\n{proc.stderr[-6000:]}", pytrace=False)
    return proc.stdout
