"""What the observer cost: the witness's own footprint, stated in every report.

Sources, all saved in the trace by the collector: the calls seen (events, or calls summarized
in --summary mode), the lost counts, the kernel's own run time and run count of iowitness's
BPF programs (BPF statistics, enabled by the collector while it records), the collector's
CPU time and the trace's size.

How to read the per-call figure: the programs run on every syscall of the machine (most
return after a switch), so their total time divided by the traced calls is an upper bound of
what each traced call paid in BPF code. Not in it: the fixed cost of the tracepoints
themselves (see docs/performance.md, "floor"), and the two clock reads per program run that
the statistics add. The collector turns the statistics on in windows (0.5 s every 5 s) and
scales what they measured to every call: the total is an estimate.
"""

from __future__ import annotations

from iowitness.analysis import units


def cost(trace) -> dict:
    meta, counters = trace.meta, trace.counters
    summary_mode = bool(meta.get("summary_mode"))
    calls = int(counters.get("calls", 0)) if summary_mode else int(counters.get("events", len(trace.raw_events())))
    start, end = meta.get("clock_start", {}), meta.get("clock_end", {})
    seconds = (end["monotonic_ns"] - start["monotonic_ns"]) / 1e9 if end and start else None
    cpu = meta.get("collector_cpu_s")
    probe = counters.get("probe_cost") or {}
    run_time_ns, runs = int(probe.get("run_time_ns", 0)), int(probe.get("run_cnt", 0))
    timed = bool(runs)
    # statistics sampled in windows: the calls made inside them are what run_time_ns paid for
    sampled = probe.get("sampled_calls") if "sampled" in str(probe.get("source", "")) else None
    timed_calls = sampled if sampled else calls
    per_call = run_time_ns / timed_calls if timed and timed_calls else None
    trace_bytes = meta.get("trace_file_bytes")
    return {
        "mode": "summary" if summary_mode else "full",
        "calls": calls,
        "lost": int(trace.lost),
        "recorded_s": seconds,
        "calls_per_s": calls / seconds if seconds else None,
        "bpf_stats": probe.get("source", "not recorded"),
        "probe_sampled_s": probe.get("sampled_s") if sampled is not None else None,
        "probe_sampled_calls": sampled,
        "probe_runs": runs if timed else None,
        "probe_ns_per_run": run_time_ns / runs if timed else None,
        "probe_ns_per_call_max": per_call,
        # every call paid about what the sampled ones did
        "probe_time_s": per_call * calls / 1e9 if per_call is not None else None,
        "collector_cpu_s": cpu["user"] + cpu["system"] if cpu else None,
        "trace_bytes": trace_bytes,
        "trace_bytes_per_call": trace_bytes / calls if trace_bytes and calls else None,
    }


def line(trace) -> str:
    """One line for text reports."""
    c = cost(trace)
    noun = "calls summarized" if c["mode"] == "summary" else "events"
    parts = [f"{c['calls']:,} {noun}", f"{c['lost']:,} lost"]
    if c["probe_time_s"] is not None:
        per_call = (f", at most {c['probe_ns_per_call_max']:,.0f} ns per traced call"
                    if c["probe_ns_per_call_max"] is not None else "")
        how = (f"timed on {c['probe_sampled_calls']:,} calls in {units.seconds(c['probe_sampled_s'])}"
               if c["probe_sampled_calls"] is not None else f"timed on every call, {c['probe_runs']:,} program runs")
        parts.append(f"probe about {units.seconds(c['probe_time_s'])} in all{per_call} ({how}, "
                     f"{c['probe_ns_per_run']:,.0f} ns per program run)")
    else:
        parts.append(f"probe time not measured (BPF statistics: {c['bpf_stats']})")
    if c["collector_cpu_s"] is not None:
        parts.append(f"collector CPU {units.seconds(c['collector_cpu_s'])}")
    if c["trace_bytes"]:
        per = f" ({c['trace_bytes_per_call']:.3g} B per call)" if c["trace_bytes_per_call"] else ""
        parts.append(f"trace {units.bytes_(c['trace_bytes'])}{per}")
    return "observer  " + ", ".join(parts)
