"""The statistics-window policy (collector/stats_windows.py): when a window opens and closes."""

from __future__ import annotations

from iowitness.collector import stats_windows
from iowitness.collector.stats_windows import (
    MIN_CALLS,
    PERIOD_S,
    WINDOW_MAX_S,
    WINDOW_S,
    Windows,
)


def test_the_first_window_is_due_at_the_start_and_the_next_one_a_period_after_it_opened():
    # GIVEN windows that start at t = 10 s
    w = Windows(10.0)
    # WHEN the first one opens at once and closes after its length with enough calls
    assert w.due(10.0) and not w.is_open
    w.opened(10.0, calls=500)
    assert not w.due(10.0) and not w.done(10.0 + WINDOW_S / 2, calls=500 + MIN_CALLS)
    end = 10.0 + WINDOW_S + 1e-9
    assert w.done(end, calls=500 + MIN_CALLS)
    calls, seconds = w.closed(end, calls=500 + MIN_CALLS)
    # THEN it timed the calls made inside it, and the next one is due one period after it opened
    assert calls == MIN_CALLS and abs(seconds - WINDOW_S) < 1e-6
    assert not w.due(10.0 + PERIOD_S - 0.01) and w.due(10.0 + PERIOD_S)


def test_a_window_waits_for_calls_but_never_past_its_maximum():
    # GIVEN an open window that has timed fewer calls than the policy asks for
    w = Windows(0.0)
    w.opened(0.0, calls=0)
    # THEN its length alone does not close it, its maximum does
    assert not w.done(WINDOW_S * 2, calls=MIN_CALLS - 1)
    assert w.done(WINDOW_MAX_S, calls=0)
    # AND it looks again soon, rather than sleeping a whole poll
    assert w.to_edge(WINDOW_S * 2) < 0.1


def test_the_help_text_is_the_policy_in_words():
    # GIVEN the policy's numbers WHEN said in words THEN each one is there, once
    text = stats_windows.policy_text()
    assert f"every {PERIOD_S:g} s" in text and f"{MIN_CALLS:,} calls" in text and f"at most {WINDOW_MAX_S:g} s" in text
