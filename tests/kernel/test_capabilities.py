"""`run` without root: an ordinary user holding only CAP_BPF and CAP_PERFMON records a run.

A throwaway user is made for each test (useradd, removed after it even when the test fails),
and iowitness runs as that user through setpriv with the capabilities given as inheritable,
ambient and bounding: the collector has those and nothing else, and the benchmark it
launches inherits them (ambient) without any other privilege. The ground truth is dd's own
arithmetic (bs × count bytes written).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid

import pytest

from iowitness.analysis.read.run import load

pytestmark = pytest.mark.kernel


@pytest.fixture
def user():
    """(name, uid, a directory it owns) of a new user without a home or a shell."""
    for tool in ("useradd", "userdel", "setpriv"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed: cannot run iowitness as another user")
    name = f"iow{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", name], check=True, capture_output=True)
    where = tempfile.mkdtemp(prefix="iowitness-caps-")
    try:
        uid = pwd.getpwnam(name).pw_uid
        os.chown(where, uid, pwd.getpwnam(name).pw_gid)
        os.chmod(where, 0o755)
        yield name, uid, where
    finally:
        shutil.rmtree(where, ignore_errors=True)
        subprocess.run(["userdel", name], capture_output=True)


def as_user(user, caps: str, *args: str) -> subprocess.CompletedProcess:
    name = user[0]
    command = ["setpriv", f"--reuid={name}", f"--regid={name}", "--clear-groups", f"--inh-caps={caps}",
               f"--ambient-caps={caps}", f"--bounding-set={caps}", "--", sys.executable, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=user[2])


def _usable(user) -> None:
    probe = as_user(user, "-all", "-c", "import iowitness.cli")
    if probe.returncode != 0:
        pytest.skip(f"another user cannot read this checkout or its Python ({probe.stderr.strip()[-200:]})")


def test_run_with_only_cap_bpf_and_cap_perfmon_records_every_byte(user):
    # GIVEN a user that is not root, holding only CAP_BPF and CAP_PERFMON
    _usable(user)
    trace, data = os.path.join(user[2], "dd.iwt"), os.path.join(user[2], "dd.out")

    # WHEN it runs dd (256 writes of 4 KiB) under iowitness
    proc = as_user(user, "+bpf,+perfmon", "-m", "iowitness.cli", "run", "-q", "-o", trace, "--file", data, "--",
                   "dd", "if=/dev/zero", f"of={data}", "bs=4k", "count=256")

    # THEN the recording works, the trace is the user's, and it holds every byte dd wrote
    assert proc.returncode == 0, proc.stderr
    assert os.stat(trace).st_uid == user[1]
    events = load(trace).events
    writes = events[events["syscall"].astype(str) == "write"]
    assert (len(writes), int(writes["ret"].sum())) == (256, 256 * 4096)
    # AND what it could not do without CAP_SYS_ADMIN is said, not faked
    assert load(trace).counters["probe_cost"]["mode"] == "off" or "refused" in str(load(trace).counters["probe_cost"])


def test_a_missing_capability_is_named_in_one_line(user):
    # GIVEN the same user with CAP_BPF only
    _usable(user)

    # WHEN it tries to run, and asks doctor
    proc = as_user(user, "+bpf", "-m", "iowitness.cli", "run", "-q", "-o", os.path.join(user[2], "t.iwt"), "--",
                   "true")
    doctor = as_user(user, "+bpf", "-m", "iowitness.cli", "doctor")

    # THEN run refuses in one line naming CAP_PERFMON, and doctor gives one line per missing
    # capability, each with the ways to grant it
    assert proc.returncode == 3 and "CAP_PERFMON" in proc.stderr and len(proc.stderr.splitlines()) == 1
    lines = {line.split()[1]: line for line in doctor.stdout.splitlines() if line.split()[1].startswith("CAP_")}
    assert set(lines) == {"CAP_PERFMON", "CAP_SYS_ADMIN", "CAP_DAC_READ_SEARCH", "CAP_SYS_PTRACE"}
    assert lines["CAP_PERFMON"].startswith("FAIL") and lines["CAP_SYS_ADMIN"].startswith("note")
    assert all("setpriv" in line and "AmbientCapabilities=" in line and "setcap" in line for line in lines.values())
    assert doctor.returncode == 3
