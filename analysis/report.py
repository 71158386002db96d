"""Everything `iowitness report` shows about a trace: phases with names, groups, outliers."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from iowitness import units
from iowitness.analysis import benchmarks
from iowitness.analysis.phasing import aio_kernel, groups, phases as phase_module
from iowitness.analysis.read import printed, recorded_paths
from iowitness.collector.format import printed_timeline

OUTLIERS_PER_PHASE = 5
LATENCY_BINS_US = [0] + [2 ** k for k in range(0, 25)]  # of the latency histograms: 1 µs .. 16 s, log2


@dataclass
class Report:
    """Everything every form of `report` shows, built by the block pipeline
    (analysis/measure/stream_full.py); the reporters only format it."""
    phases: pd.DataFrame     # one row per phase
    groups: pd.DataFrame     # one row per group of concurrent phases
    outliers: pd.DataFrame   # the slowest calls of each phase
    benchmark: str | None
    trace: object = field(default=None, repr=False)   # meta, files, processes, output
    device: pd.DataFrame | None = None   # per phase: the device view (analysis/measure/device.py), plain data
    evidence: object = field(default=None, repr=False)   # what the verdicts ask of the events (stream_evidence)
    histograms: dict | None = None       # per phase: latency histogram counts (LATENCY_BINS_US)
    stretches: pd.DataFrame | None = None   # time inside the calls of each open-to-close stretch (None: not
                                            # gathered, stream_full.open_report's stretches=False)
    t0: int | None = None                # the trace's first start time
    event_blocks: object = field(default=None, repr=False)   # a new pass over (events, assigned) blocks per call
    chart_extents: object = field(default=None, repr=False)  # each phase's calls' extent, when opened for charts
    # per phase number: the start of the call that numbers it and of its stream's first event
    # (stream_assign: phases are numbered by the first, ties in stream order, streams numbered by
    # first appearance); what a run over several hosts numbers its pooled phases by
    phase_keys_ns: np.ndarray | None = field(default=None, repr=False)

    @property
    def all_phases(self) -> pd.DataFrame:
        """Every phase of the trace: `phases`, here; a view of some of them
        (analysis/judge/claim_windows.py) keeps the whole table's."""
        return self.phases

    @cached_property
    def verdicts(self) -> pd.DataFrame:
        """The claims of the output the run captured, judged at the default tolerance: one row per
        claim (analysis/judge/trace_verdicts.py; judged.verdicts for an output saved apart or other options).
        Empty when there is no claim to judge, and .attrs["why"] then says why. (Asked of the
        trace: the judgement builds on this module, not the other way round.)"""
        return self.trace.verdicts()

    def event_phases(self) -> np.ndarray:
        """Each event's phase (-1: none), in the events' order: one pass over the blocks."""
        parts = [a["phase"].to_numpy() for _, a in self.event_blocks()]
        return np.concatenate(parts) if parts else np.empty(0, np.int64)


# how a benchmark can move a file's bytes without a record in the trace: plain loads and
# stores on mapped pages already in memory make no syscall and no fault; the rest that the
# probe sees but cannot decode is counted (transfers_not_decoded) and said beside "lost"
UNSEEN_PATHS = ("loads and stores on pages of a mapped file that are already in memory (only the faults that "
                "bring pages in are seen)")


def unseen(trace) -> str | None:
    """Why a trace holds no read or write call on a target file, when it holds none: a file of
    the command line the all-files mode skips (/dev/shm is under /dev/), and the ways of moving
    data the probe does not see. None when the trace has data calls."""
    if trace.summary is not None and len(trace.summary):
        return None
    if _has_data_calls(trace):
        return None
    meta = trace.meta
    words = ["no read, write, asynchronous request or page fault on a target file was recorded"]
    skipped = _skipped_paths(meta.get("command") or [], meta.get("cwd") or "/", meta.get("excluded_prefixes") or [])
    if skipped:
        path, prefix = skipped[0]
        words.append(f"{path} is under {prefix}, which iowitness skips unless it is named: trace again with "
                     f"--file {path}")
    words.append(f"the one way of moving data this version cannot see is {UNSEEN_PATHS}")
    return "; ".join(words)


