"""What a buffered stream (C stdio) does to a benchmark's calls, as the trace shows it: calls of
one buffer's size instead of the program's records, whole blocks read per seek, and the
final flush at close, after the program may have stopped its clock.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness import units
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.phasing import phases as phase_module

# the sizes of a C stdio buffer: glibc takes the file's st_blksize (4096 on ext4 and xfs),
# BUFSIZ is 8192 (glibc's stdio.h)
STDIO_BUFFERS = (4096, 8192)


def buffered(claim: Claim, rows: pd.DataFrame) -> bool:
    """A home-made benchmark whose calls all move one stdio buffer's size: perhaps its own
    records (unknown to the trace) went through a buffered stream, perhaps they are its records."""
    if claim.source != "spec" or claim.record_size is not None or len(rows) != 1:
        return False
    r = rows.iloc[0]
    # a stream reads and writes at its file position: a pread or pwrite of 4 KiB is the
    # program's own record, not a buffer
    return int(r["record_size"]) in STDIO_BUFFERS and r["ops"] > 0 and not r.get("positioned_ops", 0)


def stream_evidence(claim: Claim, rows: pd.DataFrame) -> bool:
    """Calls of a buffer's size are a stream's only when something shows a stream: a final
    shorter write just before close (fclose flushing what is left; matching.py marks the phase
    `late_flush`), or blocks read back to fill the buffer before writing (an "r+" stream). A
    program's own 4 KiB write(2) calls look the same as a stream's and are not called one."""
    if not buffered(claim, rows):
        return False
    r = rows.iloc[0]
    return bool(r.get("late_flush", False)) or int(r.get("fill_ops", 0)) > 0


def _implied(value: float, kind: str, rows: pd.DataFrame) -> float | None:
    """Bytes the claim implies were moved in the phase's calls window."""
    return value * float(rows["duration_s"].max()) if kind == "bytes" else None


def note_records(claim, rows, value, kind, tolerance, reasons) -> None:
    """The kernel's call sizes against what the claim implies, for a buffered stream."""
    if not stream_evidence(claim, rows) or kind != "bytes":
        return
    r = rows.iloc[0]
    implied = _implied(value, kind, rows)
    calls = "writes" if r["operation"] == "write" else "reads" if r["operation"] == "read" else "calls"
    text = (f"the kernel saw {int(r['ops']):,} {calls} of {int(r['record_size']):,} bytes (a stdio buffer's size), "
            f"not the program's own records")
    moved = float(r["bytes"])
    if implied and abs(implied / moved - 1) > tolerance:
        text += (f"; the claim implies {implied:,.0f} bytes in the phase's {units.seconds(float(r['duration_s']))}, "
                 f"the kernel moved {moved:,.0f} ({moved / implied:.2f}×)")
    else:
        text += "; the claim counts bytes, so they agree, but a rate of calls would count these blocks"
    reasons.append(text)


def read_amplification(claim, rows, value, kind, tolerance) -> str | None:
    """A buffered stream reading at random reads a whole block per seek and hands the program
    part of it: the kernel moves more bytes than the program counts."""
    if kind != "bytes" or not buffered(claim, rows):
        return None
    r = rows.iloc[0]
    if r["operation"] != "read" or r["pattern"] in ("sequential", "single call"):
        return None
    implied, moved, block = _implied(value, kind, rows), float(r["bytes"]), int(r["record_size"])
    if not implied or implied >= moved * (1 - tolerance) or abs(moved / r["ops"] / block - 1) > 0.01:
        return None
    text = (f"a buffered stream reads whole blocks: the kernel read {moved:,.0f} bytes in {int(r['ops']):,} "
            f"{r['pattern']} reads of {block:,} bytes, the claim implies {implied:,.0f} bytes in the phase's "
            f"{units.seconds(float(r['duration_s']))} ({implied / r['ops']:,.0f} bytes per read): the program used "
            f"{implied / moved:.1%} of what the kernel read for it")
    seeks = int(r.get("seeks", 0))
    if seeks:
        text += (f"; per seek ({seeks:,}), the stream read {moved / seeks:,.0f} bytes ({moved / seeks / block:.1f} "
                 f"blocks) for {implied / seeks:,.0f} the program used ({moved / implied:.1f}×)")
    return text


