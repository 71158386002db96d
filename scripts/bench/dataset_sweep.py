#!/usr/bin/env python3
"""dataset_sweep.py — the cost of `export --parquet DIR` over a sweep of runs and of the
starting queries of docs/dataset.md on it (DuckDB), repeated, median and range.

The runs are tests/support/sweep.py's: small dd traces written by the real trace writer
(60-70 calls each), so the figure is the per-run cost of loading, reporting and writing five
tables, not of big traces.

Usage: .venv/bin/python scripts/bench/dataset_sweep.py [RUNS] [REPEATS]   (default 120 5)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support import sweep  # noqa: E402
from tests.unit.test_dataset import doc_queries  # noqa: E402


def main() -> None:
    import duckdb

    runs, repeats = (int(a) for a in (sys.argv[1:] + ["120", "5"][len(sys.argv[1:]):])[:2])
    with tempfile.TemporaryDirectory() as tmp:
        traces = []
        for run in sweep.plan(runs):
            path = Path(tmp) / f"run{run.number:04d}.iwt"
            sweep.write(run, path)
            traces.append(str(path))
        export, query = [], {name: [] for name in doc_queries()}
        for k in range(repeats):
            out = Path(tmp) / f"dataset{k}"
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "iowitness.cli", "export", "--parquet", str(out), *traces],
                           check=True, capture_output=True)
            export.append(time.perf_counter() - start)
            con = duckdb.connect()
            for name, sql in doc_queries().items():
                start = time.perf_counter()
                con.execute(sql.replace("DIR", str(out))).fetchall()
                query[name].append(time.perf_counter() - start)
    show = lambda xs: f"median {statistics.median(xs):.3f} s (range {min(xs):.3f}-{max(xs):.3f})"  # noqa: E731
    print(f"export --parquet of {runs} runs, {repeats} times: {show(export)}; "
          f"{statistics.median(export) / runs * 1e3:.0f} ms per run")
    for name, xs in query.items():
        print(f"duckdb {name}: {show(xs)}")


if __name__ == "__main__":
    main()
