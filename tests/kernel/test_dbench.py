"""dbench, a benchmark the project was not written for (Debian's dbench 4.0, fileio backend),
read with docs/specs/dbench.toml. Its "Throughput" is its last per-second "execute" line's
figure (dbench.c sets it in the alarm handler), so it ends about a second before the run does:
judged over the whole run it DISAGREED 1.16x. Ground truth: dbench's own operation counts
(WriteX is one pwrite, ReadX one pread) against the trace's calls, its table's WriteX and ReadX
latencies judged over exactly those calls, and each printed MB/sec
recomputed from the raw events: the bytes of the preads and pwrites that ended between
"releasing clients" and the line, over that time."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.judge import trace_verdicts as judged
from iowitness.analysis.judge.verdict_rules import claimed
from iowitness.analysis.read import printed
from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel

SPEC = Path(__file__).resolve().parents[2] / "docs" / "specs" / "dbench.toml"
EXECUTE = re.compile(r"^\s+\d+\s+\d+\s+([\d.]+) MB/sec\s+execute")


def test_dbench_throughput_is_its_last_execute_lines_figure(tmp_path):
    dbench = require_tool("dbench")
    # GIVEN dbench's fileio backend, one client for 3 s (no warm-up: -t/5 whole seconds is 0)
    trace, text, e, calls, counts = _dbench_run(dbench, 3, tmp_path)
    # (the trace's calls are dbench's own operations)
    assert counts == {"WriteX": int((calls == "pwrite64").sum()), "ReadX": int((calls == "pread64").sum())}
    # (each execute line is the bytes since "releasing clients" over the time since, from the raw events)
    lines = printed.lines_of(trace)
    released = next(ln.t_ns for ln in lines if ln.text.startswith("releasing clients"))
    data = e[calls.isin(["pread64", "pwrite64"])]
    executes = [(ln.t_ns, float(EXECUTE.match(ln.text).group(1))) for ln in lines if EXECUTE.match(ln.text)]
    assert executes
    for at, said in executes:
        moved = data[(data["end_ns"] > released) & (data["end_ns"] <= at)]["ret"].clip(lower=0).sum()
        assert moved / 1e6 / ((at - released) / 1e9) == pytest.approx(said, rel=0.01)
    throughput = float(re.search(r"^Throughput ([\d.]+) MB/sec", text, re.M).group(1))
    assert throughput == pytest.approx(executes[-1][1], abs=0.01)
    # WHEN its claims are judged with the shipped spec
    verdicts = judged.verdicts(trace, spec=str(SPEC))
    rates = [v for v in verdicts if v.kind == "bytes"]
    # THEN every MB/sec line agrees, the Throughput over the calls up to the last execute line.
    # Over the time between "releasing clients" and the line (analysis/judge/timed_lines.py)
    # when the calls span less: beside two CPU hogs a client sat 353 ms in a Flush (an fsync, no
    # data call) before "execute 1 sec", whose figure was then 0.70x its calls' own (DISAGREES
    # in 2 of 4 runs before) and 1.00x the bytes over the time between the lines
    assert [v.claim.test for v in rates] == [f"execute {k} s" for k in range(1, len(executes) + 1)] + ["throughput"]
    for v in rates:
        assert v.verdict == "agrees", (v.claim.printed, v.verdict, v.ratio, v.reasons)
    assert any("timing_end_line" in r and "execute" in r for r in rates[-1].reasons)
    # AND the table's WriteX and ReadX mean and max latencies never DISAGREE: each at its calls'
    # figure, or above it within the rooms around the calls (analysis/judge/room_bound.py), over
    # exactly dbench's own count of calls (8 runs idle and under two hogs: 31 of 32 agreed; one
    # WriteX mean was CANNOT JUDGE, "the spec's timing_line cannot be placed": every line after a
    # write joined out of its return order had no time, collector/format/printed_timeline.py)
    latencies = [v for v in verdicts if v.kind == "latency"]
    assert [(v.claim.test, v.claim.extra["statistic"]) for v in latencies] == [
        ("WriteX latency", "mean"), ("WriteX latency", "max"), ("ReadX latency", "mean"), ("ReadX latency", "max")]
    for v in latencies:
        assert v.verdict != "disagrees", (v.claim.printed, v.verdict, v.figures, v.reasons)
        if v.verdict == "agrees":
            op = "WriteX" if v.claim.direction == "write" else "ReadX"
            primed = int(_priming_reads(e)[calls == "pread64"].sum()) if op == "ReadX" else 0
            assert v.counts["operations"] == counts[op] - primed, (v.counts, counts, primed)
        else:
            # one that cannot be judged is above its calls' own figure, never below: a clock read
            # around a call only adds to it (idle: all four agree)
            value, _ = claimed(v.claim)
            assert v.verdict == "cannot judge" and value >= v.figures[f"{v.claim.extra['statistic']} of call"], \
                (v.claim.printed, v.verdict, v.figures, v.reasons)
            # every ReadX and WriteX has a call of its thread before and after it (the open of its
            # file, its close): no room is open at a thread's first or last call (under two hogs
            # ReadX's max of 400 ms was CANNOT JUDGE so, the first pread's room not closed by the
            # open before it, in which dbench's clock ran while its thread waited for a CPU)
            assert not any("first or last call" in r for r in v.reasons), (v.claim.printed, v.reasons)


def _priming_reads(events):
    """Per event (a Series on its index), whether it is a read that primes the cache as
    docs/reports.md describes it (a warm-up, kept out of a phase's counts and timing): the first
    read of a run of reads on one open file by one thread whose second read goes back to its
    offset and size, and whose third, if any, goes on from there, on an open file only read.
    dbench does exactly that on some files of its load (read a header, read it again, read on:
    1 or 2 ReadX in a 5 s run), and it counts them: its ReadX count is the trace's less these."""
    calls = events["syscall"].astype(str).to_numpy()
    primed = pd.Series(False, index=events.index)
    mine = events[calls != "mmap"].sort_values("start_ns", kind="stable")
    for _, one in mine.groupby(["tid", "fd"], sort=False):
        kind = one["syscall"].astype(str).map({"pread64": "r", "read": "r", "pwrite64": "w", "write": "w"})
        kind = kind.fillna("o").to_numpy()   # an open or a close ends the runs of the file before it
        off, req = one["offset"].to_numpy(), one["requested"].to_numpy()
        opened = np.cumsum(kind == "o")   # the calls between one open or close and the next
        written = set(opened[kind == "w"])
        for i in range(len(one) - 1):
            if kind[i] != "r" or kind[i + 1] != "r" or (i and kind[i - 1] == "r") or opened[i] in written:
                continue   # the first two reads of a run, on an open file that is only read
            third = kind[i + 2] if i + 2 < len(one) else None
            goes_on = third != "r" or off[i + 2] == off[i + 1] + req[i + 1]
            if off[i + 1] == off[i] and req[i + 1] == req[i] and goes_on:
                primed[one.index[i]] = True
    return primed


def _reset_bracket(data, calls, counts: dict[str, int]) -> tuple[int, int]:
    """When dbench reset its statistics after the warm-up, from its own table alone: its WriteX
    and ReadX counts are of the calls since the reset, so the reset came after the last call of
    each kind before those (ended then) and by the end of the first of them."""
    low, high = 0, None
    for op, syscall in (("WriteX", "pwrite64"), ("ReadX", "pread64")):
        ends = data[calls[data.index] == syscall]["end_ns"].sort_values().to_numpy()
        uncounted = len(ends) - counts[op]
        assert uncounted > 0, (op, len(ends), counts[op])   # a warm-up left out: the table is not the whole run
        low = max(low, int(ends[uncounted - 1]))
        high = int(ends[uncounted]) if high is None else min(high, int(ends[uncounted]))
    assert low < high
    return low, high


def test_dbench_with_a_warm_up_is_judged_since_its_silent_reset(tmp_path):
    dbench = require_tool("dbench")
    # GIVEN dbench -t 5: a warm-up of 5/5 = 1 whole second after "releasing clients", then its
    # statistics reset at an alarm that prints nothing (dbench.c, sig_alarm), its "execute T sec"
    # lines over the T seconds since (T to whole seconds). Beside two CPU hogs the rate of the
    # warm-up and of the later seconds differ, so a window from "releasing clients" gave a false
    # DISAGREES on "execute 1 sec" in 3 of 3 runs (1.08x at load 4.6 too); the alarms come late
    # under load, which the printed seconds' half digit (± 0.5 s) holds
    trace, text, e, calls, counts = _dbench_run(dbench, 5, tmp_path)
    data = e[calls.isin(["pread64", "pwrite64"])]
    counts = {op: int(n) for op, n in re.findall(r"^\s*(WriteX|ReadX)\s+(\d+)\s", text, re.M)}
    # (the reset, from dbench's own counts; each execute line is the bytes since it over the time since)
    low, high = _reset_bracket(data, calls, counts)
    lines = printed.lines_of(trace)
    executes = [(ln.t_ns, float(EXECUTE.match(ln.text).group(1))) for ln in lines if EXECUTE.match(ln.text)]
    assert executes
    for at, said in executes:
        moved = data[(data["end_ns"] > high) & (data["end_ns"] <= at)]["ret"].clip(lower=0).sum() / 1e6
        # the calls between the two ends of the bracket: at most one per kind
        assert moved / ((at - low) / 1e9) * 0.99 <= said <= (moved + 2 * 0.065536) / ((at - high) / 1e9) * 1.01
    # WHEN its claims are judged with the shipped spec
    verdicts = judged.verdicts(trace, spec=str(SPEC))
    rates = [v for v in verdicts if v.kind == "bytes"]
    # THEN every MB/sec line agrees, each over the seconds since the reset its line states
    assert [v.claim.test for v in rates] == [f"execute {k} s" for k in range(1, len(executes) + 1)] + ["throughput"]
    for v in rates:
        assert v.verdict == "agrees", (v.claim.printed, v.verdict, v.ratio, v.reasons)
        assert any("timing_end_line's seconds" in r for r in v.reasons), v.reasons
    # AND the WriteX and ReadX latencies are over the calls since the reset (never DISAGREES, as
    # in the -t 3 test above): since the earliest start the execute lines state (each line's time
    # less its seconds: a line is written late, never early), which is the reset plus the first
    # line's delay (its alarm, dbench's loop over its clients, the printf): dbench's own count of
    # each kind (its last calls by their ends), less those of them that started before it (ReadX
    # every 40 µs on a quiet machine: 2 of 97,952 on 2026-12-07), plus the calls before the reset
    # that started after it (none unless a later line is written earlier than the first); the
    # warm-up's calls (a fifth of the run) are never among them
    seconds = [float(m.group(1)) for ln in lines if (m := re.search(r"MB/sec\s+execute\s+(\d+) sec", ln.text))]
    stated = min(at - int(s * 1e9) for (at, _), s in zip(executes, seconds, strict=True))
    latencies = [v for v in verdicts if v.kind == "latency"]
    primes = _priming_reads(e)
    assert len(latencies) == 4
    for v in latencies:
        assert v.verdict != "disagrees", (v.claim.printed, v.verdict, v.figures, v.reasons)
        if v.verdict == "agrees":
            op, syscall = ("WriteX", "pwrite64") if v.claim.direction == "write" else ("ReadX", "pread64")
            mine = data[calls[data.index] == syscall].sort_values("end_ns")
            starts = mine["start_ns"].to_numpy()
            counted, before = starts[len(starts) - counts[op]:], starts[:len(starts) - counts[op]]
            late, early = int((counted < stated).sum()), int((before >= stated).sum())
            # (the reads the phase rules keep out as priming reads, among those since the start)
            primed = int((primes[mine.index].to_numpy() & (starts >= stated)).sum())
            assert late + early < counts[op] / 20, (op, late, early, counts[op])
            assert counts[op] - late - primed - 1 <= v.counts["operations"] <= counts[op] + early + 1, \
                (op, v.counts, counts, late, early, primed, (stated - low) / 1e6, (high - low) / 1e6)


def _dbench_run(dbench: str, seconds: int, where: Path):
    """dbench -t SECONDS with one client in `where`, recorded: (trace, its stdout, the events,
    their syscall names, dbench's own WriteX and ReadX counts from its table)."""
    out = where / "db.iwt"
    iowitness("run", "-q", "-o", str(out), "--", dbench, "-t", str(seconds), "-D", str(where), "1", cwd=where)
    trace = load(out)
    text = trace.output["stdout"]
    counts = {op: int(n) for op, n in re.findall(r"^\s*(WriteX|ReadX)\s+(\d+)\s", text, re.M)}
    return trace, text, trace.events, trace.events["syscall"].astype(str), counts
