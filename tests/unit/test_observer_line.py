"""The observer line's total probe time: the timed windows scaled two ways (analysis/measure/observer.py)."""

from __future__ import annotations

from types import SimpleNamespace

from iowitness.analysis.measure import observer


def _trace(probe: dict, calls: int, seconds: float):
    return SimpleNamespace(meta={"clock_start": {"monotonic_ns": 0}, "clock_end": {"monotonic_ns": int(seconds * 1e9)}},
                           counters={"events": calls, "probe_cost": probe}, lost=0, event_count=calls)


def test_windows_scaled_by_time_and_by_calls_give_a_range_low_first():
    # GIVEN 50 ms of program time measured over 0.1 s and 10,000 calls of a 10 s run of 2 M calls
    probe = {"source": "BPF_ENABLE_STATS, sampled", "run_time_ns": 50_000_000, "run_cnt": 20_000,
             "sampled_calls": 10_000, "sampled_s": 0.1}
    trace = _trace(probe, 2_000_000, 10.0)
    # WHEN the cost is worked out
    cost = observer.cost(trace)
    # THEN time scales it by 100 and calls by 200, and the line gives both, low first
    assert round(cost["probe_time_s"], 9) == 5.0 and round(cost["probe_time_s_by_calls"], 9) == 10.0
    assert "about 5.000 s–10.000 s in all" in observer.detail(trace)


def test_statistics_on_all_run_long_give_one_total():
    # GIVEN the kernel timed every program run (sysctl): no window to scale
    probe = {"source": "sysctl kernel.bpf_stats_enabled", "run_time_ns": 2_000_000_000, "run_cnt": 20_000_000}
    trace = _trace(probe, 9_000_000, 7.0)
    # THEN the total is what it measured, said once
    cost = observer.cost(trace)
    assert cost["probe_time_s"] == cost["probe_time_s_by_calls"] == 2.0
    assert "about 2.000 s in all" in observer.detail(trace)


def test_the_recorded_mode_decides_not_the_words_of_the_source():
    # GIVEN two probes that timed the same windows, one saying "sampled" only in its mode and
    # one whose words say "sampled" while its mode says the sysctl kept statistics on
    timed = {"run_time_ns": 50_000_000, "run_cnt": 20_000, "sampled_calls": 10_000, "sampled_s": 0.1}
    by_mode = {**timed, "source": "BPF_ENABLE_STATS", "mode": "sampled"}
    by_words = {**timed, "source": "sampled by sysctl", "mode": "sysctl"}
    # WHEN their costs are worked out
    windowed, whole = observer.cost(_trace(by_mode, 2_000_000, 10.0)), observer.cost(_trace(by_words, 2_000_000, 10.0))
    # THEN the mode says which was scaled from windows
    assert windowed["probe_sampled_calls"] == 10_000 and round(windowed["probe_time_s"], 9) == 5.0
    assert whole["probe_sampled_calls"] is None and round(whole["probe_time_s"], 9) == 0.05


def test_the_report_line_gives_one_figure_the_probes_share_of_the_run_at_most():
    # GIVEN 5 ms of program time measured over 0.1 s and 10,000 calls of a 10 s run of 2 M calls
    # (scaled: 5 s by time, 10 s by calls), the entry and exit programs 100 + 150 ns a run
    probe = {"source": "BPF_ENABLE_STATS, sampled", "run_time_ns": 50_000_000, "run_cnt": 20_000,
             "sampled_calls": 10_000, "sampled_s": 0.1,
             "programs": {"on_sys_enter": {"run_time_ns": 1_000_000, "run_cnt": 10_000},
                          "on_sys_exit": {"run_time_ns": 1_500_000, "run_cnt": 10_000}}}
    trace = _trace(probe, 2_000_000, 10.0)
    cost = observer.cost(trace)
    # THEN the share is the larger total over the run's time (10 s / 10 s), the smallest the
    # calls at the programs' mean (2 M x 250 ns = 0.5 s: 5 %)
    assert cost["probe_share_max"] == 1.0 and round(cost["probe_share_min"], 9) == 0.05
    # AND the line says the one figure; the ranges are in the verbose line only
    line, detail = observer.line(trace), observer.detail(trace)
    assert "probe at most 100 % of the run's time" in line and "ns per traced call" not in line
    assert "probe 5 %–100 % of the run's time, 250–5,000 ns per traced call" in detail


def test_a_ceiling_above_the_runs_own_time_gives_way_to_the_floor():
    # GIVEN a busy machine: 25 ms of program time over 0.1 s of a 10 s run (25 s by time on
    # all CPUs, from every process's syscalls), the traced calls at 250 ns a run
    probe = {"source": "BPF_ENABLE_STATS, sampled", "run_time_ns": 250_000_000, "run_cnt": 200_000,
             "sampled_calls": 10_000, "sampled_s": 0.1,
             "programs": {"on_sys_enter": {"run_time_ns": 1_000_000, "run_cnt": 10_000},
                          "on_sys_exit": {"run_time_ns": 1_500_000, "run_cnt": 10_000}}}
    trace = _trace(probe, 2_000_000, 10.0)
    line = observer.line(trace)
    # THEN the line leads with the floor (2 M x 250 ns = 0.5 s: 5 %), never "at most 250 %"
    assert "probe at least 5 % of the run's time" in line, line
    assert "busy machine" in line and "at most 250 %" not in line
