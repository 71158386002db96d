"""`show --events --slower MS`: the calls that took at least MS milliseconds, as bcc's
fileslower MS lists them. Ground truth: the latencies the synthetic run was written with
(tests/support/run_groups.py draws them from its seed; the test draws the same)."""

from __future__ import annotations

import numpy as np

from tests.support.cli import iowitness
from tests.support.run_groups import write_run


def test_slower_keeps_the_calls_at_or_over_the_threshold(tmp_path):
    # GIVEN 200 writes whose latencies scatter around 50 µs
    path = tmp_path / "w.iwt"
    write_run(path, 50e3, seed=5, sigma=0.8, calls=200)
    drawn = np.maximum(1000, np.random.default_rng(5).lognormal(np.log(50e3), 0.8, 200)).astype(int)
    for ms in (0.1, 0.2):
        # WHEN the calls of MS or more are listed
        lines = iowitness("show", "--events", "--slower", str(ms), str(path)).stdout.splitlines()[1:]
        # THEN they are the writes drawn at MS or more, each with its latency
        want = sorted(round(x / 1e3, 1) for x in drawn if x >= ms * 1e6)
        assert want and sorted(float(line.split()[8]) for line in lines) == want
        assert all(line.split()[3] == "write" for line in lines)
    # and --slower 0 keeps every call; a threshold that is no number is one line
    assert len(iowitness("show", "--events", "--slower", "0", str(path)).stdout.splitlines()) == 1 + 202
    bad = iowitness("show", "--events", "--slower", "-1", str(path), check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "give milliseconds" in bad.stderr
