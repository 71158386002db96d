"""The compiled probe's BTF as bpftool prints it: the ground truth for what the object holds."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from iowitness import probes


def probe_btf_dump() -> str:
    """`bpftool btf dump file` of the built probe; skips when bpftool or the probe is missing."""
    bpftool = shutil.which("bpftool") or ("/usr/sbin/bpftool" if os.path.exists("/usr/sbin/bpftool") else None)
    if not bpftool or not probes.OBJECT.exists():
        pytest.skip("needs bpftool and the built probe (scripts/setup.sh)")
    return subprocess.run([bpftool, "btf", "dump", "file", str(probes.OBJECT)],
                          capture_output=True, text=True, check=True).stdout
