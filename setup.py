"""Build hook: compile the BPF probe (probes/Makefile) before the Python files are collected.

The object is written to probes/build/, inside the source tree, so that an editable install
(`pip install -e .`) finds it where a regular install packs it.
"""

import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PROBES = Path(__file__).resolve().parent / "probes"


class BuildWithProbe(build_py):
    def run(self):
        try:
            subprocess.run(["make", "-s", "-C", str(PROBES)], check=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            sys.exit(f"iowitness: building the BPF probe failed ({exc}); "
                     "install clang, libbpf-dev and bpftool (scripts/setup.sh does) and retry")
        super().run()


setup(cmdclass={"build_py": BuildWithProbe})
