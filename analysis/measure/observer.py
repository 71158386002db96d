"""What the observer cost: the witness's own footprint, stated in every report.

Sources, all saved in the trace by the collector: the calls seen (events, or calls summarized
in --summary mode), the lost counts, the kernel's own run time and run count of iowitness's
BPF programs (BPF statistics, sampled by the collector while it records), the collector's
CPU time and the trace's size.

How to read the per-call figure: it is a range. The programs run on every syscall of the
machine (most return after a switch): their total time over the traced calls is an upper
bound of what each traced call paid in BPF code, the mean run time of the entry and exit
programs a lower one; the two meet when the benchmark makes most of the machine's syscalls.
Not in it: the fixed cost of the tracepoints themselves (docs/performance.md, "floor"), and
the two clock reads per program run that the statistics add. The collector turns the
statistics on in windows (collector/stats_windows.py says when; `run --help` says it in words)
and what they measured is scaled to the whole run in two ways, given as
a range: by time (right if the programs ran at the same pace outside the windows) and by
traced calls (right if the machine's other syscalls kept pace with the benchmark's). The
statistics slow every call while they are on, so in a benchmark that makes calls as fast as it
can, fewer calls fall in a window than in as long a stretch outside one, and the time-scaled
figure is the low one: a 7 s 1-byte pread loop, 2.0 s by time, 2.9 s by calls; 600,000 pwrites
from Python in 0.8 s, 63 ms by time, 188 ms by calls, and 133 ms when the kernel timed the
same command all run long.
"""

from __future__ import annotations

from iowitness import units
from iowitness.collector.format.traceformat import STATS_SAMPLED


def _sampled(probe: dict) -> bool:
    """The statistics were on in windows (not all run long, not off)."""
    if "mode" in probe:
        return probe["mode"] == STATS_SAMPLED
    # traces written before the mode was recorded say it only in the words of `source`
    return "sampled" in str(probe.get("source", ""))


def cost(trace) -> dict:
    meta, counters = trace.meta, trace.counters
    summary_mode = bool(meta.get("summary_mode"))
    # what the trace holds: a killed run wrote events after its last COUNTERS chunk
    calls = int(counters.get("calls", 0)) if summary_mode else trace.event_count
    start, end = meta.get("clock_start", {}), meta.get("clock_end", {})
    seconds = (end["monotonic_ns"] - start["monotonic_ns"]) / 1e9 if end and start else None
    cpu = meta.get("collector_cpu_s")
    # from the benchmark's release to the end; traces before it have the CPU time at START
    recording_cpu = meta.get("collector_cpu_recording_s")
    if recording_cpu is None and cpu and "collector_cpu_start_s" in meta:
        recording_cpu = cpu["user"] + cpu["system"] - meta["collector_cpu_start_s"]
    probe = counters.get("probe_cost") or {}
    run_time_ns, runs = int(probe.get("run_time_ns", 0)), int(probe.get("run_cnt", 0))
    timed = bool(runs)
    # statistics sampled in windows: the calls made inside them are what run_time_ns paid for
    # (the collector writes both figures of the windows or neither: one alone is not a measure)
    sampled = probe.get("sampled_calls") if _sampled(probe) and probe.get("sampled_s") is not None else None
    timed_calls = sampled if sampled is not None else calls
    sampled_s = probe.get("sampled_s") if sampled is not None else seconds
    # a traced call runs the entry and the exit program once each: their mean run time (over
    # every syscall of the machine, most of which leave at once) is a floor of its cost; all
    # program time over the traced calls is a ceiling; they meet when the benchmark makes
    # most of the machine's syscalls
    hooks = [p for name, p in (probe.get("programs") or {}).items() if name in ("on_sys_enter", "on_sys_exit")]
    low = sum(p["run_time_ns"] / p["run_cnt"] for p in hooks if p["run_cnt"]) if timed else None
    high = run_time_ns / timed_calls if timed and timed_calls else None
    by_time = run_time_ns / 1e9 * (seconds / sampled_s) if timed and seconds and sampled_s else None
    by_calls = run_time_ns / 1e9 * (calls / timed_calls) if timed and timed_calls else None
    trace_bytes = meta.get("trace_file_bytes")
    return {
        "mode": "summary" if summary_mode else "full",
        "calls": calls,
        "lost": int(trace.lost),
        "recorded_s": seconds,
        "calls_per_s": calls / seconds if seconds else None,
        "bpf_stats": probe.get("source", "not recorded"),
        "probe_sampled_s": sampled_s if sampled is not None else None,
        "probe_sampled_calls": sampled,
        "probe_runs": runs if timed else None,
        "probe_ns_per_run": run_time_ns / runs if timed else None,
        "probe_ns_per_call_min": low,
        "probe_ns_per_call_max": high,
        # the programs' time over the whole run, on every CPU: the windows scaled up by time,
        # and by traced calls (the same when the statistics were on all run long)
        "probe_time_s": by_time,
        "probe_time_s_by_calls": by_calls,
        # the headline: the probe's programs (all of them, on every CPU) over the run's time,
        # at most (the larger scaling, every program run charged to the benchmark) and at least
        # (the traced calls at the entry and exit programs' mean run time)
        "probe_share_max": max(t for t in (by_time, by_calls) if t is not None) / seconds
        if seconds and (by_time is not None or by_calls is not None) else None,
        "probe_share_min": calls * low / 1e9 / seconds if seconds and low is not None else None,
        "collector_cpu_s": cpu["user"] + cpu["system"] if cpu else None,
        # what the collector spent while recording (start-up excluded), per million calls
        "collector_cpu_s_per_m": recording_cpu / calls * 1e6 if recording_cpu is not None and calls else None,
        "trace_bytes": trace_bytes,
        "trace_bytes_per_call": trace_bytes / calls if trace_bytes and calls else None,
    }