def _has_data_calls(trace) -> bool:
    seen = getattr(trace, "data_calls_seen", None)   # the report's own pass saw every event
    return seen if seen is not None else trace.has_data_calls()


def _skipped_paths(command: list, cwd: str, prefixes: list) -> list[tuple[str, str]]:
    """(path, prefix) for each path of the command line (an argument, or the value of
    `of=PATH`, `--filename=PATH`) under a prefix the all-files mode skips."""
    found = []
    for word in command:
        for candidate in {str(word), str(word).split("=", 1)[-1]}:
            if "/" not in candidate:
                continue
            path = os.path.normpath(os.path.join(cwd, candidate))
            # /dev/zero and the like are never targets, named or not (a device, here as anywhere)
            if os.path.exists(path) and not os.path.isfile(path):
                continue
            prefix = next((p for p in prefixes if isinstance(p, str) and (path + "/").startswith(p)), None)
            if prefix:
                found.append((path, prefix))
    return found


def ended_early(meta: dict) -> str | None:
    """Why a launched benchmark's trace ended before the benchmark did (a fault under `run
    --on-fault continue`: it ran on untraced); None when the trace saw it to its end."""
    if not meta.get("left_running"):
        return None
    if meta.get("exit_code") is not None:   # the command exited; what it started ran on (iowitness run)
        return ("the trace ended before processes the command left running did (they held its output with no "
                "traced call for some seconds, then ran on untraced): what they did after is not in it")
    return ("the trace ended before the benchmark (it ran on untraced after a fault, --on-fault continue): "
            "a test under way then is seen only in part, and the tests after it not at all")


def mid_run(meta: dict) -> str | None:
    """How far into the benchmark an attached trace began, so that no figure is read as the
    whole run's; None for a trace that saw the run from its start (`run`)."""
    if meta.get("mode") != "attach" or meta.get("command_exec"):
        # a process attached to at a gate that then exec'd the benchmark: the trace saw the
        # benchmark from its exec, as `run` does
        return None
    given = [p for p in meta.get("attached") or [] if isinstance(p, dict)][:1]
    if not given:
        return "the trace began when iowitness attached by file: what the benchmark did before is not in it"
    p = given[0]
    who = f"{p.get('comm') or 'the process'} (PID {p.get('pid')})"
    if p.get("age_s") is None:
        return f"the trace began when iowitness attached to {who}, mid-run: what it did before is not in it"
    return (f"the trace began {units.seconds(float(p['age_s']))} after {who} started (attached mid-run): a phase "
            "under way then is seen from its middle, and a claim about a whole test covers more than the trace saw")


def gate_programs_note(meta: dict) -> str | None:
    """Which of the programs a shell attached to ran is taken for the benchmark, and why
    (collector/gate_programs.py); None when it ran one or none."""
    ran = meta.get("gate_programs")
    if not ran:
        return None
    programs = ran["programs"]
    shown = ", ".join(f"{os.path.basename(p['path'])} (PID {p['pid']})" for p in programs[:8])
    more = ran["count"] - min(len(programs), 8)
    chosen = programs[ran["chosen"]]
    name = os.path.basename(chosen["path"])
    return (f"the shell attached to (PID {ran['shell']}) ran {ran['count']} programs: {shown}"
            + (f" and {more} more" if more > 0 else "")
            + f"; the benchmark is taken to be {name} (PID {chosen['pid']}), {ran['why']}: its command line "
            f"says how the output is read, and the other programs' output is in it too")


def output_opened_before(meta: dict) -> str | None:
    """A regular file on an attached program's fd 1 or 2, opened before the trace, that the
    program opened itself (its command line names it, dd's of=, or its open flags are no shell
    redirection's): its writes there are data, not output, which the trace alone cannot show
    (it holds no open of it: printed_timeline.own_output_paths); None when there is none."""
    found = printed_timeline.own_output_paths(meta)
    if not found:
        return None
    pid, fd, path, why = found[0]
    comm = next((p.get("comm") for p in meta.get("attached") or [] if isinstance(p, dict) and p.get("pid") == pid),
                None) or "the process"
    return (f"fd {fd} of {comm} (PID {pid}) was open on {path} before the attach, {why}: its writes there "
            "are taken for data, not output; a shell's `> file` of the same name would be output")


