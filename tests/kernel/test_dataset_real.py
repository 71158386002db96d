"""A dataset of real runs (dd and fio) read by DuckDB and by Spark in local mode, unchanged.

Ground truth: the bytes dd was told to write (and says it wrote), and fio's own JSON
(io_bytes per job), neither from iowitness.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel


@pytest.fixture(scope="module")
def real_dataset(tmp_path_factory):
    """GIVEN two dd runs and a fio run, each traced by iowitness run, exported as one dataset."""
    tmp = tmp_path_factory.mktemp("realsweep")
    traces, truth = [], {}
    for bs, count in ((65536, 100), (4096, 300)):
        trace = tmp / f"dd-{bs}.iwt"
        proc = iowitness("run", "-q", "-o", str(trace), "--", "dd", "if=/dev/zero", f"of={tmp}/dd.dat",
                         f"bs={bs}", f"count={count}")
        assert f"{bs * count} bytes" in proc.stdout + proc.stderr
        traces.append(str(trace))
        truth.setdefault("dd", []).append(bs * count)
    fio_json = tmp / "fio.json"
    iowitness("run", "-q", "-o", str(tmp / "fio.iwt"), "--", "fio", "--name=w", f"--filename={tmp}/fio.dat",
              "--rw=write", "--bs=16k", "--size=2m", "--output-format=json", f"--output={fio_json}")
    traces.append(str(tmp / "fio.iwt"))
    truth["fio"] = [sum(job["write"]["io_bytes"] for job in json.loads(fio_json.read_text())["jobs"])]
    out = tmp / "dataset"
    iowitness("export", "--parquet", str(out), *traces)
    return out, truth


# the data files only: fio's --output JSON is a file it writes too, and the trace sees it
WRITTEN = ("select benchmark, run_id, sum(ret) as bytes from {events} "
           "where syscall in ('write', 'pwrite64', 'writev', 'pwritev') and phase > 0 and path like '%.dat' "
           "group by benchmark, run_id order by benchmark, bytes desc")


def test_duckdb_sums_the_bytes_each_benchmark_said_it_wrote(real_dataset):
    duckdb = pytest.importorskip("duckdb")
    out, truth = real_dataset
    rows = duckdb.connect().execute(WRITTEN.format(events=f"'{out}/events/*/*.parquet'")).fetchall()
    got: dict[str, list[int]] = {}
    for benchmark, _, written in rows:
        got.setdefault(benchmark, []).append(int(written))
    assert got == {"dd": sorted(truth["dd"], reverse=True), "fio": truth["fio"]}


def test_spark_local_mode_reads_the_dataset_unchanged(real_dataset):
    if shutil.which("java") is None:
        pytest.skip("no Java for Spark: scripts/setup.sh installs default-jre-headless")
    pyspark = pytest.importorskip("pyspark", reason="pyspark is in the test extra: pip install -e '.[test]'")
    from pyspark.sql import SparkSession

    out, truth = real_dataset
    spark = (SparkSession.builder.master("local[1]").appName("iowitness-dataset")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1").getOrCreate())
    try:
        spark.sparkContext.setLogLevel("ERROR")
        # WHEN Spark discovers the events table (benchmark from the partition folders) and runs the query
        spark.read.parquet(str(out / "events")).createOrReplaceTempView("events")
        rows = spark.sql(WRITTEN.format(events="events")).collect()
    finally:
        spark.stop()
    # THEN it finds what the benchmarks wrote, as DuckDB does
    got: dict[str, list[int]] = {}
    for row in rows:
        got.setdefault(row["benchmark"], []).append(int(row["bytes"]))
    assert got == {"dd": sorted(truth["dd"], reverse=True), "fio": truth["fio"]}
    assert pyspark.__version__


def test_runs_with_and_without_a_device_view_share_one_schema_per_table(real_dataset, tmp_path):
    import pyarrow.parquet as pq

    from tests.support import sweep

    out, _ = real_dataset
    # GIVEN the real runs' dataset and a run whose trace has no device view (its byte counts are NaN)
    mixed = tmp_path / "mixed"
    shutil.copytree(out, mixed)
    [run] = sweep.plan(1)
    sweep.write(run, tmp_path / "bare.iwt")
    # WHEN it is added to the dataset
    iowitness("export", "--parquet", str(mixed), str(tmp_path / "bare.iwt"))
    # THEN every table still has one column type per column across its files (Spark reads one file's)
    for table in ("runs", "events", "phases", "verdicts", "device"):
        files = sorted((mixed / table).glob("*/*.parquet"))
        assert len(files) == 4
        assert len({str(pq.read_schema(f).remove_metadata()) for f in files}) == 1, table
