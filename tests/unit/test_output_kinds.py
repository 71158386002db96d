"""Only regular files are ever replaced by an output, even when the name changes while it is
written; a path read from a benchmark's output is opened only as a bounded regular file
(iowitness/outputfile.py, iowitness/safepath.py, analysis/benchmarks/iozone_cluster.clients). Issue 32.

Ground truth from the file system (lstat: type, inode), never from iowitness's word. Nothing
here needs root (tests/kernel/test_output_paths_as_root.py has the cases that do).
"""

from __future__ import annotations

import os
import stat

import pytest

from iowitness import safepath
from iowitness.analysis.benchmarks import iozone_cluster
from iowitness.errors import OutputError, UsageError
from iowitness.outputfile import Output, make_folder
from tests.support.cli import iowitness
from tests.support.hostile import write_hostile_trace

SECRET = "hunter2-SECRET-WORDS"


def test_a_fifo_that_takes_the_name_while_the_output_is_written_is_put_back(tmp_path):
    # GIVEN an old report at the destination
    out = tmp_path / "r.html"
    out.write_text("old report\n")

    def produce(f):
        # WHEN, while the new one is written, someone swaps the old file for a FIFO
        f.write(b"new report\n")
        os.unlink(out)
        os.mkfifo(out)

    with pytest.raises(OutputError, match=r"it is a FIFO \(named pipe\), not a regular file") as caught:
        Output(out).write(produce)
    # THEN the write fails in one line and the FIFO is where it was, no temporary left behind
    assert "\n" not in str(caught.value)
    assert stat.S_ISFIFO(os.lstat(out).st_mode) and sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]