def outliers(calls: "Calls", table: pd.DataFrame, per_phase: int = OUTLIERS_PER_PHASE) -> pd.DataFrame:
    """The slowest data calls of each phase, and the share of the phase's time each took."""
    by_phase = table.set_index("phase")
    rows = outlier_candidates(calls, by_phase, per_phase)
    rows = rows[slowest(calls.phase[rows], calls.latency_ns[rows], per_phase)]
    return outlier_frame(by_phase, calls.phase[rows], calls.syscall.iloc[rows].astype(str).to_numpy(), calls.tid[rows],
                         calls.start_ns[rows], calls.offset[rows], calls.ret[rows], calls.latency_ns[rows])


def outlier_candidates(calls: "Calls", by_phase: pd.DataFrame, per_phase: int) -> np.ndarray:
    """The rows that can be among the slowest `per_phase` data calls of their phase: those at or
    above their phase's 99th percentile (all calls of a phase too small for that to leave enough)."""
    counted = np.flatnonzero(calls.data & (calls.phase > 0))
    phase = calls.phase[counted]
    p99_ns = phase_module.lookup(by_phase["lat_p99_us"], phase) * 1e3
    small = phase_module.lookup(by_phase["ops"], phase) < 100 * per_phase
    return counted[(calls.latency_ns[counted] >= np.floor(p99_ns)) | small]


def slowest(phase: np.ndarray, latency_ns: np.ndarray, per_phase: int) -> np.ndarray:
    """Positions of the `per_phase` slowest calls of each phase, by phase then slowest first;
    of equal latencies, the first given comes first."""
    top = pd.DataFrame({"phase": phase, "latency_ns": latency_ns, "row": np.arange(len(phase))})
    top = top.sort_values(["phase", "latency_ns"], ascending=[True, False], kind="stable")
    return top["row"].to_numpy()[top.groupby("phase").cumcount().to_numpy() < per_phase]


def outlier_frame(by_phase: pd.DataFrame, phase, syscall, tid, start_ns, offset, ret, latency_ns) -> pd.DataFrame:
    """The outliers table from its calls' columns."""
    duration_ns = phase_module.lookup(by_phase["duration_s"], phase) * 1e9
    return pd.DataFrame({
        "phase": phase,
        "syscall": syscall,
        "tid": tid,
        "at_s": (start_ns - phase_module.lookup(by_phase["data_first_ns"], phase)) / 1e9,
        "offset": offset,
        "bytes": ret,
        "latency_us": latency_ns / 1e3,
        "share": latency_ns / np.where(duration_ns > 0, duration_ns, np.nan),
    })


def latency_bin_counts(phases: np.ndarray, calls: "Calls") -> np.ndarray:
    """Per phase of `phases` (a row each), counts of its data calls per LATENCY_BINS_US bin, in
    one pass (report --json's histograms: reporters/machine.py). The counts of blocks
    of calls add up to those of all of them (analysis/measure/stream_extras.py)."""
    counted = calls.data & (calls.phase > 0)
    by_phase = pd.Series(np.arange(len(phases)), index=phases)
    position = phase_module.lookup(by_phase, calls.phase[counted]).astype(np.int64)
    nbins = len(LATENCY_BINS_US) - 1
    which = np.clip(np.searchsorted(LATENCY_BINS_US, calls.latency_ns[counted] / 1e3, side="right") - 1,
                    0, nbins - 1)
    return np.bincount(position * nbins + which, minlength=len(phases) * nbins).reshape(len(phases), nbins)


def histogram_lists(phases: np.ndarray, counts: np.ndarray) -> dict[int, list[int]]:
    return {int(p): counts[i].tolist() for i, p in enumerate(phases)}


# the stretches (reporters/stretches.py): their sums, shared with the streamed report
STRETCH_KINDS = ("reads", "writes", "sync", "other")