def late_flushes(events: pd.DataFrame, assigned: pd.DataFrame, phases: pd.DataFrame) -> dict[int, dict]:
    """Per write phase: the writes of a buffered stream's final flush, when there is one.

    They are the last writes of the phase after its last full-record write, each shorter than
    the phase's record size, every write before them a full record, followed at once in their
    thread by the close of their fd: what
    fclose does with the bytes still in its buffer. A benchmark that stops its clock before
    fclose leaves them out of its window, though it counted them. Only phases with a short
    write are looked at, so a long trace costs one pass.
    """
    if events is None or phases.empty:
        return {}
    kind = phase_module.call_kinds(events["syscall"])
    phase = assigned["phase"].to_numpy()
    writes = (kind == phase_module.WRITE) & (phase >= 0) & ~phase_module.uncounted(assigned)
    table = phases.set_index("phase")
    write_phases = table.index[table["operation"] == "write"]
    record_of = pd.Series(table["record_size"], index=table.index)
    requested = events["requested"].to_numpy(np.int64)
    record = np.nan_to_num(phase_module.lookup(record_of, np.where(writes, phase, 0))).astype(np.int64)
    short = writes & (requested < record)
    tid, fd = events["tid"].to_numpy(), events["fd"].to_numpy()
    start, end, ret = events["start_ns"].to_numpy(np.int64), events["end_ns"].to_numpy(np.int64), events["ret"].to_numpy()
    out = {}
    for p in np.intersect1d(np.unique(phase[short]), write_phases.to_numpy()):
        rows = np.flatnonzero(writes & (phase == p))
        full = np.flatnonzero(requested[rows] == record_of[p])
        if len(rows) < 2 or not len(full) or full[-1] == len(rows) - 1:
            continue
        if (requested[rows[:full[-1]]] != record_of[p]).any():
            # a stream writes whole buffers until its final flush: a write of another size before
            # the last full one is the program's own (dbench's loadfile writes of 1 to 65,536 bytes)
            continue
        tail = rows[full[-1] + 1:]
        if (requested[tail] >= record_of[p]).any():
            continue
        last = tail[-1]
        following = _close_after(last, kind, tid, fd)
        if following is None:
            continue
        out[int(p)] = {"bytes": int(np.clip(ret[tail], 0, None).sum()), "calls": len(tail),
                       "record": int(record_of[p]), "after_full_ns": int(start[tail[0]] - end[rows[full[-1]]]),
                       "close_after_ns": int(start[following] - end[last])}
    return out


def late_flush_reason(flush: dict) -> str:
    calls = "a final flush" if flush["calls"] == 1 else f"{flush['calls']} final writes"
    return (f"{flush['bytes']:,} bytes written by {calls} just before close (a buffered stream): the phase's "
            f"last full {flush['record']:,}-byte write ended {units.seconds(flush['after_full_ns'] / 1e9)} earlier, "
            f"the close came {units.seconds(flush['close_after_ns'] / 1e9)} after; if the benchmark stopped its "
            f"clock before closing, they are outside its window")