def test_a_fifo_that_takes_the_name_at_the_very_rename_is_swapped_back(tmp_path, monkeypatch):
    # GIVEN an old report at the destination, and the narrowest race: the FIFO comes after the
    # last look at the name, just before the rename
    out = tmp_path / "r.html"
    out.write_text("old report\n")
    real = safepath.renameat2
    swapped = []

    def racing(folder, old, new, flags):
        if not swapped:
            os.unlink(out)
            os.mkfifo(out)
            swapped.append(os.lstat(out).st_ino)
        real(folder, old, new, flags)

    monkeypatch.setattr(safepath, "renameat2", racing)
    # WHEN the new report is renamed in THEN refused, the FIFO back at its name, nothing left
    with pytest.raises(OutputError, match=r"it became a FIFO \(named pipe\) while being written"):
        Output(out).write_text("new report\n")
    assert stat.S_ISFIFO(os.lstat(out).st_mode) and os.lstat(out).st_ino == swapped[0]
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_a_regular_file_is_still_replaced_whole(tmp_path):
    # GIVEN an old file of another mode WHEN an output is written there
    out = tmp_path / "r.html"
    out.write_text("old\n")
    os.chmod(out, 0o644)
    old_inode = os.lstat(out).st_ino
    Output(out).write_text("new\n")
    # THEN it is a new file (another inode) holding the new text, 0600, nothing else left
    assert out.read_text() == "new\n" and os.lstat(out).st_ino != old_inode
    assert stat.S_IMODE(os.lstat(out).st_mode) == 0o600 and [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_a_fifo_given_as_the_html_page_is_refused_at_once(tmp_path):
    # GIVEN a trace and a FIFO as --html (a write to it would wait for a reader for ever)
    trace = tmp_path / "t.iwt"
    write_hostile_trace(trace)
    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    inode = os.lstat(fifo).st_ino
    # WHEN the report is written there
    proc = iowitness("report", str(trace), "--html", str(fifo), check=False, timeout=60)
    # THEN refused in one line (exit 5), the FIFO kept
    assert proc.returncode == 5 and proc.stderr.count("\n") == 1 and "it is a FIFO" in proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.lstat(fifo).st_ino == inode


def test_a_file_in_the_middle_of_a_path_is_said_to_be_no_directory(tmp_path):
    (tmp_path / "plain").write_text("x")
    with pytest.raises(OutputError, match=r"plain is not a directory"):
        Output(tmp_path / "plain" / "r.html").check()
    with pytest.raises(NotADirectoryError):
        make_folder(str(tmp_path / "plain" / "sub"), 0o700)
    make_folder(str(tmp_path / "a" / "b" / "c"), 0o700)
    assert (tmp_path / "a" / "b" / "c").is_dir()


# ---- the client list named by -+m in IOzone's output -------------------------------------------

def _argv(path) -> list[str]:
    return ["iozone", "-+m", str(path), "-t", "2"]


@pytest.mark.parametrize("made", ["character device", "FIFO"])
def test_a_client_list_that_is_no_regular_file_is_refused_without_reading_it(tmp_path, made):
    # GIVEN -+m naming a FIFO (a read would wait for ever) or /dev/zero (a read would never end)
    if made == "FIFO":
        path = tmp_path / "clients"
        os.mkfifo(path)
    else:
        path = "/dev/zero"
    # WHEN the client list is read THEN refused in one line, naming what it is
    with pytest.raises(UsageError, match=f"is a {made}") as caught:
        iozone_cluster.clients(_argv(path))
    assert "\n" not in str(caught.value)


def test_a_client_list_too_large_is_refused(tmp_path):
    path = tmp_path / "clients"
    with open(path, "wb") as f:
        f.truncate(iozone_cluster.LIST_LIMIT + 1)
    with pytest.raises(UsageError, match="more than any IOzone client list"):
        iozone_cluster.clients(_argv(path))


def test_a_file_that_is_no_client_list_is_refused_without_showing_what_it_holds(tmp_path):
    # GIVEN -+m naming a private file whose first words are secret
    path = tmp_path / "private"
    path.write_text(f"{SECRET} words of a key\nmore lines\n")
    os.chmod(path, 0o600)
    # WHEN it is read as a client list THEN refused, and not a word of it shown
    with pytest.raises(UsageError, match="is not an IOzone client list") as caught:
        iozone_cluster.clients(_argv(path))
    assert SECRET not in str(caught.value) and "words" not in str(caught.value)


def test_a_real_client_list_is_read(tmp_path):
    path = tmp_path / "clients"
    path.write_text("# hosts\nh2 /work/a/ /usr/bin/iozone\n\nh3 /work/b /usr/bin/iozone extra\n")
    assert iozone_cluster.clients(_argv(path)) == (str(path), [("h2", "/work/a"), ("h3", "/work/b")])
    assert iozone_cluster.clients(_argv(tmp_path / "absent")) == (str(tmp_path / "absent"), None)


# ---- names lost are not calls missed -----------------------------------------------------------

def test_check_says_file_names_were_lost_and_does_not_fail_for_calls_missed(tmp_path, capsys):
    # GIVEN a trace whose every call is there, but 5 file-open records the meta ring could not take
    path = tmp_path / "t.iwt"
    write_hostile_trace(path, output=b"bench: 3.0 MB/s\n", counters={"lost_meta": 5})
    spec = tmp_path / "bench.toml"
    spec.write_text("version = 1\n[[claim]]\npattern = '^bench: (?P<value>[\\d.]+) (?P<unit>MB/s)$'\n"
                    'test = "write"\n')
    # WHEN check judges it
    from iowitness import cli
    cli.main(["check", str(path), "--spec", str(spec)])
    out, err = capsys.readouterr()
    # THEN it says the names were lost, on stderr, and never that the trace misses calls
    assert "5 file-open and process records lost: every call is in the trace" in err
    assert "misses calls" not in out + err and "events lost" not in out + err


# ---- CSV cells a spreadsheet would run -----------------------------------------------------------

def test_a_csv_cell_that_would_start_a_formula_starts_with_a_quote():
    import csv
    import io

    import pandas as pd

    from iowitness import escape

    # GIVEN names a spreadsheet would take for formulas, and ones it would not
    frame = pd.DataFrame({"name": ["=HYPERLINK(\"http://x\",\"y\")", "+1", "@SUM(A1)", "-cmd", "-5", "-", "/d/=x"],
                          "n": [1, 2, 3, 4, 5, 6, -7]})
    # WHEN written as CSV and read back by the csv module
    rows = list(csv.reader(io.StringIO(escape.csv(frame))))
    # THEN the formulas start with a quote; numbers, a lone "-" and paths are as they were
    assert [r[0] for r in rows[1:]] == ["'=HYPERLINK(\"http://x\",\"y\")", "'+1", "'@SUM(A1)", "'-cmd", "-5", "-",
                                        "/d/=x"]
    assert [r[1] for r in rows[1:]] == ["1", "2", "3", "4", "5", "6", "-7"]


def test_check_fails_on_a_trace_known_to_miss_calls(tmp_path, capsys):
    from iowitness import cli
    from iowitness.collector.format.traceformat import CHUNK, EVENTS
    from tests.support import trace_mutants

    # GIVEN dd's trace with one EVENTS chunk cut out whole (END counted them: known missing)
    path = tmp_path / "dd.iwt"
    trace_mutants.write_dd_trace(path)
    data = path.read_bytes()
    at, _, length = next(c for c in trace_mutants.chunks_of(data) if c[1] == EVENTS)
    path.write_bytes(data[:at] + data[at + CHUNK.size + length:])
    # WHEN check judges it, and with --allow-loss
    code = cli.main(["check", str(path), "--format", "dd"])
    out = capsys.readouterr().out
    cli.main(["check", str(path), "--format", "dd", "--allow-loss"])
    allowed_out = capsys.readouterr().out
    # THEN it fails (exit 1), saying how many counted events the file lacks, unless told otherwise
    assert code == 1 and "FAILS: the trace misses calls (" in out
    assert "events counted by the collector are not in" in out
    assert "FAILS" not in allowed_out
