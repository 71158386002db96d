"""Names kept exactly (issue 32): two files whose names differ only in bytes that are not UTF-8,
and two whose paths pass the probe's 255 bytes and differ only after them, stay two files in
every output, each with its own bytes; an undecodable byte reads `\\xff` in every format.

Real probe, real dd; ground truth from dd's own arguments (the bytes each wrote).
"""

from __future__ import annotations

import json
import os

import pytest

from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel


def test_names_that_differ_in_undecodable_bytes_or_past_255_bytes_stay_apart(tmp_path, workdir):
    # GIVEN dd writing 16, 32, 8 and 4 blocks of 4 KiB to f\xff, f\xfe and two paths of 310+
    # bytes that differ only in their last byte
    deep = os.fsencode(workdir) + b"/" + b"a" * 200 + b"/" + b"b" * 100
    os.makedirs(deep)
    names = {os.fsencode(workdir) + b"/f\xff": 16, os.fsencode(workdir) + b"/f\xfe": 32,
             deep + b"1": 8, deep + b"2": 4}
    script = "; ".join("dd if=/dev/zero of=\"$" + str(k + 1) + f"\" bs=4k count={count} 2>/dev/null"
                       for k, count in enumerate(names.values()))
    trace = tmp_path / "t.iwt"
    iowitness("run", "-q", "-o", str(trace), "--", "sh", "-c", script, "sh", *map(os.fsdecode, names))
    # WHEN show and report --json read it
    shown = iowitness("show", str(trace)).stdout
    doc = json.loads(iowitness("report", str(trace), "--json").stdout)
    # THEN four files, each with its own bytes written (JSON phases), the undecodable ones as \xff
    written = {}
    for phase in doc["phases"]:
        if phase["operation"] == "write":
            written[phase["path"]] = written.get(phase["path"], 0) + phase["bytes"]
    short = {os.fsencode(workdir).decode() + "/f\\xff": 16 * 4096, os.fsencode(workdir).decode() + "/f\\xfe": 32 * 4096}
    for path, count in short.items():
        assert written.get(path) == count, written
        assert path in shown
    cut = {p: b for p, b in written.items() if "[cut at 255 bytes" in p}
    assert sorted(cut.values()) == [4 * 4096, 8 * 4096] and len(cut) == 2, written
    assert "\ufffd" not in shown and "\ufffd" not in json.dumps(doc, ensure_ascii=False)
    # AND show's files table has one row per file
    assert sum("[cut at 255 bytes" in line for line in shown.splitlines()) == 2
