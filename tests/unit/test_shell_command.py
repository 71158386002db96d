"""A benchmark started by a shell (analysis/benchmarks/shell_command.py): `sh -c "dd ..."` is read
as the dd it runs; a pipeline or a list is left as recorded, with a one-line note."""

from __future__ import annotations

import pytest

from iowitness.analysis import benchmarks
from iowitness.analysis.benchmarks.shell_command import command_of, unwrapped
from iowitness.analysis.report import benchmark_of
from tests.unit.test_claims import RECORDED_IN, recorded

DD = ["dd", "if=/dev/zero", f"of={RECORDED_IN}/dd.dat", "bs=64k", "count=32", "conv=fdatasync"]
DD_TEXT = " ".join(DD)


@pytest.mark.parametrize("command", [
    ["sh", "-c", DD_TEXT],
    ["/bin/bash", "-c", f"exec {DD_TEXT}"],
    ["dash", "-ec", f"LC_ALL=C {DD_TEXT} 2>&1"],
    ["sh", "-c", f"{DD_TEXT} >/tmp/dd.out 2> /tmp/dd.err"],
    ["sh", "-o", "errexit", "-c", DD_TEXT],
    ["busybox", "sh", "-c", DD_TEXT],
    ["sh", "-c", f"sh -c 'exec {DD_TEXT}'"],
])
def test_a_shells_simple_command_is_the_command_it_runs(command):
    assert unwrapped(command) == (DD, None)


def test_quoted_words_keep_their_blanks_and_operators():
    assert command_of(["sh", "-c", "dd if='my file' of=\"a|b\" bs=1M"]) == ["dd", "if=my file", "of=a|b", "bs=1M"]


@pytest.mark.parametrize("text", [f"{DD_TEXT} 2>&1 | cat", f"{DD_TEXT}; sync", f"sync && {DD_TEXT}",
                                  f"({DD_TEXT})", f"{DD_TEXT} &", "dd if=$(echo /dev/zero) of=x",
                                  "dd if=/dev/zero of=$OUT"])
def test_more_than_one_command_or_an_expansion_is_left_as_recorded_with_a_one_line_note(text):
    argv, note = unwrapped(["sh", "-c", text])
    assert argv == ["sh", "-c", text]
    assert note and "\n" not in note and "the benchmark is not read from it" in note, note


@pytest.mark.parametrize("command", [DD, ["sh", "script.sh"], ["sh", "-c"], ["bash", "-x", "run.sh"], []])
def test_anything_else_is_left_as_it_is(command):
    assert unwrapped(command) == (command, None)


def test_dd_under_sh_c_is_recognised_and_its_command_line_read():
    # GIVEN dd's real output and the shell command line that ran it
    shelled = ["sh", "-c", f"exec {DD_TEXT}"]
    # THEN the benchmark is dd, and its claims carry what dd's own command line says (a write,
    # the sync inside its time), as when dd ran alone
    assert benchmarks.recognise(shelled) == "dd"
    source, [claim] = benchmarks.claims_from(recorded("dd/write_fdatasync.txt"), shelled)
    _, [alone] = benchmarks.claims_from(recorded("dd/write_fdatasync.txt"), DD)
    assert source == "dd" and (claim.test, claim.direction) == ("dd write", "write")
    assert claim.extra["command"] == alone.extra["command"] and claim.extra["command"]["sync_in_timing"] is True
    # AND a trace's benchmark and command are dd's
    command, name, module = benchmark_of({"command": shelled})
    assert (command, name, module) == (DD, "dd", benchmarks.dd)
