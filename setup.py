"""Build hook: compile the BPF probe (probes/Makefile) before the Python files are collected,
when the toolchain is there; without it, install the analysis side only.

The object is written to probes/build/, inside the source tree, so that an editable install
(`pip install -e .`) finds it where a regular install packs it.

Without clang, make or bpftool (a laptop reading a colleague's trace, macOS, an arm64 machine)
the install goes on without the probe: report, show, compare, check, export and import work,
and run/attach say in one line what to install. IOWITNESS_REQUIRE_PROBE=1 (scripts/setup.sh
sets it) turns a missing toolchain into a failed install instead.

The wheel's tag says what it holds. With the probe it is `py3-none-linux_x86_64`: the object
is compiled for x86-64's syscall table, and the event-area reader (collector/eventarea.py)
relies on x86's in-order stores to read the probe's records without a fence. Without the probe
it is pure Python, `py3-none-any`, and installs anywhere.
"""

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:   # setuptools before 70.1
    from wheel.bdist_wheel import bdist_wheel

PROBES = Path(__file__).resolve().parent / "probes"
REPLAY = Path(__file__).resolve().parent / "replay"
TOOLS = ("clang", "make", "bpftool")
INSTALL_HINT = "install clang, llvm, libbpf-dev, bpftool and make (scripts/setup.sh does)"


def _missing_tools() -> list[str]:
    missing = [t for t in TOOLS if shutil.which(t) is None and not (t == "bpftool" and Path("/usr/sbin/bpftool").exists())]
    if sys.platform != "linux" or platform.machine() != "x86_64":
        missing.append(f"an x86-64 Linux machine (this is {sys.platform} {platform.machine()})")
    return missing


def with_probe() -> bool:
    missing = _missing_tools()
    if missing and os.environ.get("IOWITNESS_REQUIRE_PROBE") == "1":
        sys.exit(f"iowitness: cannot build the BPF probe: {', '.join(missing)} missing; {INSTALL_HINT}")
    return not missing


# files the wheel carries besides code (iowitness/shipped.py reads them): docs/ path -> under iowitness/share/
SHIPPED = ("schema/*.schema.json", "specs/*.toml", "iowitness.1", "iowitness.bash")


def _ship_docs(build_lib: str) -> None:
    docs = Path(__file__).resolve().parent / "docs"
    share = Path(build_lib, "iowitness", "share")
    for pattern in SHIPPED:
        for path in docs.glob(pattern):
            out = share / path.relative_to(docs)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)


class BuildWithProbe(build_py):
    def run(self):
        _ship_docs(self.build_lib)
        if with_probe():
            try:
                subprocess.run(["make", "-s", "-C", str(PROBES)], check=True)
            except (OSError, subprocess.CalledProcessError) as exc:
                sys.exit(f"iowitness: building the BPF probe failed ({exc}); {INSTALL_HINT}, and retry")
            _build_player()
            super().run()
            return
        print(f"iowitness: installing the analysis side only ({', '.join(_missing_tools())} missing): "
              f"run and attach need the probe; {INSTALL_HINT}, then install again", file=sys.stderr)
        super().run()
        # an object left in probes/build by an earlier build is not this install's: a pure
        # wheel must not carry an x86-64 object
        for stale in Path(self.build_lib, "iowitness", "probes", "build").glob("*.bpf.o"):
            stale.unlink()
        for stale in Path(self.build_lib, "iowitness", "replay", "build").glob("iowitness-player"):
            stale.unlink()


def _build_player() -> None:
    """replay/player.c, the native replay player, with the compiler the probe needs: a machine
    that can record can replay (iowitness replay falls back to its Python player without it)."""
    out = REPLAY / "build" / "iowitness-player"
    out.parent.mkdir(exist_ok=True)
    try:
        subprocess.run(["clang", "-O2", "-pthread", "-Wall", "-Werror", "-o", str(out), str(REPLAY / "player.c")],
                       check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit(f"iowitness: building the replay player failed ({exc}); {INSTALL_HINT}, and retry")


class Wheel(bdist_wheel):
    def finalize_options(self):
        if with_probe():
            # a platform wheel, its files in platlib (not under .data/purelib)
            self.distribution.has_ext_modules = lambda: True
        super().finalize_options()

    def get_tag(self):
        python, abi, plat = super().get_tag()
        return ("py3", "none", plat) if not self.root_is_pure else (python, abi, plat)


setup(cmdclass={"build_py": BuildWithProbe, "bdist_wheel": Wheel},
      # the man page where man finds it under the install's prefix (share/man/man1)
      data_files=[("share/man/man1", ["docs/iowitness.1"])])
