"""docs/exit-codes.md's table (linked from the README), walked: every row has its cases, and every case is a row.

Each case is the real command line, run as a user runs it; what a wrong input must give is
its row's code, exactly one line on stderr, and no traceback. The numbers cover every numeric
option of run, attach, report, check and compare with nan, inf, negative, zero and huge values.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support.cli import IOWITNESS, iowitness
from tests.support.doc_tables import markdown_tables

EXIT_CODES = Path(__file__).resolve().parents[2] / "docs" / "exit-codes.md"


def table_codes() -> dict[int, str]:
    """{code: meaning} from the table under docs/exit-codes.md's "## Exit codes" ("130, 143" is two codes)."""
    section = EXIT_CODES.read_text().split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows = markdown_tables(section)[0][1:]
    return {int(code): meaning for cells in rows for code in re.findall(r"\d+", cells[0])
            for meaning in [cells[1]]}


def one_line(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def given(tmp_path_factory):
    """A real trace of dd (its output captured), and the bad files the cases hand over."""
    tmp = tmp_path_factory.mktemp("exit-codes")
    trace = tmp / "dd.iwt"
    iowitness("run", "-q", "-o", str(trace), "--", "dd", "if=/dev/zero", f"of={tmp / 'dd.bin'}", "bs=1M",
              "count=8", "conv=fsync")
    slow = tmp / "slow.txt"   # a claim 12,000 times slower than what the trace saw
    slow.write_text("8+0 records in\n8+0 records out\n8388608 bytes (8.4 MB, 8.0 MiB) copied, 100 s, 83.9 kB/s\n")
    latin1 = tmp / "latin1.toml"
    latin1.write_bytes('[benchmark]\nname = "d\xe9bit"\n'.encode("latin-1"))
    templates = {}
    for name, template in (("conversion", "{x!z}"), ("width", "{x:99999999999}"), ("attribute", "{x.__class__}"),
                           ("unbalanced", "{x")):
        spec = tmp / f"{name}.toml"
        spec.write_text(f"version = 1\n[[claim]]\npattern = '(?P<x>copied), (?P<value>[\\d.]+) s'\n"
                        f"test = \"{template}\"\nunit = \"s\"\n")
        templates[name] = str(spec)
    empty = tmp / "empty.iwt"   # a run that touched no file: no event to export
    iowitness("run", "-q", "-o", str(empty), "--", "true")
    not_a_trace = tmp / "notes.iwt"
    not_a_trace.write_text("hello")
    huge = tmp / "huge.iwt"   # 4 TiB, sparse: more events than any memory here can hold
    with open(huge, "wb") as f:
        f.truncate(4 << 40)
    client = tmp / "client.json"   # the least fio --client output: several traces are one run over hosts
    client.write_text('{"fio version": "fio-3.33", "client_stats": [{"hostname": "a"}]}\n')
    return SimpleNamespace(trace=str(trace), tmp=tmp, slow=str(slow), latin1=str(latin1), templates=templates,
                           not_a_trace=str(not_a_trace), out=str(tmp / "out.iwt"), empty=str(empty), huge=str(huge),
                           client=str(client))


def _numbers(command: list[str], option: str, values: list[str]) -> list:
    return [(command, option, value) for value in values]


# (code, case id, the arguments as a function of `given`)
CASES = [
    (0, "show a trace", lambda g: ["show", g.trace]),
    (1, "check a claim the trace refutes", lambda g: ["check", g.trace, "--claims", g.slow]),
    (1, "compare --fail-if a threshold crossed", lambda g: ["compare", g.trace, g.trace, "--fail-if", "bytes>=+0%"]),
    (2, "no command", lambda g: []),
    (2, "a --fail-if that is no expression", lambda g: ["compare", g.trace, g.trace, "--fail-if", "p99>>10%"]),
    (2, "several traces without the fio client's output", lambda g: ["report", g.trace, g.trace]),
    (2, "an unknown command", lambda g: ["bogus"]),
    (2, "a word for a number", lambda g: ["run", "--duration", "soon", "--", "true"]),
    (2, "run with no benchmark", lambda g: ["run", "-o", g.out]),
    (2, "attach to nothing", lambda g: ["attach", "-o", g.out]),
    (2, "a PID that is not a number", lambda g: ["attach", "--pid", "nan"]),
    (2, "an --on-fault that is no choice", lambda g: ["run", "--on-fault", "pause", "--", "true"]),
    (2, "a --claims file that does not exist", lambda g: ["report", g.trace, "--claims", f"{g.tmp}/none.txt"]),
    (2, "a --claims that is a directory", lambda g: ["check", g.trace, "--claims", str(g.tmp)]),
    (2, "a --spec that does not exist", lambda g: ["report", g.trace, "--spec", f"{g.tmp}/none.toml"]),
    (2, "a spec that is not UTF-8", lambda g: ["report", g.trace, "--spec", g.latin1]),
    *[(2, f"a spec template with {name}", lambda g, name=name: ["check", g.trace, "--spec", g.templates[name]])
      for name in ("conversion", "width", "attribute", "unbalanced")],
    (2, "export of a trace with no event", lambda g: ["export", g.empty, "--parquet", f"{g.tmp}/e.parquet"]),
    (2, "more --file paths than the probe holds",
     lambda g: ["run", "-o", g.out, *[f"--file={g.tmp}/f{i}" for i in range(2000)], "--", "true"]),
    *[(2, f"run {option} {value}", lambda g, option=option, value=value: ["run", option, value, "-o", g.out, "--", "true"])
      for option, values in (("--duration", ["nan", "inf", "-inf", "-1", "0", "1e400"]),
                             ("--ring-buffer-mb", ["nan", "inf", "-1", "0", "1e300"]),
                             ("--max-files", ["0", "-1", "nan", "99999999999"]),
                             ("--max-processes", ["0", "1.5", "99999999999"]))
      for value in values],
    *[(2, f"attach {option} {value}", lambda g, option=option, value=value:
       ["attach", "--pid", str(os.getpid()), option, value, "-o", g.out])
      for option, values in (("--duration", ["nan", "inf", "-5"]), ("--ring-buffer-mb", ["nan", "-inf", "4096"]))
      for value in values],
    *[(2, f"{command} --tolerance {value}", lambda g, command=command, value=value:
       [command, g.trace, *([g.trace] if command == "compare" else []), "--tolerance", value])
      for command in ("report", "check", "compare") for value in ("nan", "inf", "-5%", "1e400%", "5 percent")],
    *[(2, f"{command} --device-ceiling {value[:12]}", lambda g, command=command, value=value:
       [command, g.trace, "--device-ceiling", value])
      for command in ("report", "check") for value in ("0", "nan", "inf", "-5MB/s", "9" * 400 + "MB/s")],
    (4, "a PID that does not exist", lambda g: ["attach", "--pid", "999999999", "-o", g.out]),
    (4, "a PID too big for any process", lambda g: ["attach", "--pid", "9" * 30, "-o", g.out]),
    (4, "a negative PID", lambda g: ["attach", "--pid", "-1", "-o", g.out]),
    (4, "a command that does not exist", lambda g: ["run", "-o", g.out, "--", "no-such-benchmark-xyz"]),
    (4, "a --file in a directory that does not exist", lambda g: ["attach", "--file", f"{g.tmp}/no/f", "-o", g.out]),
    (5, "a trace in a directory that does not exist", lambda g: ["run", "-o", f"{g.tmp}/no/t.iwt", "--", "true"]),
    (5, "an HTML report in a directory that does not exist",
     lambda g: ["report", g.trace, "--html", f"{g.tmp}/no/r.html"]),
    (6, "a file that is not a trace", lambda g: ["show", g.not_a_trace]),
    (6, "a trace that does not exist", lambda g: ["report", f"{g.tmp}/none.iwt"]),
    (6, "a trace that cannot be read (a directory)", lambda g: ["show", str(g.tmp)]),
    # (7 is given by no command since every one reads a trace of any size block by block, a run
    # over several hosts too: the 4 TiB file is read, and is not a trace)
    (6, "a host's trace far larger than this machine's memory, which is not a trace",
     lambda g: ["report", g.huge, g.trace, "--claims", g.client]),
]
# cases with a process to time, in the tests below
TIMED = {3: "test_a_user_who_cannot_trace", 4: "test_a_pid_that_exits_while_attach_sets_up",
         130: "test_a_signal_while_the_probe_loads", 143: "test_a_signal_while_the_probe_loads"}


def test_every_row_of_the_table_has_a_case_and_every_case_is_a_row():
    # GIVEN the table a user reads, WHEN the codes of the cases here are compared with it
    rows = table_codes()
    covered = {code for code, _, _ in CASES} | set(TIMED)
    # THEN no row is left untested and no case gives a code the table does not list
    assert covered == set(rows), f"rows without a case: {set(rows) - covered}; cases off the table: {covered - set(rows)}"


@pytest.mark.parametrize("code, case, argv", CASES, ids=[case for _, case, _ in CASES])
def test_each_case_gives_its_row(given, code, case, argv):
    # GIVEN an input of this row, WHEN iowitness is run with it (a run or attach refused for its
    # words, exit 2, from a fork of the warm process: it starts nothing, and a Python start-up
    # costs 1.0-1.4 CPU-s; one that gets further starts up as a user's does)
    proc = iowitness(*argv(given), check=False, timeout=120, refused=code == 2)
    # THEN its row's code, and an error is one line with no traceback
    assert proc.returncode == code, f"{case}: exit {proc.returncode}\n{proc.stderr}"
    if code >= 2:
        assert one_line(proc).startswith("iowitness"), proc.stderr
    else:   # compare --fail-if names each threshold crossed on stderr (stdout may be its --json), and
        # check how its claims were placed (on the output timeline, or by order)
        said = [line for line in proc.stderr.splitlines()
                if not line.startswith(("iowitness: --fail-if ", "iowitness: claims "))]
        assert "Traceback" not in proc.stderr and not said, proc.stderr
    assert not os.path.exists(given.out), "a refused run or attach must not leave a trace behind"


def test_the_numbers_are_refused_before_anything_is_set_up(given):
    # GIVEN a run whose --duration is nan (it compares false with everything: a run without end)
    proc = iowitness("run", "--duration", "nan", "-o", given.out, "--", "true", check=False)
    # THEN it is named in the one line
    assert proc.returncode == 2 and "--duration must be a positive number of seconds, not nan" in one_line(proc)


def test_a_user_who_cannot_trace(tmp_path):
    # GIVEN an unprivileged user (nobody), WHEN it asks to trace, THEN exit 3 in one line
    setpriv = shutil.which("setpriv")
    if not setpriv:
        pytest.skip("setpriv (util-linux) is not installed")
    drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]
    if subprocess.run([*drop, IOWITNESS[0], "-c", "import iowitness"], capture_output=True, cwd="/").returncode:
        pytest.skip("user nobody cannot run this checkout's Python (its directories are private)")
    proc = subprocess.run([*drop, *IOWITNESS, "attach", "--pid", "1", "-o", "/tmp/iowitness-never.iwt"],
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert proc.returncode == 3 and "root" in one_line(proc)


def _bpf_map_open(pid: int) -> bool:
    """The process holds a BPF map: the probe is being loaded."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:bpf-map" for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def _when_loading(proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not _bpf_map_open(proc.pid):
        # its own words when it ended first (once under CI load: exit 4 before a map was seen open)
        assert proc.poll() is None, f"attach ended ({proc.returncode}) before the probe loaded: {proc.communicate()[1]!r}"
        assert time.monotonic() < deadline, "the probe was never loaded"
        time.sleep(0.002)


def test_a_pid_that_exits_while_attach_sets_up(tmp_path):
    # GIVEN a process that is there when attach checks the PID, and exits while the probe loads
    target = subprocess.Popen(["sleep", "60"])
    out = tmp_path / "gone.iwt"
    attach = subprocess.Popen([*IOWITNESS, "attach", "--pid", str(target.pid), "-o", str(out)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _when_loading(attach)
        target.kill()
        target.wait()
        # WHEN attach is done setting up
        _, stderr = attach.communicate(timeout=60)
    finally:
        target.kill(), attach.kill()
    # THEN exit 4 in one line that says the process went away, not a trace of nothing and exit 0
    proc = subprocess.CompletedProcess(attach.args, attach.returncode, "", stderr)
    assert attach.returncode == 4, stderr
    assert f"process {target.pid} exited while iowitness was attaching" in one_line(proc)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_probe_loads(tmp_path, signum):
    # GIVEN a run whose probe is loading (libbpf calls back into Python then: a KeyboardInterrupt
    # raised there used to print a traceback and be lost)
    out, started = tmp_path / "early.iwt", tmp_path / "started"
    run = subprocess.Popen([*IOWITNESS, "run", "-o", str(out), "--", "touch", str(started)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _when_loading(run)
        # WHEN it gets the signal
        run.send_signal(signum)
        _, stderr = run.communicate(timeout=60)
    finally:
        run.kill()
    # THEN 128 + the signal, one line, and the benchmark never ran
    proc = subprocess.CompletedProcess(run.args, run.returncode, "", stderr)
    assert run.returncode == 128 + signum, stderr
    assert "interrupted" in one_line(proc) or "terminated" in one_line(proc)
    assert not started.exists()