def _total(by_time: float | None, by_calls: float | None) -> str:
    """", about X–Y in all": the two scalings of the timed windows, low first."""
    texts = dict.fromkeys(units.seconds(t) for t in sorted(t for t in (by_time, by_calls) if t is not None))
    return f", about {'–'.join(texts)} in all" if texts else ""


def _share(value: float) -> str:
    return f"{100 * value:.2g} %" if value < 0.1 else f"{100 * value:.0f} %"


def line(trace) -> str:
    """One line for text reports: the probe's cost as one figure, its share of the run's time
    at most (what a user can act on: under a few percent, the trace's timings are the
    benchmark's own); `detail` gives the ranges it comes from (report --verbose)."""
    from iowitness.collector import backends
    if backends.backend_of(trace.meta) not in (backends.LIBBPF, backends.BPFTRACE):
        return detail(trace)
    c = cost(trace)
    noun = "calls summarized" if c["mode"] == "summary" else "events"
    parts = [f"{c['calls']:,} {noun}", f"{c['lost']:,} lost"]
    if c["probe_share_max"] is not None and c["probe_share_max"] > 1 and c["probe_share_min"] is not None:
        # a ceiling above the run's own time says the programs ran for other processes'
        # syscalls too (every syscall on the machine enters on_sys_enter): a busy machine's,
        # not the benchmark's; the floor is then the figure that speaks of the benchmark
        parts.append(f"probe at least {_share(c['probe_share_min'])} of the run's time (at most "
                     f"{units.seconds(max(t for t in (c['probe_time_s'], c['probe_time_s_by_calls']) if t is not None))}"
                     f" on all CPUs in {units.seconds(c['recorded_s'])}: its programs ran for every process's "
                     "syscalls on a busy machine; --verbose: the range)")
    elif c["probe_share_max"] is not None:
        parts.append(f"probe at most {_share(c['probe_share_max'])} of the run's time "
                     f"({units.seconds(max(t for t in (c['probe_time_s'], c['probe_time_s_by_calls']) if t is not None))}"
                     f" on all CPUs in {units.seconds(c['recorded_s'])}; --verbose: the range)")
    elif c["probe_ns_per_call_min"] is not None:
        parts.append(f"probe at least {c['probe_ns_per_call_min']:,.0f} ns per traced call")
    else:
        parts.append(f"probe time not measured (BPF statistics: {c['bpf_stats']})")
    if c["collector_cpu_s"] is not None:
        parts.append(f"collector CPU {units.seconds(c['collector_cpu_s'])}")
    if c["trace_bytes"]:
        parts.append(f"trace {units.bytes_(c['trace_bytes'])}")
    return "observer  " + ", ".join(parts)


def detail(trace) -> str:
    """The observer's figures with their ranges (report --verbose; analysis/measure/observer.py's
    docstring says how to read them)."""
    from iowitness.collector import backends
    if backends.backend_of(trace.meta) not in (backends.LIBBPF, backends.BPFTRACE):
        return f"observer  {trace.event_count:,} events; observer cost not available ({backends.backend_of(trace.meta)} import)"
    c = cost(trace)
    noun = "calls summarized" if c["mode"] == "summary" else "events"
    parts = [f"{c['calls']:,} {noun}", f"{c['lost']:,} lost"]
    if c["probe_ns_per_call_max"] is not None:
        how = (f"timed {units.seconds(c['probe_sampled_s'])} of the run" if c["probe_sampled_calls"] is not None
               else "timed all run long")
        low = f"{c['probe_ns_per_call_min']:,.0f}–" if c["probe_ns_per_call_min"] is not None else "at most "
        total = _total(c["probe_time_s"], c["probe_time_s_by_calls"])
        share = (f"probe {_share(c['probe_share_min'])}–{_share(c['probe_share_max'])} of the run's time, "
                 if c["probe_share_min"] is not None and c["probe_share_max"] is not None else "probe ")
        parts.append(f"{share}{low}{c['probe_ns_per_call_max']:,.0f} ns per traced call{total} ({how})")
    elif c["probe_ns_per_call_min"] is not None:
        parts.append(f"probe at least {c['probe_ns_per_call_min']:,.0f} ns per traced call "
                     "(no traced call fell in the timed windows)")
    else:
        parts.append(f"probe time not measured (BPF statistics: {c['bpf_stats']})")
    if c["collector_cpu_s"] is not None:
        per_m = (f" ({c['collector_cpu_s_per_m']:.2f} s per million calls while recording)"
                 if c["collector_cpu_s_per_m"] is not None else "")
        parts.append(f"collector CPU {units.seconds(c['collector_cpu_s'])}{per_m}")
    if c["trace_bytes"]:
        per = f" ({c['trace_bytes_per_call']:.3g} B per call)" if c["trace_bytes_per_call"] else ""
        parts.append(f"trace {units.bytes_(c['trace_bytes'])}{per}")
    return "observer  " + ", ".join(parts)
