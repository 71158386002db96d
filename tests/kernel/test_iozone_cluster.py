"""IOzone's cluster mode (-+m) over two "hosts" of this machine, each traced by its own
`iowitness attach --file WORKDIR`, judged with `report A.iwt B.iwt --claims master-output`.

The master starts each host's children through $RSH; here an RSH that drops the host name
and runs the command locally stands in for rsh/ssh. Ground truth: IOzone's own master
output (its per-test sums and, with -C, each child's line) and the bytes the command line
makes each child move (two write and two read passes over its file), not iowitness.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.support.cli import IOWITNESS, iowitness
from tests.support.collectors import stop, wait_attached

pytestmark = pytest.mark.kernel
FILE_KIB = 65536
RECORD_KIB = 64
RSH = """#!/bin/sh
# a remote shell for one machine: the host name and rsh's -n dropped, the command run here
shift
[ "$1" = "-n" ] && shift
exec sh -c "$*" < /dev/null
"""


def _moved_per_child(master: str) -> dict[str, list[float]]:
    """Child number -> IOzone's own xfer count (kB) in each test, in the output's order."""
    moved: dict[str, list[float]] = {}
    for number, kib in re.findall(r"Child\[(\d+)\] xfer count =\s+([\d.]+) kB", master):
        moved.setdefault(number, []).append(float(kib))
    return moved


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """GIVEN an IOzone master running -t 2 over two client "hosts" (own workdirs), each
    traced by its own collector watching its workdir."""
    if shutil.which("iozone") is None:
        pytest.skip("iozone is not installed (scripts/setup.sh installs it)")
    try:
        socket.gethostbyname(socket.gethostname())
    except OSError:
        pytest.skip("this machine's own host name does not resolve: IOzone's children cannot call the master back")
    tmp = tmp_path_factory.mktemp("iozone-cluster")
    rsh = tmp / "rsh"
    rsh.write_text(RSH)
    rsh.chmod(0o755)
    hosts = [("127.0.0.2", tmp / "h2"), ("127.0.0.3", tmp / "h3")]
    clients = tmp / "clients"
    clients.write_text("".join(f"{host} {work} {shutil.which('iozone')}\n" for host, work in hosts))
    traces = [tmp / "A.iwt", tmp / "B.iwt"]
    master = tmp / "master.txt"
    with ExitStack() as stack:
        for (_, work), trace in zip(hosts, traces):
            work.mkdir()
            collector = subprocess.Popen([*IOWITNESS, "attach", "--file", str(work), "-o", str(trace)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            stack.callback(stop, collector, signal.SIGINT)
            wait_attached(collector)
        proc = subprocess.run(["iozone", "-+m", str(clients), "-t", "2", "-i", "0", "-i", "1",
                               "-s", f"{FILE_KIB}k", "-r", f"{RECORD_KIB}k", "-C"],
                              capture_output=True, text=True, timeout=300, cwd=tmp,
                              env={**os.environ, "RSH": str(rsh)})
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
        master.write_text(proc.stdout)
    return hosts, traces, master


def test_every_host_child_and_sum_is_judged_on_one_clock(cluster):
    hosts, traces, master = cluster
    # WHEN the two traces are reported together against the master's output (given out of order)
    out = json.loads(iowitness("report", str(traces[1]), str(traces[0]), "--claims", str(master),
                               "--json").stdout)
    import jsonschema

    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "schema" / "hosts.schema.json").read_text())
    jsonschema.validate(out, schema, cls=jsonschema.Draft202012Validator)
    assert out["benchmark"] == "iozone"
    # THEN each host has its trace and the lines of its own child: 4 tests, one line each
    by_trace = {h["trace"]: h for h in out["hosts"]}
    assert set(by_trace) == {str(t) for t in traces}
    numbers: list[str] = []
    child_of: dict[str, str] = {}
    for (host, work), trace in zip(hosts, traces):
        mine = by_trace[str(trace)]
        assert mine["host"] == f"{host}:{work}"
        assert sorted(v["claim"]["test"] for v in mine["verdicts"]) == ["read", "reread", "rewrite", "write"]
        # one child per host, the same in every test (its file, iozone.DUMMY.N, is in its workdir)
        [number] = {re.search(r"Child\[(\d+)\]", v["claim"]["printed"]).group(1) for v in mine["verdicts"]}
        numbers.append(number)
        child_of[f"{host}:{work}"] = number
    assert sorted(numbers) == ["0", "1"]
    # AND each host's trace bytes are what IOzone says its child moved (-C, "xfer count") in
    # its four tests: two write and two read passes over its own file, unless it was
    # stonewalled (the children start apart, one host 10-30 ms after the other under load, and
    # the first to finish stops the other's count): then a writer still writes its whole file
    # (the reads need it), a rewriter or reader breaks out of its loop after the call it was
    # in, which IOzone leaves out of its count
    moved = _moved_per_child(master.read_text())
    for row in out["timeline"]:
        tests = moved[child_of[row["host"]]]
        expected = FILE_KIB * 1024 + sum(kib * 1024 + (RECORD_KIB * 1024 if kib < FILE_KIB else 0) for kib in tests[1:])
        assert len(tests) == 4 and row["bytes"] == expected, (row, tests)
    # AND the all-hosts sums ("Children see throughput") are judged over both hosts' phases
    sums = [v for v in out["all_clients"] if v["claim"]["printed"].strip().startswith("Children see")]
    assert sorted(v["claim"]["test"] for v in sums) == ["read", "reread", "rewrite", "write"]
    for v in sums:
        assert len(v["phases"]) == 2, v
    # AND a test IOzone timed from the page cache (re-read: no first-touch cost) is judged
    # true for the sum and for each child, which it would not be were a child's line set
    # against the other host's figure (the two children's rates differ run to run)
    for v in [s for s in sums if s["claim"]["test"] == "reread"] + \
             [v for h in out["hosts"] for v in h["verdicts"] if v["claim"]["test"] == "reread"]:
        assert v["verdict"] in ("agrees", "explained"), v


def test_the_text_report_shows_hosts_children_and_sums(cluster):
    _, traces, master = cluster
    text = iowitness("report", str(traces[0]), str(traces[1]), "--claims", str(master)).stdout
    assert "every host's phases on one clock" in text
    assert text.count("=== host ") == 2 and "=== all clients ===" in text
    assert "(child 0," in text and "(child 1," in text and "(children," in text


def test_a_trace_of_another_workdir_is_refused_in_one_line(cluster, tmp_path):
    _, traces, master = cluster
    # GIVEN a master output whose client list names workdirs no trace watched
    text = master.read_text()
    clients = tmp_path / "clients"
    clients.write_text("127.0.0.2 /nowhere/a /usr/bin/iozone\n127.0.0.3 /nowhere/b /usr/bin/iozone\n")
    moved = tmp_path / "master.txt"
    moved.write_text(text.replace(str(master.parent / "clients"), str(clients)))
    proc = iowitness("report", str(traces[0]), str(traces[1]), "--claims", str(moved), check=False)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "/nowhere/a" in line and "attach --file" in line


@pytest.mark.parametrize("named", ["/dev/zero", "a FIFO", "a root-only file"])
def test_the_client_list_is_data_never_opened_unbounded_nor_shown(cluster, tmp_path, named):
    _, traces, master = cluster
    # GIVEN a master output whose -+m names /dev/zero, a FIFO or a private file of root's
    secret = "s3cret-first-words"
    if named == "/dev/zero":
        target = "/dev/zero"
    else:
        target = str(tmp_path / "clients")
        if named == "a FIFO":
            os.mkfifo(target)
        else:
            Path(target).write_text(f"{secret} {secret}/a {secret}\n")
            os.chmod(target, 0o600)
    moved = tmp_path / "master.txt"
    moved.write_text(master.read_text().replace(str(master.parent / "clients"), target))
    # WHEN root reports the two traces against it (bounded: a FIFO must not make it wait)
    proc = iowitness("report", str(traces[0]), str(traces[1]), "--claims", str(moved), check=False, timeout=120)
    # THEN one line, exit 2, no traceback, and nothing of the file shown
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert target in proc.stderr and secret not in proc.stderr + proc.stdout
