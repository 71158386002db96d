"""analysis/measure/evidence.py's questions answered from events read block by block.

    evidence = StreamedEvidence(assigned, phases)    # assigned.blocks(): (events, assigned) pairs
    for events, a in assigned.blocks():               # the report's one pass for what every report shows
        evidence.add(events, a)
    evidence.late_flushes(phases)                     # what Evidence(events, assigned) answers

What a claim may need about any write phase (its last writes, a final flush before close) and
how far each phase reached are gathered in the report's own pass, with memory per phase. The
questions only some claims ask (the operations of a latency claim, a group's stonewall,
IOzone's closes and start signal) read the trace again when asked, answered block by block
with the very function Evidence applies to the whole table where the rule looks at one row at a
time, and on the rows of the phases asked about where it looks across rows (a latency
claim's operations other than single calls: memory per row of those phases).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from iowitness.analysis.judge import claim_windows, latency
from iowitness.analysis.measure import buffering, evidence
from iowitness.analysis.phasing import call_bounds, operation_values, phases as phase_module
from iowitness.analysis.read import distinct


class StreamedEvidence:
    def __init__(self, assigned, phases: pd.DataFrame):
        self._assigned = assigned
        self._writes = LastWrites(phases)
        self._reach = Reach()
        self._fed = False
        self._cache: dict = {}
        self.data_calls_seen = False   # any read, write or fault (report.unseen asks)
        # asked with every question of single calls' values, in its pass (`timed` kinds): what a
        # run over several hosts pools of each host's requests (analysis/runs/pooled_hosts.py)
        self.pooled_with: tuple[str, ...] = ()

    def add(self, events: pd.DataFrame, a: pd.DataFrame) -> None:
        kind = phase_module.call_kinds(events["syscall"])
        self.data_calls_seen = self.data_calls_seen or bool(
            ((kind == phase_module.READ) | (kind == phase_module.WRITE)).any())
        self._writes.add(events, a, kind)
        self._reach.add(events, a)

    def finish(self) -> None:
        self._fed = True

    def _gathered(self) -> None:
        if not self._fed:   # nobody fed the pass: one of its own
            for events, a in self._assigned.blocks():
                self.add(events, a)
            self._fed = True

    def late_flushes(self, phases: pd.DataFrame) -> dict[int, dict]:
        self._gathered()
        return self._writes.late_flushes() if len(phases) else {}

    def final_write(self, phases: pd.DataFrame, phase: int) -> dict | None:
        self._gathered()
        return self._writes.final_write(phase) if buffering.stream_write_phase(phases, phase) else None

    def reach(self) -> pd.Series:
        self._gathered()
        return self._reach.result()

    def operations(self, phases: list[int], timed: str, direction: str | None, low: int | None = None) -> np.ndarray:
        """`low`: only the calls that started then or later (a claim's timed period)."""
        key = operations_question(phases, timed, direction, low)
        if key not in self._cache:
            self._cache[key] = self._operations(phases, timed, direction, low)
        return self._cache[key]

    def _operations(self, phases: list[int], timed: str, direction: str | None, low: int | None) -> np.ndarray:
        if timed in ("call", "call or sync"):   # one row, one operation: the rule applied to each block
            parts = [latency.operations(e, a, phases, timed, direction) for e, a in self._blocks(low)]
            return np.concatenate(parts) if parts else np.empty(0, np.float64)
        if timed in latency.GAPS:   # each call with its thread's calls around it: a value per call held
            gaps = latency.ThreadGaps(phases, timed, direction)
            for e, a in self._blocks(low):
                gaps.add(e, a)
            return gaps.result()
        # the other windows join rows of a thread or a span: the rule applied to the rows of
        # these phases, all it looks at (latency.operations reads no row outside them)
        events, a = self._rows_of(phases, ["syscall", "start_ns", "end_ns", "tid"], low)
        return latency.operations(events, a, phases, timed, direction)

    def operation_values(self, phases: list[int], timed: str, direction: str | None,
                         low: int | None = None) -> operation_values.OperationValues:
        """operations() as OperationValues, in memory up to a budget and in a temporary file past
        it (single calls, "interval" and "around": fio's requests and the gaps around them)."""
        key = values_question(phases, timed, direction, low)
        self.ask([key])
        return self._cache[key]

    def _blocks(self, low: int | None):
        """The blocks, with the calls that started before `low` in no phase."""
        for e, a in self._assigned.blocks():
            yield e, _from(e, a, low)

    def calls_between(self, phases: list[int], low: int, high: int | None = None) -> pd.DataFrame:
        """Per phase: its counted data calls that started at `low` or later, and ended by `high`
        (claim_windows.calls_between)."""
        key = ("between", tuple(phases), low, high)
        if key not in self._cache:
            self._cache[key] = claim_windows.merge_blocks(
                [claim_windows.calls_between(e, a, phases, low, high) for e, a in self._assigned.blocks()])
        return self._cache[key]

    def nth_call_start(self, phases: list[int], n: int, low: int, direction: str | None = None) -> int | None:
        """When the n-th (from 0) counted data call of `phases` that started at `low` or later
        started, in time order; None when they have n or fewer. With a `direction`, only its
        calls count, as a latency claim's operations (latency.data_calls). Memory: n + 1 times
        per block."""
        key = ("nth", tuple(phases), n, low, direction)
        if key not in self._cache:
            kept = np.empty(0, np.int64)
            for e, a in self._assigned.blocks():
                start = e["start_ns"].to_numpy(np.int64)
                if direction is None:
                    kind = phase_module.call_kinds(e["syscall"])
                    mine = np.isin(a["phase"].to_numpy(), phases) & ~phase_module.uncounted(a) \
                        & np.isin(kind, (phase_module.READ, phase_module.WRITE))
                else:
                    mine = latency.data_calls(e, a, phases, direction)
                mine &= start >= low
                kept = np.concatenate([kept, start[mine]])
                if len(kept) > n + 1:
                    kept = np.partition(kept, n)[:n + 1]
            self._cache[key] = int(np.sort(kept)[n]) if len(kept) > n else None
        return self._cache[key]

    def calls_ended_by(self, phases: list[int], direction: str | None, times: list[int]) -> np.ndarray:
        """How many data calls of `phases` in `direction` (latency.data_calls) had ended by each
        of `times` (per-request lines' times: judge/request_anchor.py). Memory: a count per time."""
        key = ("ended by", tuple(phases), direction, tuple(times))
        if key not in self._cache:
            marks = np.asarray(times, np.int64)
            counts = np.zeros(len(marks), np.int64)
            for e, a in self._assigned.blocks():
                ends = np.sort(e["end_ns"].to_numpy(np.int64)[latency.data_calls(e, a, phases, direction)])
                counts += np.searchsorted(ends, marks, side="right")
            self._cache[key] = counts
        return self._cache[key]

    def calls_of(self, phases: list[int], columns: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The events of `phases` (`columns` and syscall) and their rows of the assignment
        (judge/return_wait.py)."""
        return self._rows_of(phases, columns)

    def _rows_of(self, phases: list[int], columns: list[str],
                 low: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
        kept_events, kept_names, kept_assigned = [], [], []
        for e, a in self._blocks(low):
            mine = np.isin(a["phase"].to_numpy(), phases)
            kept_events.append(pd.DataFrame({c: e[c].to_numpy()[mine] for c in columns if c != "syscall"}))
            kept_names.append(pd.Categorical(e["syscall"])[mine])
            kept_assigned.append(a[mine].drop(columns=["operation"]).reset_index(drop=True))
        if not kept_events:
            return self._rows_of_nothing(columns)
        events = pd.concat(kept_events, ignore_index=True)
        # each block's categories are its own: one set for all, a byte per row
        events["syscall"] = union_categoricals(kept_names, ignore_order=True)
        return events, pd.concat(kept_assigned, ignore_index=True)

    @staticmethod
    def _rows_of_nothing(columns: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        events = pd.DataFrame({c: np.empty(0, np.int64) for c in columns})
        events["syscall"] = pd.Categorical([])
        return events, pd.DataFrame({"span": np.empty(0, np.int64), "phase": np.empty(0, np.int64),
                                     "warmup": np.empty(0, bool), "fill": np.empty(0, bool)})

    def stonewall_counts(self, phases: list[int], at: int) -> tuple[dict, dict, dict]:
        key = stonewall_question(phases, at)
        self.ask([key])
        return self._cache[key]

    def closes_on(self, paths: list[str]) -> pd.DataFrame:
        key = closes_question(paths)
        self.ask([key])
        return self._cache[key]

    def neighbours(self, tids: list[int], firsts: list[int], lasts: list[int]):
        """call_bounds.neighbours over the whole trace: the calls around each stretch."""
        key = neighbours_question(tids, firsts, lasts)
        self.ask([key])
        return self._cache[key]

    def ask(self, keys: list[tuple]) -> None:
        """Answer these questions (stonewall_question, closes_question, neighbours_question,
        operations_question of single calls) in one pass over the blocks, each as its method
        would; a question answered before is not asked again. A benchmark that knows which it
        will ask (IOzone's groups: iozone_groups.questions; fio's latency claims: fio.matcher)
        asks them together: one pass instead of one each."""
        # what a run over several hosts pools rides along, straight to a file (no budget held in
        # memory: they are written out for the pooling anyway, analysis/runs/pooled_hosts.py)
        riding = {("values", k[1], timed, k[3], k[4]) for k in keys if k[0] == "values" and k[2] == "call"
                  for timed in self.pooled_with} - set(keys)
        keys = keys + sorted(riding, key=repr)
        keys = list(dict.fromkeys(k for k in keys if k not in self._cache))
        for k in [k for k in keys if k[0] == "operations" and not _by_row(k)]:
            self.operations(*k[1:])   # operations across rows: from the rows of their phases
        keys = [k for k in keys if k not in self._cache]
        if not keys:
            return
        single = [k for k in keys if k[0] == "operations"]
        values: dict[tuple, list] = {k: [] for k in single}
        held = {k: operation_values.OperationValues(0 if k in riding else None) for k in keys if k[0] == "values"}
        gaps = {k: latency.ThreadGaps(list(k[1]), k[2], k[3], into=held[k]) for k in held if k[2] in latency.GAPS}
        walls = [k for k in keys if k[0] == "stonewall"]
        closes = [k for k in keys if k[0] == "closes"]
        asked = [k for k in keys if k[0] == "neighbours"]
        # the stretches of every neighbours question as one question: each is answered on its own
        tids, firsts, lasts = ([x for k in asked for x in k[i]] for i in (1, 2, 3))
        counts: dict[tuple, tuple[dict, dict, dict]] = {k: ({}, {}, {}) for k in walls}
        close_parts: dict[tuple, list] = {k: [] for k in closes}
        around: list = []
        for e, a in self._assigned.blocks():
            for k in single:
                values[k].append(latency.operations(e, _from(e, a, k[4]), list(k[1]), k[2], k[3]))
            for k, store in held.items():
                if k in gaps:
                    gaps[k].add(e, _from(e, a, k[4]))
                elif k[2] == "start":
                    store.add(latency.starts_ns(e, _from(e, a, k[4]), list(k[1]), k[3]))
                else:
                    store.add(latency.durations_ns(e, _from(e, a, k[4]), list(k[1]), k[2], k[3]))
            for k in walls:
                _add_counts(counts[k], evidence.stonewall_counts(e, a, list(k[1]), k[2]))
            for k in closes:
                close_parts[k].append(evidence.closes_on(e, list(k[1])))
            if asked:
                around.append(call_bounds.neighbours(e, tids, firsts, lasts))
        for k in single:
            self._cache[k] = np.concatenate(values[k]) if values[k] else np.empty(0, np.float64)
        for k, store in held.items():
            self._cache[k] = store.finish()
        for k, (counted, calls, later) in counts.items():
            self._cache[k] = (dict(sorted(counted.items())), dict(sorted(calls.items())), dict(sorted(later.items())))
        for k, parts in close_parts.items():
            self._cache[k] = pd.concat(parts, ignore_index=True) if parts else \
                pd.DataFrame({"start_ns": np.empty(0, np.int64), "end_ns": np.empty(0, np.int64)})
        if asked:
            before, before_name, after, after_name = call_bounds.combine(
                around or [call_bounds.neighbours(pd.DataFrame(), tids, firsts, lasts)])
            at = 0
            for k in asked:
                mine = slice(at, at + len(k[1]))
                self._cache[k] = (before[mine], before_name[mine], after[mine], after_name[mine])
                at = mine.stop

    def first_call_on(self, path: str, low: int, high) -> int | None:
        key = ("first", path, low, high)
        if key not in self._cache:
            found = None
            for e, _ in self._assigned.blocks():
                found = evidence.first_call_on(e, path, low, high)
                if found is not None:
                    break
            self._cache[key] = found
        return self._cache[key]


def _from(events: pd.DataFrame, a: pd.DataFrame, low: int | None) -> pd.DataFrame:
    """A block's assignment with the calls that started before `low` in no phase."""
    if low is None:
        return a
    return a.assign(phase=np.where(events["start_ns"].to_numpy(np.int64) >= low, a["phase"].to_numpy(), -1))


def operations_question(phases: list[int], timed: str, direction: str | None, low: int | None = None) -> tuple:
    """StreamedEvidence.operations(phases, timed, direction, low) as a question for ask()."""
    return ("operations", tuple(int(p) for p in phases), timed, direction, low)


def values_question(phases: list[int], timed: str, direction: str | None, low: int | None = None) -> tuple:
    """StreamedEvidence.operation_values(phases, timed, direction, low) as a question for ask()
    (the phases in any order: the same question). "start": each data call's start time
    (latency.starts_ns), one per "call" value, in the same order."""
    assert timed in ("call", "call or sync", "sync", "interval", "around", "start"), timed
    return ("values", tuple(sorted(int(p) for p in phases)), timed, direction, low)


def _by_row(key: tuple) -> bool:
    """Whether an operations question is answered a row at a time (single calls)."""
    return key[2] in ("call", "call or sync")


def stonewall_question(phases: list[int], at: int) -> tuple:
    """StreamedEvidence.stonewall_counts(phases, at) as a question for ask()."""
    return ("stonewall", tuple(int(p) for p in phases), int(at))


def closes_question(paths: list[str]) -> tuple:
    """StreamedEvidence.closes_on(paths) as a question for ask()."""
    return ("closes", tuple(paths))


def neighbours_question(tids: list[int], firsts: list[int], lasts: list[int]) -> tuple:
    """StreamedEvidence.neighbours(tids, firsts, lasts) as a question for ask()."""
    return ("neighbours", tuple(int(t) for t in tids), tuple(int(f) for f in firsts), tuple(int(x) for x in lasts))


def _add_counts(total: tuple[dict, dict, dict], block: tuple[dict, dict, dict]) -> None:
    """One block's evidence.stonewall_counts added to those of the blocks before it: bytes and
    calls add up, the first call after the stonewall is the earliest."""
    counted, calls, later = total
    c, n, s = block
    for p, v in c.items():
        counted[p] = counted.get(p, 0) + v
    for p, v in n.items():
        calls[p] = calls.get(p, 0) + v
    for p, v in s.items():
        later[p] = min(later.get(p, v), v)


class LastWrites:
    """Per write phase, what buffering.late_flushes and final_write look at: its counted writes'
    count, the last full-record write, the writes after it, the last two writes, and whether
    the next call of the last write's thread closes its fd."""

    PENDING, CLOSES, OTHER = 0, 1, 2

    def __init__(self, phases: pd.DataFrame):
        size = int(phases["phase"].max()) + 1 if len(phases) else 1
        number = phases["phase"].to_numpy(np.int64)
        self.record = np.full(size, np.nan)
        self.record[number] = phases["record_size"].to_numpy(np.float64)
        self.is_write = np.zeros(size, bool)
        self.is_write[number] = (phases["operation"] == "write").to_numpy()
        zeros = (lambda dtype=np.int64: np.zeros(size, dtype))
        self.count, self.full_end, self.tail_calls, self.tail_bytes, self.tail_first = (zeros() for _ in range(5))
        # off_size: a write before the last full-record one that is not a full record (no stream's)
        self.has_full, self.tail_bad, self.off_size = zeros(bool), zeros(bool), zeros(bool)
        self.last_row = np.full(size, -1, np.int64)
        self.last_tid, self.last_fd, self.last_start, self.last_end, self.last_ret, self.prev_end, self.next_start = \
            (zeros() for _ in range(7))
        self.status = zeros(np.int8)

    def add(self, events: pd.DataFrame, a: pd.DataFrame, kind: np.ndarray) -> None:
        n = len(events)
        if not n:
            return
        base = int(events.index[0])
        tid, fd = events["tid"].to_numpy(np.int64), events["fd"].to_numpy(np.int64)
        start, end = events["start_ns"].to_numpy().view(np.int64), events["end_ns"].to_numpy().view(np.int64)
        ret, requested = events["ret"].to_numpy(np.int64), events["requested"].to_numpy().view(np.int64)
        # the next call of a last write's thread, when the write was in an earlier block
        waiting = np.flatnonzero((self.last_row >= 0) & (self.status == self.PENDING))
        if len(waiting):
            tids, first = distinct.unique(tid, return_index=True)
            at = np.searchsorted(tids, self.last_tid[waiting])
            found = (at < len(tids)) & (tids[np.minimum(at, len(tids) - 1)] == self.last_tid[waiting])
            for p, i in zip(waiting[found], first[at[found]]):
                self._resolve(p, i, kind, fd, start)
        phase = a["phase"].to_numpy()
        inside = (phase >= 0) & (phase < len(self.is_write))
        w = np.flatnonzero((kind == phase_module.WRITE) & inside & ~phase_module.uncounted(a)
                           & self.is_write[np.where(inside, phase, 0)])
        if not len(w):
            return
        order = w[np.argsort(phase[w], kind="stable")]
        ph = phase[order]
        bounds = np.flatnonzero(np.r_[True, ph[1:] != ph[:-1]])
        updated = []
        for b, e in zip(bounds, np.r_[bounds[1:], len(ph)]):
            p, rows = int(ph[b]), order[b:e]
            self._update(p, rows, requested, start, end, ret, tid, fd, base)
            updated.append((p, int(rows[-1])))
        # the next call of the same thread inside this block: looked for after each last write
        # when they are few, else from one sort of the block by thread
        if len(updated) <= 16:
            for p, last in updated:
                after = np.flatnonzero(tid[last + 1:] == tid[last])
                if len(after):
                    self._resolve(p, last + 1 + int(after[0]), kind, fd, start)
            return
        by_tid = np.argsort(tid, kind="stable")
        same = tid[by_tid][1:] == tid[by_tid][:-1]
        following = np.full(n, -1, np.int64)
        following[by_tid[:-1][same]] = by_tid[1:][same]
        for p, last in updated:
            if following[last] >= 0:
                self._resolve(p, int(following[last]), kind, fd, start)

    def _update(self, p, rows, requested, start, end, ret, tid, fd, base) -> None:
        record = self.record[p]
        asked = requested[rows]
        full = np.flatnonzero(asked == record)
        self.count[p] += len(rows)
        if len(full):
            k = int(full[-1])
            # the writes after the earlier full ones (short, or larger) now come before a full one
            self.off_size[p] |= bool(self.tail_calls[p]) or bool((asked[:k] != record).any())
            tail = rows[k + 1:]
            self.has_full[p], self.full_end[p] = True, end[rows[k]]
            self.tail_calls[p] = len(tail)
            self.tail_bytes[p] = int(np.clip(ret[tail], 0, None).sum())
            self.tail_bad[p] = bool((asked[k + 1:] >= record).any())
            self.tail_first[p] = start[tail[0]] if len(tail) else 0
        else:
            if not self.tail_calls[p]:
                self.tail_first[p] = start[rows[0]]
            self.tail_calls[p] += len(rows)
            self.tail_bytes[p] += int(np.clip(ret[rows], 0, None).sum())
            self.tail_bad[p] |= bool((asked >= record).any())
        self.prev_end[p] = end[rows[-2]] if len(rows) >= 2 else self.last_end[p]
        last = rows[-1]
        self.last_row[p], self.last_tid[p], self.last_fd[p] = base + last, tid[last], fd[last]
        self.last_start[p], self.last_end[p], self.last_ret[p] = start[last], end[last], ret[last]
        self.status[p] = self.PENDING

    def _resolve(self, p, i, kind, fd, start) -> None:
        closes = kind[i] == phase_module.CLOSE and fd[i] == self.last_fd[p]
        self.status[p] = self.CLOSES if closes else self.OTHER
        self.next_start[p] = start[i]

    def late_flushes(self) -> dict[int, dict]:
        found = np.flatnonzero(self.is_write & (self.count >= 2) & self.has_full & (self.tail_calls > 0)
                               & ~self.tail_bad & ~self.off_size & (self.status == self.CLOSES))
        return {int(p): {"bytes": int(self.tail_bytes[p]), "calls": int(self.tail_calls[p]),
                         "record": int(self.record[p]), "after_full_ns": int(self.tail_first[p] - self.full_end[p]),
                         "close_after_ns": int(self.next_start[p] - self.last_end[p])} for p in found}

    def final_write(self, p: int) -> dict | None:
        if p >= len(self.count) or self.count[p] < 2 or self.status[p] != self.CLOSES:
            return None
        return {"bytes": int(max(self.last_ret[p], 0)), "before_end_ns": int(self.prev_end[p]),
                "gap_ns": int(self.last_start[p] - self.prev_end[p])}


class Reach:
    """evidence.reach over blocks: per phase, the largest end of a call's bytes."""

    def __init__(self):
        self.best = np.zeros(0, np.int64)
        self.seen = np.zeros(0, bool)

    def add(self, events: pd.DataFrame, a: pd.DataFrame) -> None:
        part = evidence.reach(events, a)
        if not len(part):
            return
        index = part.index.to_numpy(np.int64)
        if index.max() >= len(self.best):
            grow = int(index.max()) + 1 - len(self.best)
            self.best = np.r_[self.best, np.full(grow, np.iinfo(np.int64).min)]
            self.seen = np.r_[self.seen, np.zeros(grow, bool)]
        self.best[index] = np.maximum(self.best[index], part.to_numpy(np.int64))
        self.seen[index] = True

    def result(self) -> pd.Series:
        index = np.flatnonzero(self.seen)
        return pd.Series(self.best[index], index=pd.Index(index, dtype=np.int64))
