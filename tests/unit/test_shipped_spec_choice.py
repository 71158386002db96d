"""A program no benchmark module knows, whose output a shipped claims spec reads: `check` and
`report` choose that spec by the recorded command ([benchmark] program), and `--spec NAME`
takes a shipped spec by its name (analysis/benchmarks/spec.py: reads, shipped_for, load)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from iowitness import shipped
from iowitness.analysis.benchmarks import spec as spec_module
from iowitness.analysis.judge import trace_verdicts
from iowitness.analysis.read import printed

# ioping 1.3's output for `ioping -c 3 -i 0 .` (as it prints it: request lines, then the summary)
IOPING = """4 KiB <<< . (ext4 /dev/vda1 251.0 GiB): request=1 time=98.9 us (warmup)
4 KiB <<< . (ext4 /dev/vda1 251.0 GiB): request=2 time=65.8 us
4 KiB <<< . (ext4 /dev/vda1 251.0 GiB): request=3 time=59.7 us

--- . (ext4 /dev/vda1 251.0 GiB) ioping statistics ---
2 requests completed in 125.5 us, 8 KiB read, 15.9 k iops, 62.2 MiB/s
generated 3 requests in 2.00 ms, 12 KiB, 1.50 k iops, 5.86 MiB/s
min/avg/max/mdev = 59.7 us / 62.8 us / 65.8 us / 3.05 us
"""


def _trace(command: list[str], output: str = IOPING):
    return SimpleNamespace(meta={"command": command, "cwd": "/d", "mode": "run"},
                           output={"stdout": output, "stderr": ""})


@pytest.fixture(autouse=True)
def _no_timeline(monkeypatch):
    monkeypatch.setattr(printed, "lines_of", lambda trace: [])


@pytest.mark.parametrize("command, name", [
    (["ioping", "-c", "3", "-i", "0", "."], "ioping"),
    (["/usr/bin/ioping", "-c", "3", "."], "ioping"),
    (["sh", "-c", "ioping -c 3 -i 0 ."], "ioping"),
    (["sysbench", "fileio", "--file-test-mode=rndrd", "run"], "sysbench_fileio"),
    (["stress-ng", "--hdd", "1", "--metrics"], "stress-ng_hdd"),
    (["fs_mark-3.3", "-d", "d", "-n", "10"], "fs_mark"),
])
def test_the_spec_whose_program_the_command_runs_is_chosen(command, name):
    # GIVEN a recorded command that runs a program a shipped spec names
    # WHEN the shipped specs are asked for it THEN that one answers
    found = spec_module.shipped_for(trace_verdicts.benchmarks.shell_command.command_of(command))
    assert found is not None and found[0] == name


@pytest.mark.parametrize("command", [["sysbench", "cpu", "run"], ["stress-ng", "--cpu", "1"], ["iopingx", "."],
                                     ["myping"], []])
def test_no_spec_for_another_command(command):
    # GIVEN a command no shipped spec's program matches (sysbench cpu is not fileio)
    assert spec_module.shipped_for(command) is None


def test_check_reads_a_known_programs_output_with_its_shipped_spec_and_says_so():
    # GIVEN a trace of ioping without --spec
    source, claims = trace_verdicts.claims_of(_trace(["ioping", "-c", "3", "-i", "0", "."]))
    # THEN its claims come from the shipped spec, exactly as --spec with the file gives them
    given = trace_verdicts.claims_of(_trace(["ioping", "-c", "3", "-i", "0", "."]),
                                     spec=str(shipped.specs()["ioping"]))[1]
    assert source == "spec" and [c.printed for c in claims] == [c.printed for c in given] and claims
    assert "read with the shipped spec ioping" in claims[0].extra["placement"]
    # AND --spec with the shipped spec's name is the same spec, and says nothing of a choice
    named = trace_verdicts.claims_of(_trace(["ioping", "-c", "3", "-i", "0", "."]), spec="ioping")[1]
    assert [c.printed for c in named] == [c.printed for c in given]
    assert "shipped spec" not in named[0].extra["placement"]


def test_an_unknown_program_still_asks_for_a_spec():
    # GIVEN a program nothing knows, printing ioping's lines
    with pytest.raises(trace_verdicts.NoClaims, match="cannot tell which benchmark printed this"):
        trace_verdicts.claims_of(_trace(["./mybench"]))


@pytest.mark.parametrize("program, why", [(3, "'program' is 3"), ([], None), (["sysbench", ""], "'program' is")])
def test_a_specs_program_is_a_name_or_a_list_of_words(program, why):
    source = {"benchmark": {"name": "x", "program": program},
              "claim": [{"pattern": "^(?P<value>\\d+) MB/s$", "test": "t", "unit": "MB/s"}]}
    if why is None:
        assert spec_module.loads(source).program == ()
    else:
        with pytest.raises(spec_module.SpecError, match=why):
            spec_module.loads(source)