def late_flush_reasons(flushes: dict[int, dict]) -> list[str]:
    """late_flush_reason of each phase, in one reason when there are several (a check over
    thousands of files gives one line with the phase range, not one per phase)."""
    if len(flushes) <= 1:
        return [late_flush_reason(f) for f in flushes.values()]
    numbers = sorted(flushes)
    spans: list[list[int]] = []
    for p in numbers:
        if spans and p == spans[-1][1] + 1:
            spans[-1][1] = p
        else:
            spans.append([p, p])
    shown = ", ".join(f"{a:,}" if a == b else f"{a:,}–{b:,}" for a, b in spans[:4])
    if len(spans) > 4:
        shown = f"{numbers[0]:,}–{numbers[-1]:,}"

    def span(key: str, fmt) -> str:
        values = [f[key] for f in flushes.values()]
        low, high = min(values), max(values)
        return fmt(low) if low == high else f"{fmt(low)} to {fmt(high)}"

    def gap(ns: float) -> str:
        return units.seconds(ns / 1e9)

    total = sum(f["bytes"] for f in flushes.values())
    return [f"{len(flushes):,} phases (phases {shown}) end with a final flush just before close (a buffered "
            f"stream): {span('bytes', lambda b: f'{b:,}')} bytes each, {total:,} in all, after full writes of "
            f"{span('record', lambda b: f'{b:,}')} bytes that ended {span('after_full_ns', gap)} earlier, the close "
            f"{span('close_after_ns', gap)} after; if the benchmark stopped its clock before closing, they are "
            "outside its window"]


def _close_after(row: int, kind: np.ndarray, tid: np.ndarray, fd: np.ndarray) -> int | None:
    """The row of the close of `row`'s fd, when it is the next call of `row`'s thread."""
    after = np.flatnonzero(tid[row + 1:] == tid[row])
    if not len(after):
        return None
    following = row + 1 + after[0]
    return following if kind[following] == phase_module.CLOSE and fd[following] == fd[row] else None


def final_write(events: pd.DataFrame, assigned: pd.DataFrame, phases: pd.DataFrame, phase: int) -> dict | None:
    """A write phase of a stream (write(2) calls of one stdio buffer's size): its last write,
    when the next call of its thread closes the fd: what fclose does with a full buffer. Not
    evidence by itself (a program that writes and closes looks the same): a claim that fits the
    phase without it is (matching.py asks, for a claim that does not fit it with it)."""
    if not stream_write_phase(phases, phase):
        return None
    kind = phase_module.call_kinds(events["syscall"])
    rows = np.flatnonzero((kind == phase_module.WRITE) & (assigned["phase"].to_numpy() == phase)
                          & ~phase_module.uncounted(assigned))
    last, before = rows[-1], rows[-2]
    if _close_after(last, kind, events["tid"].to_numpy(), events["fd"].to_numpy()) is None:
        return None
    start, end = events["start_ns"].to_numpy(np.int64), events["end_ns"].to_numpy(np.int64)
    return {"bytes": int(max(events["ret"].to_numpy()[last], 0)), "before_end_ns": int(end[before]),
            "gap_ns": int(start[last] - end[before])}


def stream_write_phase(phases: pd.DataFrame, phase: int) -> bool:
    """Whether a phase is what final_write looks at: plain writes of a stdio buffer's size."""
    r = phases.set_index("phase").loc[phase]
    return not (r["operation"] != "write" or int(r["record_size"]) not in STDIO_BUFFERS or r["positioned_ops"]
                or r["ops"] < 2)


def final_write_reason(claim, rows: pd.DataFrame, final: dict, value: float, kind: str, tolerance: float) -> str | None:
    """The claim fits its phase without the last write, which the close made: the program
    stopped its clock before fclose flushed its stream's last full buffer."""
    if kind != "bytes" or len(rows) != 1:
        return None
    r = rows.iloc[0]
    seconds = (final["before_end_ns"] - float(r["data_first_ns"])) / 1e9
    if seconds <= 0:
        return None
    without = (float(r["bytes"]) - final["bytes"]) / seconds
    if not without or abs(value / without - 1) > tolerance:
        return None
    return (f"a final flush at close: the phase's last write ({final['bytes']:,} bytes, a full stream buffer) came "
            f"{units.seconds(final['gap_ns'] / 1e9)} after the one before and just before close; without it the "
            f"active figure is {units.rate(without)}, within {abs(value / without - 1):.1%} of the claim: the program "
            f"stopped its clock before fclose wrote it")
