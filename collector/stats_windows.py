"""When the collector has the kernel time iowitness's BPF programs: the statistics-window policy.

BPF statistics (the probe's own run time, measured by the kernel) are on in windows, one every
PERIOD_S seconds, the first at the start. While they are on, a tight pread loop runs at
0.65-0.75 of its traced rate (two clock reads per program run), so a window lasts WINDOW_S
seconds (2 % of a long run), longer only until it has timed MIN_CALLS traced calls (a benchmark
that starts slowly, or calls rarely), and never more than WINDOW_MAX_S: every report can state
what a call cost. Many calls, because the window also times the programs' runs on the
benchmark's start-up syscalls: with 1,000, a 3 s fio run's per-call ceiling read 593-3,240 ns;
with 10,000, 216-253 ns.

This module is the one place the policy is stated: the recorder (collector/session.py) runs
it, `run --help` and `attach --help` describe it with `policy_text()`, and the trace says which
mode measured the probe (traceformat.STATS_*) so that the analysis never reads it back from prose.
"""

from __future__ import annotations

WINDOW_S, WINDOW_MAX_S, PERIOD_S = 0.1, 1.0, 5.0
MIN_CALLS = 10_000
RECHECK_S = 0.05   # how often a window that still waits for calls looks again


def policy_text() -> str:
    """The policy in words: 'in a window every 5 s: 0.1 s, longer until 10,000 calls are timed, at most 1 s'."""
    return (f"in a window every {PERIOD_S:g} s: {WINDOW_S:g} s, longer until {MIN_CALLS:,} calls are timed, "
            f"at most {WINDOW_MAX_S:g} s")


class Windows:
    """Where the windows are: the recorder asks when to open and close one, and says when it did."""

    def __init__(self, start: float):
        self.open_since: float | None = None
        self.calls_at_open = 0
        self.next_open = start

    @property
    def is_open(self) -> bool:
        return self.open_since is not None

    def due(self, now: float) -> bool:
        """No window is open and the next one should be."""
        return self.open_since is None and now >= self.next_open

    def done(self, now: float, calls: int) -> bool:
        """The open window has lasted long enough and timed enough calls (or its maximum)."""
        open_for = now - self.open_since
        return open_for >= WINDOW_MAX_S or (open_for >= WINDOW_S and calls - self.calls_at_open >= MIN_CALLS)

    def opened(self, now: float, calls: int) -> None:
        self.open_since, self.calls_at_open = now, calls

    def closed(self, now: float, calls: int) -> tuple[int, float]:
        """Close the open window; (calls made inside it, seconds it lasted)."""
        inside = (calls - self.calls_at_open, now - self.open_since)
        self.next_open = self.open_since + PERIOD_S
        self.open_since = None
        return inside

    def to_edge(self, now: float) -> float:
        """Seconds until a window should open or be looked at again."""
        if self.open_since is None:
            edge = self.next_open - now
        else:
            open_for = now - self.open_since
            edge = WINDOW_S - open_for if open_for < WINDOW_S else RECHECK_S
        return max(edge, 0.0) + 0.001   # just past the edge, where the recorder sees it
