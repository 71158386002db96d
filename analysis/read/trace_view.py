"""What every trace shows without its events table: meta, files, processes, output, counters,
losses, and the naming of a block's columns (syscalls, devices, paths). The loaded trace
(analysis/read/run.py Trace, which adds the events table) and the trace read block by block
(analysis/read/streamed.py StreamedTrace) are both this; the block pipeline (analysis/measure/stream_full.py)
gives either its report."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Callable

import numpy as np
import pandas as pd

from iowitness.analysis.read import device_records
from iowitness.collector.format.traceformat import dev_name, ops_of_kind
from iowitness.collector.format.tracereader import TraceData

# the calls that open a file: their process's record of the fd they return is made at their
# exit, by the same probe program, a few microseconds after the call's end (_paths); 1 ms is far beyond
OPENING = (*ops_of_kind("open"), "creat")
OPEN_FACT_NS = 1_000_000

if TYPE_CHECKING:
    from iowitness.analysis.report import Report


class TraceView:
    """A trace's meta, files, processes, output, counters, lost, missing; its report once built."""

    def __init__(self, data: TraceData):
        self.meta, self.output, self.counters, self.lost = data.meta, data.output, data.counters, data.lost
        # what the trace misses (lost events, files or processes not followed), in words; "" when nothing
        self.missing = data.missing
        self.samples, self.summary = data.samples, data.summary
        # the BLOCK and OFFCPU records of a trace read whole (None when read block by block:
        # analysis/read/device_records.py reads them for every consumer, either way)
        self.block, self.offcpu = data.block, data.offcpu
        self.stored_bytes = data.stored_bytes
        # the output timeline (collector/format/printed_timeline.py); None in traces without one
        self.printed = getattr(data, "printed", None)
        self._ops, self._meta_kinds, self._facts = data.ops, data.meta_kinds, data.facts
        self._data, self._columns = data, data.columns
        self._report: Report | None = None
        self._build_report: Callable[[], Report] | None = None   # set by stream_full.open_report

    @property
    def event_count(self) -> int:
        return self._data.event_count

    @property
    def aio_done(self) -> np.ndarray | None:
        """libaio requests' kernel completions (analysis/read/device_records.py)."""
        return device_records.of(self).aio_done

    def event_frame(self, raw: dict[str, np.ndarray], index: pd.Index, kind: type[pd.DataFrame] = pd.DataFrame,
                    distinct: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
        """The events table of the event columns `raw` (all of the trace's, or a block of them:
        analysis/read/stream_events.py), with the columns named from the trace (syscall, device, path).

        `distinct` ({"op": ..., "dev": ...}, each the trace's distinct values, sorted) gives a
        block the categories of the whole trace rather than only those of its own rows."""
        distinct = distinct or {}
        columns = {name: [_text(v) for v in column] if column.ndim > 1 else column
                   for name, column in raw.items()}
        # copy=False: each column stays its own block instead of being copied into 2-D blocks
        frame = kind(columns, index=index, copy=False)
        frame["syscall"] = _categorical(raw["op"], lambda op: self._ops.get(op, f"op{op}"), distinct.get("op"))
        frame["end_ns"] = raw["start_ns"] + raw["latency_ns"]
        frame["device"] = _categorical(raw["dev"], dev_name, distinct.get("dev"))
        opening = frame["syscall"].isin(OPENING).to_numpy()
        frame["path"] = self._paths(raw["dev"], raw["ino"], raw["start_ns"],
                                    (np.where(opening, frame["end_ns"].to_numpy(), 0), raw["tgid"], raw["ret"]))
        if "requested" in frame:
            # a size_t for I/O, but an off_t for lseek: signed shows lseek(fd, -4096, SEEK_CUR) as it was
            frame["requested"] = frame["requested"].to_numpy().view(np.int64)
        return frame

    def report(self) -> Report:
        """Phases, groups, outliers, device view, verdicts (iowitness.analysis.report.Report), as
        the block pipeline built them (analysis/measure/stream_full.py)."""
        if self._report is None and self._build_report is not None:
            self._report = self._build_report()   # stream_full.open_report: built when first asked for
        if self._report is None:
            raise RuntimeError("this trace's report is built by analysis/measure/stream_full.py (open_report or build)")
        return self._report

    def verdicts(self) -> pd.DataFrame:
        """The captured output's claims judged, one row per claim: what `report().verdicts` gives."""
        from iowitness.analysis.judge import trace_verdicts as judged

        try:
            return judged.table(judged.verdicts(self))
        except judged.NoClaims as exc:
            empty = judged.table([])
            empty.attrs["why"] = str(exc)
            return empty

    def phases(self) -> pd.DataFrame:
        """One row per phase of the benchmark, rebuilt from the events (see analysis/phasing/phases.py)."""
        return self.report().phases

    @cached_property
    def files(self) -> pd.DataFrame:
        rows = [{"dev": int(t["dev"]), "ino": int(t["ino"]), "path": str(t["path"]),
                 "source": "target"} for t in self.meta.get("targets", [])]
        opened = self._facts_of("file")
        for f in opened[np.argsort(opened["ts_ns"], kind="stable")]:
            rows.append({"dev": int(f["dev"]), "ino": int(f["ino"]), "path": _path(f),
                         "tgid": int(f["tgid"]), "fd": int(f["fd"]), "dirfd": int(f["dirfd"]),
                         "s_magic": int(f["s_magic"]), "comm": _text(f["comm"]),
                         "ts_ns": int(f["ts_ns"]), "source": "open"})
        columns = ["dev", "ino", "device", "path", "tgid", "fd", "dirfd", "s_magic", "comm",
                   "ts_ns", "source"]
        frame = pd.DataFrame(rows, columns=columns)
        # targets registered before tracing know only dev, ino and path: the rest is <NA>
        frame = frame.astype({"dev": "uint32", "ino": "uint64", "tgid": "UInt32", "fd": "Int32",
                              "dirfd": "Int32", "s_magic": "UInt32", "ts_ns": "UInt64"})
        frame["device"] = [dev_name(int(d)) for d in frame["dev"]]
        return frame

    @cached_property
    def processes(self) -> pd.DataFrame:
        facts = self._facts_of("fork", "exec")
        # processes running before an attach: what /proc said of them then (kind "attach")
        start_ns = int((self.meta.get("clock_start") or {}).get("monotonic_ns", 0))
        rows = [{"kind": "attach", "tgid": int(p["pid"]), "parent_tgid": 0, "comm": str(p.get("comm") or ""),
                 "path": " ".join(p.get("cmdline") or []), "ts_ns": start_ns}
                for p in self.meta.get("attached") or [] if isinstance(p, dict) and "pid" in p]
        rows += [{"kind": self._meta_kinds[int(f["kind"])], "tgid": int(f["tgid"]),
                  "parent_tgid": int(f["parent_tgid"]), "comm": _text(f["comm"]),
                  "path": _text(f["path"]), "ts_ns": int(f["ts_ns"])}
                 for f in facts[np.argsort(facts["ts_ns"], kind="stable")]]
        frame = pd.DataFrame(rows, columns=["kind", "tgid", "parent_tgid", "comm", "path", "ts_ns"])
        return frame.astype({"tgid": "uint32", "parent_tgid": "uint32", "ts_ns": "uint64"})

    def _facts_of(self, *kinds: str) -> np.ndarray:
        wanted = [k for k, name in self._meta_kinds.items() if name in kinds]
        facts: np.ndarray = self._facts[np.isin(self._facts["kind"], wanted)]
        return facts

    def _paths(self, dev: np.ndarray, ino: np.ndarray, start: np.ndarray,
               opens: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> pd.Categorical:
        """The path of each event's file: the last one it was opened under before the event;
        for an event that opens it (`opens`: each event's end, 0 for the calls that open
        nothing, its tgid and its ret), the one it opened: the record its process made of that
        fd at its exit (by OPEN_FACT_NS after its end; a reopen of a known name records nothing,
        and the name before it stands).

        An inode number can name several files over a run (ext4 gives a deleted file's number
        to the next new file), so the mapping is by time when a (dev, ino) had several paths.
        An open's file is recorded at the open's exit, after the event began: looked up backward,
        fs_mark's new file took the name of the log file deleted just before, whose inode it
        reused, and its phase was left out as that log's; IOzone -b's workbook took its test file's.
        """
        categories, first, ambiguous, table = self._path_lookup
        key = dev.astype(np.uint64) << np.uint64(44) ^ ino.astype(np.uint64)
        codes = np.full(len(key), -1, dtype=np.int64)
        if first is not None:
            # first path of each file: enough unless a file had several. Looked up once per
            # distinct file, then spread to the events by the file's code
            key_codes, distinct = pd.factorize(key)
            codes = first.reindex(distinct).fillna(-1).to_numpy(np.int64)[key_codes]
        if table is not None and ambiguous is not None:
            probe = pd.DataFrame({"key": key, "ts": start.astype(np.int64), "row": np.arange(len(key))})
            mixed = probe[np.isin(key, ambiguous)].sort_values("ts")
            found = pd.merge_asof(mixed, table, on="ts", by="key", direction="backward")
            hit = found["code"].notna().to_numpy()
            codes[found["row"].to_numpy()[hit]] = found["code"].to_numpy()[hit].astype(np.int64)
            if opens is not None:
                end, tgid, fd = opens
                opening = mixed[end[mixed["row"].to_numpy()] > 0]
                own = pd.merge_asof(opening, table.assign(own_ts=table["ts"]), on="ts", by="key", direction="forward")
                rows = own["row"].to_numpy()
                same_fd = (own["tgid"] == tgid[rows].astype(np.int64)) & (own["fd"] == fd[rows].astype(np.int64))
                hit = (own["code"].notna() & (own["own_ts"] <= end[rows] + OPEN_FACT_NS) & same_fd).to_numpy()
                codes[own["row"].to_numpy()[hit]] = own["code"].to_numpy()[hit].astype(np.int64)
        return pd.Categorical.from_codes(codes, dtype=categories)

    @cached_property
    def _path_lookup(self) -> tuple[pd.CategoricalDtype, pd.Series | None, np.ndarray | None,
                                    pd.DataFrame | None]:
        """What _paths needs of the files table, made once (a streamed trace names each block
        with it): the categories, each file's first path, and the files with several paths
        with the table of when each path began (None, None when there are none)."""
        files = self.files
        categories = sorted(set(files["path"]))
        code_of = {p: k for k, p in enumerate(categories)}
        file_key = files["dev"].to_numpy(np.uint64) << np.uint64(44) ^ files["ino"].to_numpy(np.uint64)
        file_code = np.array([code_of[p] for p in files["path"]], dtype=np.int64)
        paths = pd.Series(file_code).groupby(file_key).nunique()
        first = pd.Series(file_code).groupby(file_key).first() if len(files) else None
        ambiguous, table = None, None
        if (paths > 1).any():
            ambiguous = paths.index[paths > 1].to_numpy()
            when = files["ts_ns"].fillna(0).to_numpy(np.int64)
            table = pd.DataFrame({"key": file_key, "ts": when, "code": file_code,
                                  # the targets named before tracing have neither (unsigned columns: -1 after)
                                  "tgid": files["tgid"].astype("Int64").fillna(-1).to_numpy(np.int64),
                                  "fd": files["fd"].astype("Int64").fillna(-1).to_numpy(np.int64)}).sort_values("ts")
        return pd.CategoricalDtype(_names(categories)), first, ambiguous, table



def _text(raw: np.ndarray) -> str:
    """A NUL-terminated byte array as text; a byte that is not UTF-8 kept as a `\xff` escape
    (README, "Names from the trace"), so two names never become one (U+FFFD would merge them)."""
    return raw.tobytes().split(b"\0", 1)[0].decode("utf-8", errors="backslashreplace")


def _path(f: np.void) -> str:
    """A FILE fact's path. One that fills the probe's field (IOW_PATH_MAX - 1 bytes) may have been
    cut there: marked so, with its inode, so that two long paths cut alike never read as one file."""
    text = _text(f["path"])
    if f["path"][-2] != 0:
        text += f"…[cut at {len(f['path']) - 1} bytes; inode {int(f['ino'])}]"
    return text


def _categorical(values: np.ndarray, name_of: Callable[[int], str],
                 uniques: np.ndarray | None = None) -> pd.Categorical:
    """Few distinct values over many rows: name each distinct value once, not each row.
    `uniques`: the distinct values to name (sorted, a superset of those in `values`), when
    they are not those of `values` alone (a block of a trace: the trace's categories)."""
    if uniques is not None:
        codes = np.searchsorted(uniques, values)
    elif len(values) and values.dtype.kind == "u" and values.max() < 2**16:
        # small codes (syscall numbers): a counting pass instead of hashing every row
        uniques = np.flatnonzero(np.bincount(values))
        lookup = np.zeros(int(uniques[-1]) + 1, dtype=np.int64)
        lookup[uniques] = np.arange(len(uniques))
        codes = lookup[values]
    else:
        codes, uniques = pd.factorize(values, sort=True)
    names = [name_of(int(u)) for u in uniques]
    categories = list(dict.fromkeys(names))
    to_code = np.array([categories.index(n) for n in names], dtype=np.int64)
    return pd.Categorical.from_codes(to_code[codes], categories=_names(categories))


def _names(categories: list[str]) -> pd.Index:
    # typed even when empty, so that Parquet gets a string column, not a null one
    return pd.Index(categories, dtype="str")
