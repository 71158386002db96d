"""The benchmark registry (analysis/benchmarks/__init__.py): which benchmarks it knows, the
interface each module provides, and that one new module is all a new benchmark needs."""

from __future__ import annotations

import argparse
import re
import types
from types import SimpleNamespace

import pytest

from iowitness.analysis import benchmarks
from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.judge.claim import Claim, Match
from iowitness.analysis.measure import stream_full
from iowitness.commands import _claims
from tests.support.synthetic import O_CREAT, O_TRUNC, O_WRONLY, Calls

# what every module in BENCHMARKS provides (the package docstring names each)
ATTRIBUTES = ("NAME", "PROGRAM", "SIGNATURE")
FUNCTIONS = ("parse", "add_command", "processes", "name_phases", "window", "matcher")


def test_the_registry_lists_the_known_benchmarks():
    # GIVEN the registry WHEN its benchmarks are listed THEN IOzone, fio, dd and spec, in that order
    assert [module.NAME for module in benchmarks.BENCHMARKS] == ["iozone", "fio", "dd", "spec"]
    assert benchmarks.formats() == ["iozone", "fio", "dd"]  # spec needs its spec file: --spec
    assert benchmarks.by_name("fio") is benchmarks.fio and benchmarks.by_name("bonnie") is None


@pytest.mark.parametrize("module", benchmarks.BENCHMARKS, ids=lambda m: m.NAME)
def test_each_module_provides_the_documented_interface(module):
    # GIVEN a registered module WHEN its interface is looked at
    # THEN it has every attribute and function the package docstring documents
    for name in ATTRIBUTES + FUNCTIONS:
        assert hasattr(module, name), f"{module.__name__} has no {name}"
        assert re.search(rf"^  {name}\b", benchmarks.__doc__, re.MULTILINE), f"the docstring does not say {name}"
    assert all(callable(getattr(module, name)) for name in FUNCTIONS)
    assert isinstance(module.NAME, str) and module.PROGRAM in (None, module.NAME)
    assert module.SIGNATURE is None or isinstance(module.SIGNATURE, re.Pattern)


@pytest.mark.parametrize("command, name", [
    (["iozone", "-i0"], "iozone"), (["/usr/bin/fio-3.33", "job.fio"], "fio"), (["dd", "if=/dev/zero"], "dd"),
    (["./stdio_bench"], None), ([], None), (None, None)])
def test_recognise_by_the_program(command, name):
    assert benchmarks.recognise(command) == name


# ---- a benchmark the registry did not know: one module is enough --------------------------------

def _toy_module() -> types.ModuleType:
    """A minimal benchmark, "toybench", which prints `toybench: write <MB/s>` per file it writes."""
    toy = types.ModuleType("toybench")
    toy.NAME, toy.PROGRAM = "toy", "toybench"
    toy.SIGNATURE = re.compile(r"^toybench: ", re.MULTILINE)

    def parse(text):
        return [Claim("toy", "toy write", float(m.group(1)), "MB/s", m.group(0), bytes_per_s=float(m.group(1)) * 1e6,
                      direction="write", index=i)
                for i, m in enumerate(re.finditer(r"^toybench: write ([\d.]+)$", text, re.MULTILINE))]

    def add_command(claims, argv):
        for claim in claims:
            claim.extra["command"] = argv[1:]

    def name_phases(table, argv, pid=None, cwd=None):
        return ["toy write" if operation == "write" else None for operation in table["operation"]]

    def matcher(report_, claims, argv, trace=None):
        named = report_.phases[report_.phases["benchmark_name"].astype(object) == "toy write"]
        order = iter(range(len(named)))
        return lambda claim: Match(named.iloc[[next(order)]])

    toy.parse, toy.add_command, toy.name_phases, toy.matcher = parse, add_command, name_phases, matcher
    toy.processes = lambda argv: None
    toy.window = lambda argv: "calls"
    return toy


@pytest.fixture
def toy(monkeypatch):
    module = _toy_module()
    monkeypatch.setattr(benchmarks, "BENCHMARKS", benchmarks.BENCHMARKS + (module,))
    return module


def test_a_registered_module_is_all_a_new_benchmark_needs(toy):
    # GIVEN toybench, registered in the test, writing two files of 100 writes of 64 KiB, 10 µs each
    command = ["/opt/toy/toybench", "/data/a", "/data/b"]
    calls = Calls()
    for path in ("/data/a", "/data/b"):
        calls.open(path, O_WRONLY | O_CREAT | O_TRUNC)
        for _ in range(100):
            calls.write(65536, latency=10_000)
        calls.close().gap(1_000_000)
    trace = SimpleNamespace(events=calls.frame(), meta={"command": command, "pid": None})
    rate = 100 * 65536 / ((100 * 10_000) / 1e9)  # no time between the calls
    output = f"toybench: write {rate / 1e6:.3f}\ntoybench: write {rate / 1e6:.3f}\n"
    # WHEN its command line and its output are read, and its claims matched to the trace's phases
    # THEN it is recognised by its program and by its output, and is a --format choice
    assert benchmarks.recognise(command) == "toy" and benchmarks.sniff(output) == "toy"
    assert "toy" in benchmarks.formats()
    assert benchmarks.unknown().endswith("give --format iozone|fio|dd|toy or a --spec")
    parser = argparse.ArgumentParser()
    _claims.add_claim_options(parser)
    assert parser.parse_args(["--format", "toy"]).format == "toy"
    source, claims = benchmarks.claims_from(output, command)
    assert source == "toy" and [c.extra["command"] for c in claims] == [command[1:]] * 2
    # AND its phases get its names, and each claim is judged against its own phase
    rep = stream_full.build(trace)
    assert rep.benchmark == "toy" and list(rep.phases["benchmark_name"]) == ["toy write", "toy write"]
    verdicts = matching.match(rep, claims, source, command, trace=trace)
    assert [(v.verdict, v.phases, v.window) for v in verdicts] == [("agrees", [1], "calls"), ("agrees", [2], "calls")]