def stretch_calls(events: pd.DataFrame, assigned: pd.DataFrame) -> pd.DataFrame | None:
    """One row per call in a stretch (phases.py's span: an open to the last close of its fds), what
    the stretches' table (reporters/stretches.py) sums; None when no call is in one.
    Columns are views of the events' where every call is in a stretch, the path its category."""
    span = assigned["span"].to_numpy()
    keep = span >= 0
    if not keep.any():
        return None

    def rows(values):
        return values if every else values[keep]
    every = bool(keep.all())
    syscall = events["syscall"]
    # the kind as its place in STRETCH_KINDS: no column of strings to make
    kind = np.select([phase_module.named(syscall, names) for names in
                      (phase_module.READS, phase_module.WRITES, phase_module.SYNCS)], [0, 1, 2], 3).astype(np.int8)
    return pd.DataFrame({"span": rows(span), "path": rows(pd.Categorical(events["path"])),
                         "tgid": rows(events["tgid"].to_numpy()), "start": rows(_signed(events["start_ns"])),
                         "end": rows(_signed(events["end_ns"])), "latency": rows(_signed(events["latency_ns"])),
                         "kind": rows(kind), "phase": rows(assigned["phase"].to_numpy())}, copy=False)


def _signed(column: pd.Series) -> np.ndarray:
    """The probe's u64 times as int64, without a copy (they are far below 2^63)."""
    values = column.to_numpy()
    return values.view(np.int64) if values.dtype == np.uint64 else values.astype(np.int64, copy=False)


def stretch_sums(frame: pd.DataFrame) -> pd.DataFrame:
    """Per stretch of stretch_calls' rows, in order of first call: its file, process, first start,
    last end, calls and time in calls (in all, and by kind). Each figure one pass of numpy over
    the rows (a pandas groupby of them cost 4 times as much: its "first" of a category above all)."""
    code, spans = pd.factorize(frame["span"].to_numpy())   # numbered in order of first call
    k, n = len(spans), len(code)
    out = pd.DataFrame(index=pd.Index(spans, name="span"))
    # the codes come in order of first appearance: a stretch's first row is where their
    # running maximum first reaches its code
    seen = np.maximum.accumulate(code) if n else code
    first_row = np.flatnonzero(np.r_[True, seen[1:] != seen[:-1]]) if n else np.empty(0, np.int64)
    # the first path of each stretch: the first of its calls that has one (text, NaN for a
    # stretch without any, or None throughout when no call has one, as a column of the calls'
    # paths as text would give)
    path = frame["path"]
    path_code = np.asarray(path.cat.codes, dtype=np.int64)
    with_path = np.flatnonzero(path_code >= 0)
    first_with = np.full(k, n, dtype=np.int64)
    np.minimum.at(first_with, code[with_path], with_path)
    named = first_with < n
    if named.any():
        text = np.full(k, np.nan, dtype=object)
        text[named] = np.asarray(path.cat.categories, dtype=object)[path_code[first_with[named]]]
    else:
        text = np.full(k, None, dtype=object)
    out["path"] = text
    out["tgid"] = frame["tgid"].to_numpy()[first_row]
    start, end, latency = (frame[c].to_numpy().astype(np.int64, copy=False) for c in ("start", "end", "latency"))
    first, last = np.full(k, np.iinfo(np.int64).max), np.full(k, np.iinfo(np.int64).min)
    np.minimum.at(first, code, start)
    np.maximum.at(last, code, end)
    out["first"], out["last"] = first, last
    out["calls"] = np.bincount(code, minlength=k).astype(np.int64)
    in_calls = np.zeros(k, np.int64)
    np.add.at(in_calls, code, latency)   # integer nanoseconds: exact
    out["in_calls"] = in_calls
    # time per kind: one bincount over (stretch, kind) pairs (integer nanoseconds, each sum far
    # below 2^53, so the float weights add them exactly)
    kinds = len(STRETCH_KINDS)
    split = np.bincount(code * kinds + frame["kind"].to_numpy(np.int64), weights=latency,
                        minlength=k * kinds).reshape(k, kinds).astype(np.int64)
    for i, name in enumerate(STRETCH_KINDS):
        out[name] = split[:, i]
    return out


