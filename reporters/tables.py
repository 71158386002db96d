"""The tables every report shows, as rows of text for people: one source for the terminal,
Markdown and HTML reports, so that the three say the same thing in the same words.

Each function returns a DataFrame of display strings (or plain ints, which renderers print
with thousands separators); the renderers only lay them out.
"""

from __future__ import annotations

import os

import pandas as pd

from iowitness import units
from iowitness.analysis.judge.verdict_rules import claimed
from iowitness.analysis.measure import device, device_checks, figures
from iowitness.analysis.report import gate_programs_note, mid_run, output_opened_before, unseen
from iowitness.collector import backends
from iowitness.collector.format.traceformat import names_lost_text, not_followed, not_followed_text
from iowitness.escape import visible
from iowitness.reporters import phase_ranges

# integer columns that name something (no thousands separators)
IDENTIFIERS = {"#", "pid", "tid", "phase", "group", "members", "phases"}


def number(column: str, value) -> str:
    """An integer for people (1,024), unless it is an identifier (pid 17379)."""
    return str(value) if column in IDENTIFIERS else f"{value:,}"


def phase_label(row) -> str:
    """A phase's name as the terminal report prints it: the benchmark's name, else the generic one."""
    return row.benchmark_name or row.name


def flags(row) -> str:
    marks = [f for f in ("O_DIRECT", "O_SYNC", "O_DSYNC", "O_APPEND") if getattr(row, f)]
    if row.reread:
        marks.append("re-read")
    if row.rewrite:
        marks.append("re-write")
    if row.errors:
        marks.append(f"{row.errors} failed call" + ("s" if row.errors > 1 else ""))
    if row.short:
        marks.append(f"{row.short} short")
    if getattr(row, "other_targets_ns", 0) and row.other_targets_ns >= 0.1 * max(row.last_ns - row.first_ns, 1):
        marks.append(f"{units.seconds(row.other_targets_ns / 1e9)} in calls on other targets meanwhile")
    if getattr(row, "fill_ops", 0):
        marks.append(f"{row.fill_ops:,} read-before-write ({units.bytes_(row.fill_bytes)}: the stream's buffer, "
                     "not counted)")
    if getattr(row, "faults", 0):
        marks.append(f"{row.faults:,} page faults ({row.major_faults:,} major, {units.bytes_(row.fault_bytes)} mapped; "
                     "loads and stores not timed)")
    if row.too_short:
        marks.append("TOO SHORT TO TIME")
    return ", ".join(marks)


