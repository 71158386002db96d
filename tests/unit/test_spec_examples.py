"""The worked examples of docs/claims-spec.md, run: each spec parses its output into the
claims of its table, matched to the phases the table says, on the trace the example names
(built call by call here, as the example describes it)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from iowitness.analysis.benchmarks import spec
from iowitness.analysis.measure import stream_full
from tests.support.synthetic import O_CREAT, O_RDONLY, O_TRUNC, O_WRONLY, Calls

DOC = Path(__file__).resolve().parents[2] / "docs" / "claims-spec.md"
WORKLOADS = Path(__file__).resolve().parents[2] / "tests" / "workloads"
KiB = 1024


def _examples() -> dict[str, tuple[str, str, list[list[str]]]]:
    """name -> (spec toml, output text, table rows) of each `<!-- example: name -->` section."""
    out = {}
    for name, body in re.findall(r"<!-- example: (\w+) -->\n(.*?)(?=<!-- example:|\Z)", DOC.read_text(), re.DOTALL):
        toml = re.search(r"```toml\n(.*?)```", body, re.DOTALL).group(1)
        text = re.search(r"```text\n(.*?)```", body, re.DOTALL).group(1)
        rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
                for line in body.splitlines() if re.match(r"^\| \d+ \|", line)]
        out[name] = (toml, text, rows)
    return out


def _csv_bench_trace():
    # the calls of example 1's run
    calls = Calls().open("/d/a", O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(256):
        calls.write(64 * KiB)
    calls.close().open("/d/a", O_RDONLY)
    for _ in range(256):
        calls.read(64 * KiB)
    calls.close().open("/d/a", O_RDONLY)
    for i in range(2000):
        calls.pread(4 * KiB, (i * 7919 % 4096) * 4 * KiB)
    calls.close().open("/d/b", O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(100):
        calls.write(4 * KiB).fsync()
    return calls.close()


def _latency_bench_trace():
    # example 2: a warm-up and three requests, each a pwrite and its fdatasync
    calls = Calls().open("/d/f", O_WRONLY | O_CREAT | O_TRUNC)
    for i in range(4):
        calls.pwrite(4 * KiB, i * 4 * KiB).fsync()
    return calls.close()


TRACES = {"csv": _csv_bench_trace, "latency": _latency_bench_trace, "sweep": _csv_bench_trace}


def _statistic(c) -> str:
    if "statistic" not in c.extra:
        return ""
    skip = f", skip {c.extra['skip']}" if c.extra.get("skip") else ""
    if c.extra.get("requests"):
        return f"request {c.extra['request']} of {c.extra['timed']}{skip}"
    return f"{c.extra['statistic']} of {c.extra['timed']}{skip}"


def _as(c) -> str:
    for field in ("bytes_per_s", "ops_per_s", "seconds_per_op"):
        if getattr(c, field) is not None:
            return f"{field} = {getattr(c, field):.10g}"
    return f"seconds = {c.extra['seconds']:.10g}"


@pytest.mark.parametrize("name", ["csv", "latency", "sweep"])
def test_each_worked_example_gives_the_claims_and_phases_of_its_table(name):
    # GIVEN the example's spec, its output, and the trace it describes
    toml, text, rows = _examples()[name]
    claims = spec.parse(text, spec.loads(toml))
    calls = TRACES[name]()
    trace = SimpleNamespace(events=calls.frame(), meta={"command": ["./bench"], "pid": None})
    built = stream_full.build(trace)
    find = spec.matcher(built, claims, ["./bench"], trace)
    # WHEN each claim is read and matched
    got = []
    for c in claims:
        found = find(c)
        phases = "–" if found is None else ", ".join(str(int(p)) for p in found.rows["phase"])
        got.append([str(c.index), c.test, f"{c.value:.10g}", c.unit, _as(c), _statistic(c), phases])
    # THEN they are the rows of the example's table, in order
    assert got == rows


def test_the_example_specs_are_the_workloads_own():
    # GIVEN example 1's spec THEN it is csv_bench.toml as shipped; example 2's is
    # latency_bench.toml with the two lines its run needs
    examples = _examples()
    assert examples["csv"][0] == (WORKLOADS / "csv_bench.toml").read_text()
    shipped = (WORKLOADS / "latency_bench.toml").read_text()
    tables = shipped[shipped.index("[[claim]]"):]
    tables = re.sub(r"(?m)^#.*\n", "", tables).replace('timed = "call"', 'timed = "call+sync"').replace(
        "skip = 0", "skip = 1")
    assert re.sub(r"\n+", "\n", examples["latency"][0]) == re.sub(r"\n+", "\n", tables)
