"""`iowitness import --dtrace`: the lines of probes/iowitness.d into a trace.

No DTrace runs on Linux, so the script itself is NOT YET RUN on a DTrace system. What is held
here: the script's printf formats give the bpftrace backend's line shapes (13 fields an E line,
10 an F line), and lines in that format (tests/data/dtrace/, README there) import into the
phases the benchmark's own arithmetic says: IOzone -s 256k -r 64k writes, rewrites, reads and
rereads 256 KiB in four 64 KiB calls each.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.support.cli import iowitness

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "dtrace"
SCRIPT = REPO / "probes" / "iowitness.d"


def test_the_scripts_lines_have_the_bpftrace_protocols_fields():
    text = SCRIPT.read_text()
    formats = re.findall(r'printf\("([A-Z])\\t([^"]*)\\n"', text)
    fields = {}
    for tag, rest in formats:
        fields.setdefault(tag, set()).add(rest.count("\\t") + 2)
    # E: tag, op, start, latency, tgid, tid, fd, dev, ino, offset, requested, ret, flags
    assert fields["E"] == {13}
    # F: tag, ts, tgid, fd, dirfd, dev, ino, magic, comm, path
    assert fields["F"] == {10}
    assert fields["K"] == {5} and fields["P"] == {5} and fields["X"] == {2}
    # AND it says in its header that it has not run on a DTrace system yet
    assert "NOT YET RUN ON A DTRACE SYSTEM" in text


def test_iozone_lines_import_into_its_four_phases(tmp_path):
    out = tmp_path / "iozone.iwt"
    proc = iowitness("import", "--dtrace", str(DATA / "iozone-i0-i1-256k.txt"), "-o", str(out))
    assert "41 events on 1 files" in proc.stdout and "not yet run on a DTrace system" in proc.stdout
    doc = json.loads(iowitness("report", str(out), "--json").stdout)
    phases = [(p["benchmark_name"], p["bytes"], p["ops"]) for p in doc["phases"]]
    assert phases == [(name, 256 * 1024, 4) for name in ("write", "rewrite", "read", "reread")]
    assert doc["benchmark"] == "iozone"
    text = iowitness("report", str(out)).stdout
    assert "backend: dtrace" in text and "not yet run on a DTrace system" in text


def test_a_child_uses_its_parents_fd_and_drops_are_lost_events(tmp_path):
    # GIVEN a process that opens /data/f as fd 3, forks, and its child writes on fd 3 and on fd 5
    # (opened before tracing), with DTrace reporting 7 drops
    out = tmp_path / "forked.iwt"
    proc = iowitness("import", "--dtrace", str(DATA / "forked.txt"), "-o", str(out))
    # THEN the child's fd 3 call is the parent's file, the fd 5 call is left out and said
    assert "5 events on 1 files" in proc.stdout
    assert "7 records dropped by DTrace" in proc.stdout and "1 calls on an fd whose open was not seen" in proc.stdout
    doc = json.loads(iowitness("report", str(out), "--json").stdout)
    assert doc["lost_events"] == 7
    # AND both 4 KiB writes on /data/f (the parent's and the child's on the inherited fd) are in it
    assert [(p["bytes"], p["ops"]) for p in doc["phases"]] == [(4096, 1), (4096, 1)]


def test_what_is_not_the_scripts_output_is_one_line(tmp_path):
    bad = tmp_path / "not.txt"
    bad.write_text("hello\n")
    proc = iowitness("import", "--dtrace", str(bad), "-o", str(tmp_path / "x.iwt"), check=False)
    assert proc.returncode == 6 and "not the output of probes/iowitness.d" in proc.stderr
    assert proc.stderr.count("\n") == 1
    proc = iowitness("import", "--dtrace", str(bad), "run.strace", "-o", str(tmp_path / "y.iwt"), check=False)
    assert proc.returncode == 2 and "--dtrace FILE takes no strace file" in proc.stderr