def stretch_phases(frame: pd.DataFrame) -> pd.Series:
    """Per stretch: the phases it holds calls of, as "1 2 5"."""
    return frame.groupby("span", sort=False)["phase"].agg(
        lambda p: " ".join(str(int(x)) for x in sorted(set(p)) if x > 0))


def stretches_in_order(out: pd.DataFrame) -> pd.DataFrame:
    return out.sort_values("first", kind="stable").reset_index()


def _column_property(name: str) -> cached_property:
    """An event column as a plain array, taken when first asked for; the probe's u64 times
    are read as int64 without a copy (they are far below 2^63)."""
    def column(self) -> np.ndarray:
        values = self._events[name].to_numpy()
        return values.view(np.int64) if values.dtype == np.uint64 else values
    return cached_property(column)


class Calls:
    """Per-event arrays the later stages share; `data` is true for counted reads and writes
    (not warm-ups). Plain numpy arrays, made when first asked for: no 10-million-row DataFrame
    copies, and no array a stage does not use."""

    def __init__(self, events: pd.DataFrame, assigned: pd.DataFrame):
        self._events, self._assigned = events, assigned
        self.phase = assigned["phase"].to_numpy()
        self.syscall = events["syscall"]

    @cached_property
    def data(self) -> np.ndarray:
        kind = phase_module.call_kinds(self.syscall)
        return ((kind == phase_module.READ) | (kind == phase_module.WRITE)) & ~phase_module.uncounted(self._assigned)

    @cached_property
    def bytes(self) -> np.ndarray:
        return np.where(self.data & (self.ret > 0), self.ret, 0)

    ret = _column_property("ret")
    start_ns = _column_property("start_ns")
    end_ns = _column_property("end_ns")
    latency_ns = _column_property("latency_ns")
    tid = _column_property("tid")
    offset = _column_property("offset")


def own_files(events: pd.DataFrame, module, command: list[str], cwd: str | None) -> np.ndarray | None:
    """Per event: on one of the benchmark's own files (its job file, its output: the module's
    own_files), which are in no phase; None when the benchmark has none."""
    hook = getattr(module, "own_files", None)
    if hook is None or not command or not len(events):
        return None
    is_own = hook(command, cwd)
    path = events["path"]
    own = np.array([is_own(str(p)) for p in path.cat.categories] + [False], dtype=bool)
    return own[path.cat.codes.to_numpy()]   # code -1 (no path) takes the last entry, False


def benchmark_of(meta: dict):
    """(command, benchmark name, its module or None) of a trace's meta."""
    command = meta.get("command") or []
    # a replay (iowitness replay) runs its player: its phases are named as the original's were
    command = (meta.get("replay_of") or {}).get("command") or command
    # a shell's -c simple command (`sh -c "dd ..."`) is the benchmark's command line
    command = benchmarks.shell_command.command_of(command)
    benchmark = meta.get("benchmark") or benchmarks.recognise(command)
    return command, benchmark, benchmarks.by_name(benchmark)


def with_kernel_columns(table: pd.DataFrame, kernel: pd.DataFrame) -> None:
    # one table shape for every trace (a dataset of many runs has one phases schema)
    for column in aio_kernel.COLUMNS:
        table[column] = kernel[column]


def with_groups(table: pd.DataFrame, module, command: list) -> None:
    # a benchmark that runs N processes per test (IOzone -t N): a group of N even when a short
    # test's processes do not overlap in time
    members = module.processes(command) if module is not None else None
    table.insert(1, "group", groups.assign(table, members) if len(table) else pd.Series(dtype=np.int64))


def with_names(table: pd.DataFrame, module, command: list, meta: dict, trace=None) -> None:
    table.insert(2, "benchmark_name", None)
    # a trace attached mid-run: its first phases are the test the output it recorded names first
    first = module.first_traced_test([line.text for line in printed.lines_of(trace) if line.t_ns is not None]) \
        if trace is not None and mid_run(meta) and getattr(module, "first_traced_test", None) else None
    names = module.name_phases(table, command, recorded_paths.command_pid(meta), cwd=meta.get("cwd"),
                               **({"first_test": first} if first else {})) if module is not None else None
    if names is not None:
        table["benchmark_name"] = names
