"""Root's outputs against a local attacker, with real runs: links planted by an unprivileged
user in a world-writable sticky directory and by root in a private one, two runs choosing a
default name in the same second, a real benchmark writing files with hostile names.

The kernel's fs.protected_symlinks (when 1) would itself stop root from following another
user's link in a sticky directory; these tests do not count on it: the same plants are made
by root in a root-owned directory without the sticky bit, where nothing but iowitness stops them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from iowitness import escape
from iowitness.analysis.read.run import load
from iowitness.outputfile import sudo_user
from tests.support.cli import IOWITNESS, iowitness
from tests.support.hostile import HOSTILE, HOSTILE_BYTES, no_raw_controls

VICTIM_TEXT = "root's file, which no output may touch\n"
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim"
    path.write_text(VICTIM_TEXT)
    return path


@pytest.fixture(params=["sticky, planted by nobody", "private, planted by root"])
def planted(request, tmp_path):
    """(directory, plant(name, target)): a 1777 directory where `nobody` plants links, or a
    root-owned 0755 one where root does. Removed whatever the test does."""
    if request.param.startswith("sticky"):
        if not shutil.which("setpriv"):
            pytest.skip("setpriv (util-linux) is needed to plant links as nobody")
        folder = Path(tempfile.mkdtemp(prefix="iow-sticky-", dir="/tmp"))
        os.chmod(folder, 0o1777)

        def plant(name, target):
            subprocess.run([*AS_NOBODY, "ln", "-s", str(target), str(folder / name)], check=True, timeout=30)
            assert (folder / name).lstat().st_uid != 0
    else:
        folder = tmp_path / "private"
        folder.mkdir(mode=0o755)

        def plant(name, target):
            (folder / name).symlink_to(target)
    try:
        yield folder, plant
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def untouched(victim) -> bool:
    return victim.read_text() == VICTIM_TEXT


def test_no_output_follows_a_planted_link(planted, victim, tmp_path):
    folder, plant = planted
    # GIVEN links at the trace's, the report's and the export's names, and at the old ".part" name
    for name in ("t.iwt", "r.html", "e.parquet", "ok.html.part"):
        plant(name, victim)
    # WHEN root records and writes there
    run = iowitness("run", "-q", "-o", str(folder / "t.iwt"), "--", "true", check=False)
    good = tmp_path / "good.iwt"
    iowitness("run", "-q", "-o", str(good), "--", "true")
    report = iowitness("report", str(good), "--html", str(folder / "r.html"), check=False)
    export = iowitness("export", str(good), "--parquet", str(folder / "e.parquet"), check=False)
    iowitness("report", str(good), "--html", str(folder / "ok.html"))
    # THEN each link at a destination is refused in one line (exit 5), none is followed
    for proc in (run, report, export):
        assert proc.returncode == 5 and "symbolic link" in proc.stderr and proc.stderr.count("\n") == 1
    assert untouched(victim)
    assert all((folder / n).is_symlink() for n in ("t.iwt", "r.html", "e.parquet", "ok.html.part"))
    # AND the report beside the planted ".part" link is a new root file of mode 0600
    made = os.lstat(folder / "ok.html")
    owner = sudo_user()   # under sudo (a CI runner's), the user who ran it
    assert stat.S_ISREG(made.st_mode) and made.st_uid == (owner[0] if owner else 0)
    assert stat.S_IMODE(made.st_mode) == 0o600


def test_a_trace_is_0600_unless_mode_says_otherwise(tmp_path):
    # WHEN two runs save their traces, the second with --mode 0644
    iowitness("run", "-q", "-o", str(tmp_path / "private.iwt"), "--", "true")
    iowitness("run", "-q", "--mode", "0644", "-o", str(tmp_path / "shared.iwt"), "--", "true")
    # THEN the default is 0600 and the mode given is the mode on disk
    assert stat.S_IMODE(os.stat(tmp_path / "private.iwt").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "shared.iwt").st_mode) == 0o644
    # AND a bad mode is refused in one line before anything is loaded
    bad = iowitness("run", "-q", "--mode", "8", "-o", str(tmp_path / "bad.iwt"), "--", "true", check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and not (tmp_path / "bad.iwt").exists()


def test_two_runs_started_together_keep_both_traces(tmp_path, workdir):
    # GIVEN two runs of a small dd started at the same moment in one directory, with no -o
    procs = [subprocess.Popen([*IOWITNESS, "run", "--", "dd", "if=/dev/zero", f"of={workdir / f'f{i}'}",
                               "bs=4k", "count=64", "conv=fsync"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    results = [p.communicate(timeout=120) for p in procs]
    # THEN both succeed, each saying where its trace went, and the two names differ
    assert [p.returncode for p in procs] == [0, 0], results
    saved = [re.search(r"saved (\S+\.iwt)", err).group(1) for _, err in results]
    assert len(set(saved)) == 2 and sorted(saved) == sorted(p.name for p in tmp_path.glob("*.iwt"))
    # AND each trace is complete and holds its own dd's writes
    for i, name in enumerate(saved):
        trace = load(tmp_path / name)
        assert trace.meta["complete"] is True and f"of={workdir / f'f{i}'}" in trace.meta["command"]
        writes = trace.events[trace.events["syscall"] == "write"]
        assert set(writes["path"].astype(str)) == {str(workdir / f"f{i}")} and writes["ret"].sum() == 64 * 4096


def test_a_benchmark_writing_hostile_names_is_reported_safely_in_every_format(tmp_path, workdir):
    # GIVEN dd writing 64 KiB to a file whose name holds escapes, a newline, markup, a pipe,
    # backticks, quotes and bytes that are not UTF-8, named in its command line too
    target = os.fsencode(workdir) + b"/" + HOSTILE_BYTES
    trace_path = tmp_path / "hostile.iwt"
    iowitness("run", "-q", "-o", str(trace_path), "--", "dd", "if=/dev/zero",
              os.fsdecode(b"of=" + target), "bs=4k", "count=16")
    # WHEN every format is asked for
    outputs = {"show": iowitness("show", str(trace_path)).stdout,
               "text": iowitness("report", str(trace_path)).stdout,
               "markdown": iowitness("report", str(trace_path), "--markdown").stdout,
               "csv": iowitness("report", str(trace_path), "--csv").stdout,
               "json": iowitness("report", str(trace_path), "--json").stdout}
    iowitness("report", str(trace_path), "--html", str(tmp_path / "r.html"))
    outputs["html"] = (tmp_path / "r.html").read_text()
    # THEN none emits a raw control character
    for name, out in outputs.items():
        assert no_raw_controls(out) == [], name
    # AND the text forms show the name escaped, on one line
    shown = escape.visible(HOSTILE)
    assert shown in outputs["show"] and "\nFAKE LINE" not in outputs["show"] + outputs["text"]
    # AND Markdown holds no raw tag; HTML no element from the name; CSV one row; JSON the exact name
    assert not re.search(r"(?<!\\)<(script|b)\b", outputs["markdown"])
    assert not re.search(r"<(script|b)\b", outputs["html"]) and escape.html(HOSTILE) in outputs["html"]
    rows = list(csv.reader(io.StringIO(outputs["csv"])))
    assert len(rows) == 2 and rows[1][rows[0].index("path")] == escape.visible(os.fsdecode(target).encode(
        "utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))
    doc = json.loads(outputs["json"])
    assert doc["phases"][0]["path"] == os.fsencode(workdir).decode() + "/" + HOSTILE
    assert os.fsdecode(b"of=" + target) in doc["command"]
