"""SIGINT and SIGTERM in iowitness's start-up window (its modules load for a second or more
before a command can handle a signal): one line and 128 + the signal, as later in the run,
never a traceback (SIGINT) or a silent death (SIGTERM) (issue 32).

The signal is sent once the process is known to be loading iowitness's modules (numpy is
mapped: the command modules are being imported inside main()), not after a fixed delay, so
the test holds under load. What cannot be covered: the interpreter's own start (about 40 ms
here), before any iowitness code runs.
"""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from tests.support.cli import IOWITNESS

pytestmark = pytest.mark.kernel


def _loading(pid: int, limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/maps") as f:
                if "numpy" in f.read():
                    return
        except OSError:
            return   # it ended already: the assertions say how
        time.sleep(0.002)
    raise AssertionError("iowitness never started loading its modules")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_iowitness_starts_gives_one_line_and_its_exit_code(tmp_path, sig):
    # GIVEN `iowitness run` starting, its modules loading
    proc = subprocess.Popen([*IOWITNESS, "run", "-q", "-o", str(tmp_path / "t.iwt"), "--", "sleep", "30"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _loading(proc.pid)
    # WHEN the signal comes
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    # THEN it exits 128 + the signal with one line saying so, no traceback, nothing started
    assert proc.returncode == 128 + sig, err
    assert err.count("\n") == 1 and err.startswith("iowitness: ") and "Traceback" not in err
    assert ("interrupted" if sig == signal.SIGINT else "terminated") in err