def with_units(frame: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """`frame` with the raw number columns of `spec` ({column: (kind, header name, blank zeros)})
    formatted in one unit per column, its header saying it once ("p99 ms", "bytes MiB")."""
    out = {}
    for c in frame.columns:
        if c in spec:
            kind, name, blank = spec[c]
            unit, cells = units.column(frame[c], kind, blank_zero=blank)
            out[units.with_unit(name, unit)] = cells
        else:
            out[c] = frame[c]
    return pd.DataFrame(out)


# the phase table's columns a narrow terminal loses first, in this order (docs/report.md)
PHASE_DROP = ("tid", "pid", "user", "fsync", "fsyncs", "busy", "p50", "max", "pattern", "ops", "time", "file",
              "record")
PHASE_UNITS = {"record": ("bytes", "record", False), "bytes": ("bytes", "bytes", False),
               "time": ("seconds", "time", False), "wall": ("rate", "wall", False), "busy": ("rate", "busy", False),
               "p50": ("latency", "p50", False), "p99": ("latency", "p99", False), "max": ("latency", "max", False),
               "fsync": ("seconds", "fsync", True), "user": ("seconds", "user", False)}


def phase_rows(phases: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for r in phases.itertuples():
        rows.append({
            "#": r.phase, "name": phase_label(r),
            "pattern": r.pattern + (f" {units.bytes_(r.stride)}" if r.stride else "")
            if r.benchmark_name else "",
            "file": os.path.basename(r.path), "pid": r.tgid, "tid": r.tid if r.threads == 1 else f"{r.threads} thr",
            "record": r.record_size, "bytes": r.bytes, "ops": int(r.ops),
            "time": r.duration_s, "wall": r.wall_Bps, "busy": r.busy_Bps,
            "p50": r.lat_p50_us, "p99": r.lat_p99_us, "max": r.lat_max_us,
            "fsyncs": int(r.fsyncs) if r.fsyncs else "", "fsync": r.fsync_ns / 1e9 if r.fsyncs else 0.0,
            "user": r.user_ns / 1e9, "notes": flags(r),
        })
    return with_units(pd.DataFrame(rows), PHASE_UNITS)


# libaio's kernel completion (analysis/phasing/aio_kernel.py): mean µs from submission, then to the reap
DEPTH_UNITS = {"to kernel done": ("latency", "to kernel done", False),
               "then reaped after": ("latency", "then reaped after", False)}

DEPTH_TITLE = ("queue depth (asynchronous requests, io_uring and libaio: in flight from submission to "
               "completion; 'at submission' counts the request itself, in fio's iodepth_level buckets)")


def depth_rows(phases: pd.DataFrame) -> pd.DataFrame:
    """Per phase with asynchronous requests: how deep its queue was. Empty when none has any."""
    if "async_ops" not in phases:
        return pd.DataFrame()
    rows = []
    kernel = "kernel_done" in phases and bool(phases["kernel_done"].gt(0).any())
    for r in phases[phases["async_ops"] > 0].itertuples():
        row = {"#": r.phase, "name": phase_label(r), "requests": int(r.async_ops),
               "max in flight": int(r.depth_max), "mean in flight": f"{r.depth_mean:.1f}",
               "at submission": r.depth_levels}
        if kernel:
            # libaio direct I/O: when the kernel completed each request, before it was reaped
            known = int(r.kernel_done)
            row.update({"kernel done": known, "to kernel done": r.kernel_mean_us if known else float("nan"),
                        "then reaped after": r.reap_wait_mean_us if known else float("nan")})
        rows.append(row)
    return with_units(pd.DataFrame(rows), DEPTH_UNITS) if kernel else pd.DataFrame(rows)


GROUPS_TITLE = ("groups (concurrent phases: children = sum of member rates, "
                "parent = all bytes / group wall time)")


GROUP_DROP = ("at stonewall", "phases", "members")


def group_rows(groups: pd.DataFrame, phases: pd.DataFrame) -> pd.DataFrame:
    names = phases.set_index("phase")
    rows = []
    for g in groups.itertuples():
        first = names.loc[g.phases[0]]
        rows.append({"group": g.group, "name": first["benchmark_name"] or first["name"], "members": g.members,
                     "phases": " ".join(map(str, g.phases)), "bytes": g.bytes,
                     "children": g.children_Bps, "parent": g.parent_Bps,
                     "at stonewall": f"{g.share_at_stonewall:.0%} done"})
    return with_units(pd.DataFrame(rows), {"bytes": ("bytes", "bytes", False), "children": ("rate", "children", False),
                                           "parent": ("rate", "parent", False)})


def async_calls_line(counters: dict) -> str | None:
    """The calls that drove asynchronous I/O (counted in the kernel, not recorded one by one),
    e.g. 'io_uring_enter 1,204 calls (0.41 s inside)'; None when the run made none."""
    found = counters.get("async_calls") or {}
    parts = [f"{name} {int(c['calls']):,} call{'s' if int(c['calls']) != 1 else ''} "
             f"({units.seconds(int(c['ns']) / 1e9)} inside)" for name, c in found.items() if int(c.get("calls", 0))]
    return ", ".join(parts) or None


def replay_of_text(replayed: dict) -> str:
    """What a replay replays (meta "replay_of"), and what that trace's own recording lost: the
    replay made only the calls its original's trace holds."""
    text = f"{replayed.get('trace')} ({' '.join(replayed.get('command') or [])}), timing {replayed.get('timing')}"
    if replayed.get("original_missing"):
        text += f"; that trace misses calls its run made ({replayed['original_missing']}): they were not replayed"
    return text


def lost_figure(trace) -> str:
    """The "lost events" figure every report prints, with what the probe could not follow beside it."""
    unfollowed = "; ".join(t for t in (not_followed_text(trace.counters), names_lost_text(trace.counters)) if t)
    return f"{trace.lost:,}" + (f" ({unfollowed})" if unfollowed else "")


def warnings(trace) -> list[str]:
    """What makes a trace's figures incomplete, one sentence each, for every reporter."""
    out = []
    # what the backend that made the trace cannot see (an strace import: no device view, ...)
    out += [f"{spot}." for spot in [backends.blind_spot(trace.meta)] if spot]
    blind = unseen(trace)
    if blind:
        out.append(blind + ".")
    if trace.lost:
        out.append(f"{trace.lost:,} events were lost; phases may miss calls.")
    if names_lost_text(trace.counters):
        out.append(names_lost_text(trace.counters) + ".")
    if not_followed(trace.counters):
        out.append(f"the probe could not follow everything ({trace.missing}): the calls on those files, "
                   "processes or threads are missing; phases may miss calls.")
    missed = int(trace.counters.get("missed_runs", 0))
    if missed:
        out.append(f"the kernel skipped {missed:,} runs of iowitness's programs (one was already running "
                   "on that CPU, e.g. interrupted by a block completion): the records they would have "
                   "made are missing and counted as lost.")
    times_missed = int(trace.counters.get("aio_completions_missed", 0))
    if times_missed:
        out.append(f"the kernel skipped {times_missed:,} runs of the libaio completion probe (it was already "
                   "running on that CPU): up to that many libaio requests have their submission and reap "
                   "times but not the kernel's completion ('kernel done' counts those that have it).")
    if not trace.meta.get("complete", True):
        out.append(f"the trace is {status(trace.meta)}; the last phases may be cut short.")
    out += [note + "." for note in integrity_notes(trace.meta)]
    began = mid_run(trace.meta)
    if began:
        out.append(began + ".")
    taken = output_opened_before(trace.meta)
    if taken:
        out.append(taken + ".")
    chosen = gate_programs_note(trace.meta)
    if chosen:
        out.append(chosen + ".")
    return out


def unread_note(meta: dict) -> str | None:
    """The part of the file the reader had to leave out: a torn last chunk (a collector killed
    while writing) or a damaged one; whatever came after it is not in any figure."""
    unread = int(meta.get("truncated_bytes") or 0)
    if not unread:
        return None
    why = meta.get("unread_reason")
    return (f"the last {unread:,} bytes of the file could not be read (a torn or damaged chunk"
            + (f": {why}" if why else "") + "); the events in them, and any after them, are missing")


def integrity_notes(meta: dict) -> list[str]:
    """What the reader could not vouch for (docs/trace-format.md, Rules): a part left unread,
    chunk heads no CRC covered (formats 1 and 2), chunks of kinds it does not know."""
    notes = [unread_note(meta)]
    if meta.get("records_missing"):
        notes.append(f"records are missing though every chunk read well ({meta['records_missing']}): "
                     "whole chunks were cut out of the file, repeated or moved; figures may be wrong")
    if meta.get("chunk_heads_checked") is False:
        notes.append(f"format {meta.get('format_version')}: chunk headers not checksummed (a damaged head "
                     "could drop a chunk unseen; traces written since format 3 are checked)")
    unknown = meta.get("unknown_chunks") or {}
    if unknown:
        count = sum(unknown.values())
        notes.append(f"{count:,} chunk{'s' if count > 1 else ''} of a kind this iowitness does not know "
                     f"({', '.join(sorted(unknown))}) skipped: a newer iowitness may read more of this trace")
    return [n for n in notes if n]


def status(meta: dict) -> str:
    """'complete', or why not."""
    if meta.get("complete"):
        return "complete"
    if meta.get("being_written"):
        return "INCOMPLETE (still being recorded: this is what the collector had written so far)"
    if meta.get("unread_reason"):
        return "INCOMPLETE (the reading stopped at a torn or damaged chunk)"
    if meta.get("records_missing"):
        return "INCOMPLETE (records counted at the end are missing, or chunks are out of place)"
    return "INCOMPLETE (the collector stopped before the end)"


def describe_claim(claim) -> str:
    """What a claim is about: its test, scope, record and file size."""
    where = []
    if claim.scope == "child" and "child" in claim.extra:
        where.append(f"child {claim.extra['child']}")   # IOzone -C: Child[N]
    elif claim.scope != "phase":
        where.append(claim.scope)
    if claim.record_size:
        where.append(f"{units.bytes_(claim.record_size)} records")
    if claim.file_size:
        where.append(f"{units.bytes_(claim.file_size)} file")
    return claim.test + (f" ({', '.join(where)})" if where else "")


def _in_claim_unit(value: float, claim) -> str:
    """`value` (bytes/s, ops/s or s/op) in the unit the benchmark printed its claim in, or "" when
    the claim does not say what its unit is worth."""
    base, _ = claimed(claim)
    if not base or not claim.value or value is None or value != value:
        return ""
    converted = value / units.unit_worth(claim.unit, base / claim.value)
    text = f"{converted:,.0f}" if abs(converted) >= 1000 else f"{converted:.4g}"
    return f"{text} {claim.unit}"


def claimed_value(claim) -> str:
    """The number as the benchmark printed it, with its own unit, then iowitness's conversion
    and, for a decimal or ambiguous byte unit, what it is worth: "130,201 kB/s (= 127.1 MiB/s; kB = 1,024 B)"."""
    value = f"{claim.value:,.0f}" if abs(claim.value) >= 1000 else f"{claim.value:g}"
    printed = f"{value} {claim.unit}"
    base, kind = claimed(claim)
    if base is None or not claim.value:
        return printed
    ours = figures.fmt(base, kind)
    if ours.split()[-1] == claim.unit:
        return printed
    note = units.claim_unit_note(claim.unit, units.unit_worth(claim.unit, base / claim.value)) if kind == "bytes" else ""
    return f"{printed} (= {ours}" + (f"; {note}" if note else "") + ")"


def active_value(v) -> str:
    """The active figure in the window the benchmark timed, as iowitness reads it and in the
    benchmark's own unit: "127.3 MiB/s = 130,355 kB/s"."""
    if not (v.figures and v.window in v.figures):
        return "-"
    active = v.figures[v.window]
    ours = figures.fmt(active, v.kind)
    theirs = _in_claim_unit(active, v.claim) if v.kind in ("bytes", "ops", "latency") else ""
    return ours if not theirs or theirs.split()[-1] == ours.split()[-1] else f"{ours} = {theirs}"


def verdict_rows(verdicts) -> pd.DataFrame:
    """One row per claim: claim vs active, verdict, and every reason (joined by ' · ')."""
    rows = []
    for v in verdicts or []:
        rows.append({"verdict": v.verdict.upper(), "claim": describe_claim(v.claim), "claimed": claimed_value(v.claim),
                     "active": active_value(v), "window": v.window if v.figures else "",
                     "ratio": f"{v.ratio:.3f}" if v.ratio is not None else "-",
                     "phases": phase_ranges.ranges(v.phases, word=False), "reasons": " · ".join(v.reasons)})
    return pd.DataFrame(rows, columns=["verdict", "claim", "claimed", "active", "window", "ratio", "phases",
                                       "reasons"])


def outlier_rows(outliers: pd.DataFrame) -> pd.DataFrame:
    """The slowest calls of one phase (or several), each with its share of its phase's time;
    at: since the phase's first data call."""
    rows = [{"phase": int(c.phase), "syscall": c.syscall, "tid": int(c.tid), "at": c.at_s,
             "offset": c.offset, "bytes": c.bytes, "latency": c.latency_us,
             "share of phase time": f"{c.share:.1%}" if c.share == c.share else "-"}
            for c in outliers.itertuples()]
    frame = pd.DataFrame(rows, columns=["phase", "syscall", "tid", "at", "offset", "bytes", "latency",
                                        "share of phase time"])
    return with_units(frame, {"at": ("seconds", "at", False), "offset": ("bytes", "offset", False),
                              "bytes": ("bytes", "bytes", False), "latency": ("latency", "latency", False)})


def _files_where(meta: dict) -> tuple[str, str]:
    """File systems and devices of the traced files, from what the collector noted of each."""
    files = [f for f in meta.get("files") or [] if isinstance(f, dict)]
    fs = sorted({f"{f['fs_type']} on {f.get('mount_point', '?')}" for f in files if f.get("fs_type")})
    devices = sorted({f"{f.get('block_device') or f.get('source') or ''} ({f['device']})".replace(" ()", "")
                      .strip() for f in files if f.get("device")})
    return ", ".join(fs) or "not recorded", ", ".join(d for d in devices if d) or "not recorded"


def run_metadata(trace) -> pd.DataFrame:
    """What was run, where, and how complete its trace is."""
    meta = trace.meta
    start, end = meta.get("clock_start") or {}, meta.get("clock_end") or {}
    duration = (end.get("monotonic_ns", 0) - start.get("monotonic_ns", 0)) / 1e9 if end and start else None
    fs, devices = _files_where(meta)
    # visible(): names from argv may hold undecodable bytes, which no table column can store
    rows = [
        ("trace", visible(meta.get("path") or "")),
        ("command", visible(" ".join(meta.get("command") or []) or f"attach ({meta.get('mode', '?')})")),
        *([("replay of", visible(replay_of_text(meta["replay_of"])))] if meta.get("replay_of") else []),
        *([("attached", ", ".join(f"PID {p.get('pid')} {p.get('comm') or ''}".strip()
                                  for p in meta["attached"] if isinstance(p, dict)))] if meta.get("attached") else []),
        ("backend", backends.backend_of(meta)),
        ("host", str(meta.get("host") or "")),
        ("kernel", str(meta.get("kernel") or "")),
        ("file system", fs),
        ("device", devices),
        ("recorded", (units.seconds(duration) if duration is not None else "?") + f", {status(meta)}"
         + (f", exit code {meta['exit_code']}" if meta.get("exit_code") is not None else "")),
        ("events", f"{trace.event_count:,}"),
        ("lost events", lost_figure(trace) + (" (phases may miss calls)" if trace.missing else "")),
        ("iowitness", str(meta.get("iowitness_version") or "")),
    ]
    return pd.DataFrame(rows, columns=["", "value"])


def label_of(trace) -> str:
    """A short name for a run in a comparison: its file system and device, else its file name."""
    files = [f for f in trace.meta.get("files") or [] if isinstance(f, dict) and f.get("fs_type")]
    stem = visible(os.path.splitext(os.path.basename(trace.meta.get("path") or "trace"))[0])
    if files:
        first = files[0]
        where = first.get("block_device") or first.get("device") or ""
        return f"{first['fs_type']} {os.path.basename(where)}".strip() + f" ({stem})"
    return stem


DEVICE_TITLE = ("device (block layer over each phase's window, as iostat -x, in binary units as iostat's own "
                "kB and MB are: MiB = 2^20 B; dev/syscall: the benchmark's own device bytes over its syscall "
                "bytes; other progs: bytes other programs moved on the device meanwhile)")
DEVICE_DROP = ("iowait", "write-back after", "other progs", "aqu-sz", "areq-sz", "r/s", "w/s", "r_await", "w_await",
               "read", "written")
DEVICE_UNITS = {"read": ("bytes", "read", False), "rB/s": ("rate", "r", False), "r_await": ("seconds", "r_await", False),
                "written": ("bytes", "written", False), "wB/s": ("rate", "w", False),
                "w_await": ("seconds", "w_await", False), "areq-sz": ("bytes", "areq-sz", False),
                "other progs": ("bytes", "other progs", True)}


def _device_phases(report):
    """(Report.device, the phases by number), or (None, None) when no phase has a device."""
    view = report.device
    if view is None or view.empty or view["device"].isna().all():
        return None, None
    return view, report.phases.set_index("phase")


def device_rows(report) -> pd.DataFrame:
    """Per phase with a device: what reached it over the phase's window, in iostat -x terms."""
    view, names = _device_phases(report)
    rows = []
    for r in view.itertuples() if view is not None else ():
        if r.device is None or r.device != r.device:
            continue
        name = names.loc[r.phase]
        rows.append({"#": r.phase, "name": name["benchmark_name"] or name["name"], "device": r.device,
                     "read": r.read_bytes, "r/s": f"{r.reads / r.window_s:,.0f}" if r.window_s else "-",
                     "rB/s": r.read_Bps, "r_await": r.r_await_ms / 1e3,
                     "written": r.write_bytes, "w/s": f"{r.writes / r.window_s:,.0f}" if r.window_s else "-",
                     "wB/s": r.write_Bps, "w_await": r.w_await_ms / 1e3, "areq-sz": r.areq_bytes,
                     "aqu-sz": f"{r.aqu_sz:.2f}", "%util": f"{r.util * 100:.1f}",
                     "dev/syscall": f"{r.device_ratio:.2f}" if r.device_ratio == r.device_ratio else "-",
                     "other progs": r.other_bytes,
                     "write-back after": (f"{units.bytes_(r.writeback_bytes)} in {units.seconds(r.writeback_s)}"
                                          if r.writeback_bytes else ""),
                     "iowait": device.pct(r.iowait)})
    return with_units(pd.DataFrame(rows), DEVICE_UNITS) if rows else pd.DataFrame()


def device_notes(report, trace) -> dict[str, list[str]]:
    """The sentences around the device table: files without a device ("before"), what limited each
    phase ("limiter", one per phase), the block probe vs /proc/diskstats and lost requests ("after")."""
    notes = {"before": device.no_device_lines(trace), "limiter": [], "after": []}
    view, names = _device_phases(report)
    if view is None:
        return notes
    for r in view.itertuples():
        name = names.loc[r.phase]
        notes["limiter"].append(f"phase {r.phase} {name['benchmark_name'] or name['name']}: {device.limiter_line(r)}")
    for c in device_checks.cross_check(trace).itertuples():
        if not (c.probe_read_bytes or c.probe_write_bytes or c.diskstats_read_bytes or c.diskstats_write_bytes):
            notes["after"].append(
                f"cross-check {c.device}: nothing to compare: the device did no I/O between the samples "
                f"that bracket its watched time ({units.seconds(c.seconds)}); trace with --file for a "
                "device watched from the start")
            continue
        verdict = "agree" if c.agree else "DISAGREE"
        notes["after"].append(
            f"cross-check {c.device} over {units.seconds(c.seconds)}: block probe vs /proc/diskstats {verdict}: "
            f"read {units.bytes_(c.probe_read_bytes)} vs {units.bytes_(c.diskstats_read_bytes)} "
            f"({c.probe_reads:,} vs {c.diskstats_reads:,} requests), written "
            f"{units.bytes_(c.probe_write_bytes)} vs {units.bytes_(c.diskstats_write_bytes)} "
            f"({c.probe_writes:,} vs {c.diskstats_writes:,} requests)")
    lost = int(trace.counters.get("lost_block", 0))
    if lost:
        notes["after"].append(f"WARNING: {lost} block requests were lost; device figures are low")
    unwatched = int(trace.counters.get("devices_not_watched", 0))
    if unwatched:
        notes["after"].append(f"WARNING: {unwatched} block devices under target files were not watched (the "
                              "device filter was full); their requests are missing and device figures are low")
    return notes
