"""Root's outputs against a local user, second round (issue 32): a symbolic link planted by the
user as a *directory* anywhere in an output's path, device nodes and FIFOs given as an output,
two runs given one -o.

Ground truth from the file system itself (lstat: type, owner, device numbers, inode; the bytes
of root's files), never from iowitness's word. Device nodes are mknod copies of /dev/null, so a
failure breaks no system file. The user is `nobody`, acting through setpriv.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from iowitness.analysis.read.run import load
from tests.support.cli import IOWITNESS, iowitness

pytestmark = pytest.mark.kernel
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
ROOT_TEXT = "root's own file: no output may replace it\n"


@pytest.fixture
def attack():
    """GIVEN a root-only directory (0700) holding root's files, and a directory of `nobody`'s
    where nobody links `sub` to the root-only one. (root_only, users_dir); removed after."""
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is needed to act as nobody")
    # pytest's own tmp is 0700: nobody could not reach it
    base = Path(tempfile.mkdtemp(prefix="iow-links-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        root_only = base / "root-only"
        root_only.mkdir(mode=0o700)
        for name in ("t.iwt", "r.html", "e.parquet"):
            (root_only / name).write_text(ROOT_TEXT)
        users = base / "u"
        users.mkdir()
        shutil.chown(users, "nobody", "nogroup")
        subprocess.run([*AS_NOBODY, "ln", "-s", str(root_only), str(users / "sub")], check=True, timeout=30)
        assert (users / "sub").lstat().st_uid != 0
        yield root_only, users
    finally:
        shutil.rmtree(base, ignore_errors=True)


def root_files_untouched(root_only: Path) -> bool:
    return (sorted(p.name for p in root_only.iterdir()) == ["e.parquet", "r.html", "t.iwt"]
            and all((root_only / n).read_text() == ROOT_TEXT for n in ("t.iwt", "r.html", "e.parquet")))


@pytest.fixture(scope="module")
def good_traces(tmp_path_factory):
    """Two real traces of dd writing 64 KiB."""
    folder = tmp_path_factory.mktemp("good")
    for n in (1, 2):
        iowitness("run", "-q", "-o", str(folder / f"good{n}.iwt"), "--", "dd", "if=/dev/zero",
                  f"of={folder / f'f{n}'}", "bs=4k", "count=16")
    return [folder / "good1.iwt", folder / "good2.iwt"]


@pytest.fixture(scope="module")
def good_trace(good_traces):
    return good_traces[0]


def test_a_directory_link_planted_by_a_user_is_never_followed(attack, good_traces):
    good_trace = good_traces[0]
    root_only, users = attack
    # WHEN root writes every kind of output under the planted link, also a level deeper
    procs = [iowitness("run", "-q", "-o", str(users / "sub" / "t.iwt"), "--", "true", check=False, refused=True),
             iowitness("report", str(good_trace), "--html", str(users / "sub" / "r.html"), check=False),
             iowitness("export", str(good_trace), "--parquet", str(users / "sub" / "e.parquet"), check=False),
             iowitness("export", *map(str, good_traces), "--parquet", str(users / "sub" / "ds"),
                       check=False),
             iowitness("run", "-q", "-o", str(users / "sub" / ".." / "sub" / "t.iwt"), "--", "true", check=False,
                       refused=True)]
    # THEN each is refused in one line, exit 5, naming the link
    for proc in procs:
        assert proc.returncode == 5, proc.stderr
        assert proc.stderr.count("\n") == 1 and "symbolic link of another user" in proc.stderr
        assert str(users / "sub") in proc.stderr
    # AND root's directory holds what it held, byte for byte
    assert root_files_untouched(root_only)


def test_a_link_in_a_directory_a_user_can_change_is_refused_even_when_root_made_it(tmp_path, good_trace):
    # GIVEN a world-writable directory without the sticky bit, holding root's own link
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    (tmp_path / "real").mkdir()
    (open_dir / "l").symlink_to(tmp_path / "real")
    # WHEN a report is written through it THEN refused: anyone could have swapped the link
    proc = iowitness("report", str(good_trace), "--html", str(open_dir / "l" / "r.html"), check=False)
    assert proc.returncode == 5 and "another user can change" in proc.stderr and proc.stderr.count("\n") == 1
    assert list((tmp_path / "real").iterdir()) == []


def test_a_link_root_made_in_its_own_directory_is_followed(tmp_path, good_trace):
    # GIVEN root's link in a root-owned 0755 directory, to another root directory (as /var/run)
    (tmp_path / "real").mkdir()
    (tmp_path / "mine").mkdir(mode=0o755)
    (tmp_path / "mine" / "l").symlink_to("../real")
    # WHEN a trace and a report are written through it
    iowitness("run", "-q", "-o", str(tmp_path / "mine" / "l" / "t.iwt"), "--", "true")
    iowitness("report", str(good_trace), "--html", str(tmp_path / "mine" / "l" / "r.html"))
    # THEN both land in the real directory, as regular files
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["r.html", "t.iwt"]
    assert load(tmp_path / "real" / "t.iwt").meta["complete"] is True


@pytest.mark.parametrize("node", ["character device", "FIFO"])
def test_a_device_node_or_fifo_given_as_output_is_never_replaced(tmp_path, good_trace, node):
    # GIVEN a copy of /dev/null (char 1,3) or a FIFO at each output's name
    made = {}
    for name in ("t.iwt", "r.html", "e.parquet"):
        path = tmp_path / name
        if node == "FIFO":
            os.mkfifo(path, 0o600)
        else:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        made[path] = os.lstat(path)
    # WHEN root records, reports and exports there (a FIFO must not make any of them wait)
    procs = [iowitness("run", "-q", "-o", str(tmp_path / "t.iwt"), "--", "true", check=False, timeout=60,
                       refused=True),
             iowitness("report", str(good_trace), "--html", str(tmp_path / "r.html"), check=False, timeout=60),
             iowitness("export", str(good_trace), "--parquet", str(tmp_path / "e.parquet"), check=False,
                       timeout=60)]
    # THEN each is refused in one line, exit 5, saying what the name holds
    for proc in procs:
        assert proc.returncode == 5, proc.stderr
        assert proc.stderr.count("\n") == 1 and f"it is a {node}" in proc.stderr
    # AND every node is the same node: type, device numbers, inode
    for path, before in made.items():
        after = os.lstat(path)
        assert (after.st_mode, after.st_rdev, after.st_ino) == (before.st_mode, before.st_rdev, before.st_ino)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.parquet", "r.html", "t.iwt"]


def test_a_second_run_given_the_same_output_is_refused_while_the_first_records(tmp_path):
    out, done = tmp_path / "t.iwt", tmp_path / "second-done"
    # GIVEN a run recording into t.iwt until the test is done with the second (a fixed time was
    # over before a second iowitness had loaded its probe, at a load average of 9)
    first = subprocess.Popen([*IOWITNESS, "run", "-o", str(out), "--", "sh", "-c",
                              f"echo first; while [ ! -e {done} ]; do sleep 0.05; done"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(out)
        # WHEN a second run is given the same -o meanwhile
        second = iowitness("run", "-q", "-o", str(out), "--", "echo", "second", check=False)
    finally:
        done.touch()
        _, err = first.communicate(timeout=120)
    # THEN the second is refused in one line and the first saves its own trace there
    assert second.returncode == 5 and "another iowitness run is recording into it" in second.stderr
    assert second.stderr.count("\n") == 1
    assert first.returncode == 0 and f"saved {out}" in err
    trace = load(out)
    assert trace.meta["complete"] is True and "echo first" in " ".join(trace.meta["command"])


def test_a_run_whose_trace_was_replaced_does_not_say_saved(tmp_path):
    out = tmp_path / "t.iwt"
    done = tmp_path / "replaced"
    # GIVEN a run recording into t.iwt until the file is replaced
    first = subprocess.Popen([*IOWITNESS, "run", "-o", str(out), "--", "sh", "-c",
                              f"while [ ! -e {done} ]; do sleep 0.05; done"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(out)
        # WHEN another program renames a file of its own onto that name meanwhile
        other = tmp_path / "other"
        other.write_text("another program's file\n")
        os.replace(other, out)
    finally:
        done.touch()
        _, err = first.communicate(timeout=120)
    # THEN the run fails with exit 5 and says the trace is not there, never "saved"
    assert first.returncode == 5, err
    assert "replaced or removed by another program" in err and "saved" not in err
    assert out.read_text() == "another program's file\n"


def _wait_for(path: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_under_sudo_the_outputs_belong_to_the_user_who_ran_it(tmp_path, good_traces):
    # GIVEN root's environment as sudo leaves it for a user (here nobody, 65534)
    sudo = {**os.environ, "SUDO_UID": "65534", "SUDO_GID": "65534", "SUDO_USER": "nobody"}
    alone = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    # WHEN a trace, a page and a dataset are written, and a trace without sudo's variables
    iowitness("run", "-q", "-o", str(tmp_path / "t.iwt"), "--", "true", env=sudo)
    iowitness("report", str(good_traces[0]), "--html", str(tmp_path / "r.html"), env=sudo)
    iowitness("export", *map(str, good_traces), "--parquet", str(tmp_path / "ds"), env=sudo)
    iowitness("run", "-q", "-o", str(tmp_path / "root.iwt"), "--", "true", env=alone)
    # THEN each of the first belongs to 65534, still 0600 (0700 for the dataset's folders)
    made = [tmp_path / "t.iwt", tmp_path / "r.html", *(tmp_path / "ds").rglob("*")]
    assert len(made) > 4
    for path in made:
        found = os.lstat(path)
        assert (found.st_uid, found.st_gid) == (65534, 65534), path
        assert stat.S_IMODE(found.st_mode) == (0o700 if path.is_dir() else 0o600), path
    # AND without sudo's variables root's trace is root's
    assert os.lstat(tmp_path / "root.iwt").st_uid == 0
