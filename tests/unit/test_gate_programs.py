"""Which program is the benchmark when `attach --pid` was given a gate (collector/gate_programs.py):
the facts a shell that forks or execs its programs makes, written by hand as the probe sends them
(FORK: child and parent; EXEC: the path executed; FILE: an open of a followed file). The PIDs are
above the kernel's largest (4,194,304), so /proc knows none of them: each program is named by
its path."""

from __future__ import annotations

import numpy as np

from iowitness.collector.gate_programs import GatePrograms
from iowitness.probes.layout import layout

KINDS = layout().enums["iow_meta_kind"]
SHELL, BASE = 5_000_000, 5_000_100


def _facts(rows):
    """rows: ("fork", ts, child, parent) | ("exec", ts, pid, path) | ("file", ts, pid, fd)."""
    out = np.zeros(len(rows), dtype=layout().meta)
    for i, (kind, ts, pid, arg) in enumerate(rows):
        out[i]["kind"], out[i]["ts_ns"], out[i]["tgid"], out[i]["fd"] = KINDS[f"IOW_META_{kind.upper()}"], ts, pid, -1
        if kind == "fork":
            out[i]["parent_tgid"] = arg
        elif kind == "exec":
            raw = arg.encode()
            out[i]["path"][:len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        else:
            out[i]["fd"] = arg
    return out


def test_dash_forking_its_one_program_makes_that_program_the_benchmark():
    # GIVEN dash (`sh -c 'read go; iozone -t 2 ...'`) forking a child that execs IOzone, whose own
    # children (-t 2) fork without exec, and one of which runs system("sync") (sh, then sync)
    gate = GatePrograms(SHELL, "sh")
    gate.note(_facts([("fork", 10, BASE, SHELL), ("exec", 11, BASE, "/usr/bin/iozone"), ("file", 12, BASE, 3),
                      ("fork", 20, BASE + 1, BASE), ("fork", 21, BASE + 2, BASE),
                      ("fork", 30, BASE + 3, BASE + 1), ("exec", 31, BASE + 3, "/bin/sh"),
                      ("fork", 32, BASE + 4, BASE + 3), ("exec", 33, BASE + 4, "/bin/sync")]), KINDS)
    # WHEN asked for the benchmark
    benchmark, listed = gate.benchmark(100)
    # THEN it is IOzone, in the shell's child; what IOzone ran is not a program of the shell
    assert (benchmark["pid"], benchmark["path"], benchmark["ts_ns"]) == (BASE, "/usr/bin/iozone", 11)
    assert listed is None


def test_of_several_programs_the_longest_that_opened_a_followed_file_is_taken():
    # GIVEN a gate running cat on a notes file (short), IOzone (long), ls (opens no followed file,
    # runs on to the trace's end, the longest of all), each in a child of its own
    gate = GatePrograms(SHELL, "dash")
    gate.note(_facts([("fork", 10, BASE, SHELL), ("exec", 11, BASE, "/bin/cat"), ("file", 12, BASE, 3)]), KINDS)
    gate.note(_facts([("fork", 20, BASE + 1, SHELL), ("exec", 21, BASE + 1, "/usr/bin/iozone"),
                      ("fork", 22, BASE + 2, BASE + 1), ("file", 23, BASE + 2, 3),   # its child opens
                      ("fork", 500, BASE + 3, SHELL), ("exec", 501, BASE + 3, "/bin/ls")]), KINDS)
    # WHEN asked for the benchmark
    benchmark, listed = gate.benchmark(5_000)
    # THEN IOzone: ls ran longer but opened no followed file; all three are listed, with why
    assert benchmark["path"] == "/usr/bin/iozone"
    assert [p["path"] for p in listed["programs"]] == ["/bin/cat", "/usr/bin/iozone", "/bin/ls"]
    assert [p["lasted_ns"] for p in listed["programs"]] == [10, 480, 4_499]
    assert [p["opened_target"] for p in listed["programs"]] == [True, True, False]
    assert (listed["count"], listed["chosen"], listed["shell"]) == (3, 1, SHELL)
    assert "opened a file the trace follows" in listed["why"]


def test_a_process_that_is_not_a_shell_is_followed_only_into_its_own_exec():
    # GIVEN a benchmark attached to (fio) whose child execs a prerun command, then a wrapper
    # (env) attached to that execs the benchmark itself
    fio = GatePrograms(SHELL, "fio")
    fio.note(_facts([("fork", 10, BASE, SHELL), ("exec", 11, BASE, "/bin/sh"),
                     ("fork", 12, BASE + 1, BASE), ("exec", 13, BASE + 1, "/bin/sync")]), KINDS)
    wrapper = GatePrograms(SHELL + 1, "env")
    wrapper.note(_facts([("exec", 10, SHELL + 1, "/usr/bin/fio")]), KINDS)
    # THEN fio's prerun is nothing (the trace's command stays fio's); the wrapper's exec is fio
    assert fio.benchmark(100) == (None, None)
    benchmark, listed = wrapper.benchmark(100)
    assert benchmark["path"] == "/usr/bin/fio" and benchmark["pid"] == SHELL + 1 and listed is None


def test_a_shell_that_execs_a_shell_script_follows_it_to_the_program_it_runs():
    # GIVEN `sh -c 'read go; exec bash run.sh'`, run.sh forking fio
    gate = GatePrograms(SHELL, "sh")
    gate.note(_facts([("exec", 10, SHELL, "/bin/bash"), ("fork", 20, BASE, SHELL),
                      ("exec", 21, BASE, "/usr/bin/fio"), ("file", 22, BASE, 4)]), KINDS)
    # THEN the benchmark is fio, not bash
    benchmark, listed = gate.benchmark(100)
    assert benchmark["path"] == "/usr/bin/fio" and benchmark["pid"] == BASE and listed is None
