"""The kernel side of iowitness: the BPF program, its one record header and its build.

`OBJECT` is the compiled CO-RE object built from iowitness.bpf.c by the package build
(`make -C probes`); `HEADER` is events.h, which probes/layout.py parses.
"""

from pathlib import Path

HERE = Path(__file__).parent
HEADER = HERE / "events.h"
OBJECT = HERE / "build" / "iowitness.bpf.o"
# the same source built with -DIOW_COMPAT: loads on kernels back to Linux 5.8 (core_fixes.bpf.h)
COMPAT_OBJECT = HERE / "build" / "iowitness_compat.bpf.o"
# empty programs on the same tracepoints: the floor scripts/bench/observers.py measures
FLOOR_OBJECT = HERE / "build" / "floor.bpf.o"
# programs that only time every syscall (two clock reads): what timing calls costs above the floor
TIMING_FLOOR_OBJECT = HERE / "build" / "timing_floor.bpf.o"
