"""export --parquet DIR over a sweep of 120 runs, and the queries docs/dataset.md gives users,
run by DuckDB: their answers against what the runs were made to do (tests/support/sweep.py)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.support import sweep
from tests.support.cli import iowitness

DOC = Path(__file__).resolve().parents[2] / "docs" / "dataset.md"
RUNS = 120


def doc_queries() -> dict[str, str]:
    """{heading: SQL} for each ### section of "Queries to start from"."""
    text = DOC.read_text().split("## Queries to start from", 1)[1].split("\n## ", 1)[0]
    return {m[1].strip(): m[2] for m in re.finditer(r"^### (.+?)$.*?```sql\n(.*?)```", text, re.M | re.S)}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """GIVEN 120 dd runs on three hosts and three file systems, exported as one dataset."""
    duckdb = pytest.importorskip("duckdb", reason="duckdb is in the test extra: pip install -e '.[test]'")
    tmp = tmp_path_factory.mktemp("sweep")
    planned = sweep.plan(RUNS)
    for run in planned:
        sweep.write(run, tmp / f"run{run.number:03d}.iwt")
    out = tmp / "dataset"
    proc = iowitness("export", "--parquet", str(out), *sorted(str(p) for p in tmp.glob("*.iwt")))
    assert f"{RUNS} run(s)" in proc.stdout
    con = duckdb.connect()

    def query(sql: str) -> list[tuple]:
        return con.execute(sql.replace("DIR", str(out))).fetchall()
    return planned, query, out


def test_the_doc_has_the_three_queries():
    assert set(doc_queries()) == {"Throughput per phase name across runs", "p99 latency per file system",
                                  "Verdicts that changed"}


def test_every_run_and_call_is_in_the_dataset_once(dataset):
    planned, query, out = dataset
    # THEN one row per run, partitioned by benchmark, each with its host and wall-clock start
    rows = query("select host, benchmark, epoch_ns(start_time), start_wall_ns from 'DIR/runs/*/*.parquet' "
                 "order by start_wall_ns")
    assert [(r[0], r[1], r[3]) for r in rows] == [(p.host, "dd", p.wall_start_ns) for p in planned]
    assert all(r[2] == r[3] // 1000 * 1000 for r in rows)   # the timestamp is the wall clock to the µs
    # AND every call: count writes of 64 KiB, an open and a close per run
    calls = query("select syscall, count(*), sum(ret) from 'DIR/events/*/*.parquet' group by all order by all")
    count = sum(p.count for p in planned)
    assert calls == [("close", RUNS, 0), ("openat", RUNS, 3 * RUNS), ("write", count, count * sweep.BS)]
    # AND no table has two column types across its files (Spark reads one file's schema for all)
    for table in ("runs", "events", "phases", "verdicts"):
        files = sorted((out / table).glob("*/*.parquet"))
        assert len(files) == RUNS
        schemas = {tuple(query(f"select name, type from parquet_schema('{f}')")) for f in files}
        assert len(schemas) == 1, table


def test_throughput_per_phase_name_across_runs(dataset):
    planned, query, _ = dataset
    rows = query(doc_queries()["Throughput per phase name across runs"])
    rates = np.array([p.wall_Bps for p in planned]) / 2**20
    # THEN one phase name, dd's, over every run: back-to-back 64 KiB writes, 64 KiB per call latency
    assert rows == [("dd", "dd write", RUNS, round(float(np.median(rates)), 1), round(float(rates.min()), 1),
                     round(float(rates.max()), 1))]


def test_p99_latency_per_file_system(dataset):
    planned, query, _ = dataset
    rows = query(doc_queries()["p99 latency per file system"])
    expected = []
    for fs in sorted(sweep.FILE_SYSTEMS):
        latencies = np.sort(np.concatenate([np.full(p.count, p.latency_ns) for p in planned if p.fs_type == fs]))
        # nearest rank, as quantile_disc: the smallest value with 99 % of the calls at or below it
        expected.append((fs, "write", len(latencies), latencies[int(np.ceil(0.99 * len(latencies))) - 1] / 1e3))
    assert rows == expected


def test_verdicts_that_changed(dataset):
    planned, query, _ = dataset
    rows = query(doc_queries()["Verdicts that changed"])
    # THEN exactly the runs whose dd told the truth when the run before lied, or lied when it told it
    changed = [p for prev, p in zip(planned, planned[1:]) if prev.lies != p.lies]
    assert [(r[1], r[4]) for r in rows] == [(p.host, "dd write") for p in changed]
    for r, p in zip(rows, changed):
        assert (r[6] == "agrees") == (not p.lies) and (r[5] == "agrees") == p.lies


@pytest.fixture
def two(tmp_path):
    runs = sweep.plan(2)
    paths = [tmp_path / f"r{r.number}.iwt" for r in runs]
    for run, path in zip(runs, paths):
        sweep.write(run, path)
    return [str(p) for p in paths]


@pytest.mark.parametrize("case, code, words", [
    ("a symlink", 5, "is a symbolic link"), ("a file", 5, "exists and is not a directory"),
    ("the same run twice", 2, "are the same run"),
])
def test_a_dataset_that_cannot_be_written_is_one_line_and_writes_nothing_through_it(tmp_path, two, case, code, words):
    # GIVEN a destination a user can get wrong
    out, traces = tmp_path / "out", two
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if case == "a symlink":
        out.symlink_to(elsewhere)
    elif case == "a file":
        out.write_text("notes")
    else:
        traces = [two[0], two[0]]
    # WHEN the runs are exported there
    proc = iowitness("export", "--parquet", str(out), *traces, check=False)
    # THEN one line with the exit code docs/exit-codes.md gives, and nothing written through a link
    assert proc.returncode == code and proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr
    assert not any(elsewhere.iterdir())


def test_exporting_a_run_again_replaces_its_files_and_adding_runs_adds_files(tmp_path, two):
    out = tmp_path / "out"
    iowitness("export", "--parquet", str(out), two[0])
    first = sorted(p.name for p in out.rglob("*.parquet"))
    # WHEN the first run is exported again with a second one, into the same directory
    iowitness("export", "--parquet", str(out), *two)
    # THEN the first run's files are the same names (replaced), the second's are new
    names = sorted(p.name for p in out.rglob("*.parquet"))
    assert set(first) < set(names) and len(names) == 2 * len(first)
