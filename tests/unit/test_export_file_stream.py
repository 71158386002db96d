"""The single-file export (`export TRACE --parquet FILE.parquet`) block by block (analysis/read/run.py
export_parquet given stream_events' blocks) against the file of the loaded trace: read back, the
same table (schema, values, categories) and the same key-value metadata (pandas' and the
trace's), a row group per block; and the command: --stream taken, chosen by itself for a trace
too large for memory, its refusals those of the loaded path, in one line."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from iowitness.analysis.read import run, stream_events
from iowitness.collector.format.traceformat import json_bytes
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.commands import export
from iowitness.errors import BadTrace, UsageError
from iowitness.outputfile import Output
from iowitness.probes.layout import layout
from tests.support import trace_mutants
from tests.support.bench import script
from tests.support.blocks import BLOCKS
from tests.support.cli import iowitness
from tests.support.hostile import write_hostile_trace
from tests.support.synthetic import DEV, O_CREAT, O_WRONLY, Calls, event_records
from tests.unit.test_show_events_stream import write_busy_trace

SMALL_BLOCKS = {**os.environ, "IOWITNESS_STREAM_BLOCK_ROWS": "37"}


def write_many_files(path: Path, files: int = 300) -> None:
    """One process writing 300 files (more paths than an int8 category code holds), each opened,
    written three times and closed, a FILE fact each, in chunks of 1 to 9 records: a block of
    rows holds few of the paths."""
    calls = Calls(tgid=7)
    for k in range(files):
        calls.open(f"/data/f{k:03}", O_WRONLY | O_CREAT).write(4096).write(4096).write(100).close()
    frame = calls.frame()
    records = event_records(frame)
    lay = layout()
    facts = np.zeros(files, lay.meta)
    facts["kind"] = [k for k, n in lay.names("iow_meta_kind", "IOW_META_").items() if n == "file"][0]
    facts["dev"], facts["tgid"], facts["fd"], facts["dirfd"] = DEV, 7, 3, -100
    for k in range(files):
        name = f"/data/f{k:03}"
        facts[k]["ino"], facts[k]["ts_ns"] = calls.files[name].ino, int(frame["start_ns"].iloc[5 * k])
        facts[k]["path"][:len(name)] = np.frombuffer(name.encode(), np.uint8)
    rng = np.random.default_rng(3)
    with TraceWriter(path, {"mode": "run", "command": ["bench"], "host": "unit", "targets": []}) as writer:
        writer.write_facts(facts)
        trace_mutants.write_in_small_chunks(writer, records, rng)
        writer.close({"exit_code": 0})


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export-file")
    made = {"busy": folder / "busy.iwt", "no clock": folder / "noclock.iwt", "dd": folder / "dd.iwt",
            "hostile": folder / "hostile.iwt", "many files": folder / "many.iwt", "iozone": folder / "iozone.iwt"}
    write_busy_trace(made["busy"])
    write_busy_trace(made["no clock"], clock=False, seed=1)
    trace_mutants.write_dd_trace(made["dd"])
    write_hostile_trace(made["hostile"])
    write_many_files(made["many files"])
    script("report_10m").build_trace(made["iozone"], 20_000, 4, 1)
    return made


def assert_same_file(got: Path, expected: Path) -> pq.ParquetFile:
    """The file at `got` reads back as the one at `expected`: schema, metadata, values, categories."""
    a, b = pq.ParquetFile(expected), pq.ParquetFile(got)
    assert b.schema_arrow.equals(a.schema_arrow, check_metadata=True)
    table, whole = b.read(), a.read()
    assert table.equals(whole, check_metadata=True)
    pd.testing.assert_frame_equal(table.to_pandas(), whole.to_pandas(), check_exact=True, check_categorical=True)
    return b


def loaded_file(path, out: Path) -> Path:
    run.export_parquet(run.load(path), out)
    return out


@pytest.mark.parametrize("rows", BLOCKS)
def test_the_file_block_by_block_is_the_loaded_one(traces, tmp_path, rows):
    for name, path in traces.items():
        if name == "iozone" and rows == 1:
            continue   # (its chunks are 32 Ki records: blocks of 1 and of 37 rows are the same)
        expected = loaded_file(path, tmp_path / f"{name}-loaded.parquet")
        # WHEN the events are written block by block
        out = tmp_path / f"{name}-{rows}.parquet"
        with stream_events.open_events(path, block_rows=rows) as source:
            blocks = sum(1 for _ in source.blocks())
            run.export_parquet(source.trace, Output(out), blocks=source.blocks())
            meta = source.meta
        # THEN a row group per block, and the file reads back as the loaded one
        got = assert_same_file(out, expected)
        assert got.metadata.num_row_groups == blocks, name
        assert got.schema_arrow.metadata[b"iowitness"] == json_bytes(meta)
        assert b"pandas" in got.schema_arrow.metadata
        assert blocks > 1 or name in ("hostile", "iozone") or rows == 1000, name


def test_the_command_with_stream_writes_the_loaded_file(traces, tmp_path):
    for name in ("busy", "many files"):
        # WHEN export runs on it in memory and with --stream (small blocks), with a --mode
        loaded = iowitness("export", str(traces[name]), "--parquet", str(tmp_path / "a.parquet"), "--mode", "640")
        got = iowitness("export", str(traces[name]), "--parquet", str(tmp_path / "b.parquet"), "--mode", "640",
                        "--stream", env=SMALL_BLOCKS)
        # THEN it says the same, and writes the same file with the same permissions
        assert got.stdout == loaded.stdout.replace("a.parquet", "b.parquet") and got.stderr == ""
        assert assert_same_file(tmp_path / "b.parquet", tmp_path / "a.parquet").metadata.num_row_groups > 1
        assert stat.S_IMODE((tmp_path / "b.parquet").stat().st_mode) == 0o640


def _loaded_export(path: str, out) -> int:
    """The events as `iowitness.load` reads them, written whole (the Python API's export)."""
    trace = run.load(path)
    export._usable(path, trace)
    run.export_parquet(trace, out)
    return len(trace.events)


def test_a_cut_or_damaged_trace_exports_as_loading_reads_it(traces, tmp_path):
    # GIVEN the busy trace cut in its middle, and 30 damaged copies of the fuzzer's base traces
    whole = traces["busy"].read_bytes()
    (tmp_path / "cut.iwt").write_bytes(whole[:len(whole) // 2])
    given = [("cut", tmp_path / "cut.iwt")]
    for k, (_, how, data) in enumerate(trace_mutants.mutants(trace_mutants.write_bases(tmp_path), 30, seed=8)):
        (tmp_path / f"mutant-{k}.iwt").write_bytes(data)
        given.append((how, tmp_path / f"mutant-{k}.iwt"))
    written = refused = 0
    for how, path in given:
        # WHEN each is exported as the command does it, loaded and block by block
        a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
        try:
            count = _loaded_export(str(path), Output(a))
        except (BadTrace, UsageError) as exc:
            # THEN what the loaded path refuses is refused for the same reason, and nothing is written
            with pytest.raises(type(exc)) as caught:
                export._events_of(str(path), Output(b))
            assert str(caught.value) == str(exc) and not b.exists(), how
            refused += 1
            continue
        # THEN otherwise the same count and the same file
        assert export._events_of(str(path), Output(b)) == count, how
        assert_same_file(b, a)
        a.unlink(), b.unlink()
        written += 1
    assert written > 10 and refused > 5, (written, refused)


def test_the_refusals_are_the_loaded_ones_in_one_line(traces, tmp_path):
    not_a_trace = tmp_path / "notes.iwt"
    not_a_trace.write_text("hello")
    summary, empty = tmp_path / "summary.iwt", tmp_path / "empty.iwt"
    trace_mutants.write_summary_trace(summary)
    with TraceWriter(empty, {"mode": "run", "command": ["true"], "host": "unit", "targets": []}) as writer:
        writer.close({"exit_code": 0})
    link = tmp_path / "link.parquet"
    link.symlink_to(tmp_path / "elsewhere.parquet")
    good = str(traces["dd"])
    for trace, out, code in ((str(tmp_path / "none.iwt"), "o.parquet", 6), (str(not_a_trace), "o.parquet", 6),
                             (str(summary), "o.parquet", 2), (str(empty), "o.parquet", 2),
                             (good, "no/such/dir/o.parquet", 5), (good, "notes.iwt/o.parquet", 5),
                             (good, "link.parquet", 5)):
        # WHEN each is exported in memory and block by block
        loaded = iowitness("export", trace, "--parquet", str(tmp_path / out), check=False)
        got = iowitness("export", trace, "--parquet", str(tmp_path / out), "--stream", check=False, env=SMALL_BLOCKS)
        # THEN the same code and the same one line, no traceback, no file written
        assert (got.returncode, got.stderr, got.stdout) == (loaded.returncode, loaded.stderr, ""), (trace, out)
        assert got.returncode == code and got.stderr.count("\n") == 1 and "Traceback" not in got.stderr, got.stderr
        assert not (tmp_path / "o.parquet").exists() and not (tmp_path / "elsewhere.parquet").exists()
