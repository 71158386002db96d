"""Run a recorded trace's calls again inside DIR, and record the replay as a run.

Every file the trace touched is made again under DIR (placed relative to the deepest directory
the files share; those the trace found already there are filled with a known pattern up to the
size its reads needed, since data is not recorded). Then one process per recorded process and
one thread per recorded thread issue that thread's calls in its order, with the syscall the
original made: opens, close, read, write, pread64, pwrite64, the vectored forms (one buffer
each), lseek, fsync, fdatasync, ftruncate, fallocate, dup, and libaio and io_uring requests
(each submitted once its ring has as few in flight as the original had). On a file several
threads share, a call waits for the other threads' calls on it that had completed before it
started in the original. The replay is traced as `run` traces a benchmark, so `iowitness
compare TRACE REPLAY.iwt` puts the two side by side; the replay's trace names the trace it
replays (meta "replay_of").

Nothing is written outside DIR: recorded paths are mapped under it (absolute paths and `..`
cannot leave it), a symlink inside DIR is refused, and an existing file is refused unless
--force. Calls that failed in the original, and mmap and copy calls, are not replayed yet:
the replay's last lines (its output, kept in its trace) count them.

--timing: as-recorded keeps each thread's think time between calls, fast drops it, xN runs
it N times as fast (x0.5: half as fast). The replay's exit code is 1 when a call failed that
had succeeded in the original.

Example:
  sudo iowitness run -o fio.iwt -- fio --name=r --rw=randread --size=64m --directory=/mnt/ext4
  sudo iowitness replay fio.iwt --into /mnt/xfs/replay -o fio-xfs.iwt
  iowitness compare fio.iwt fio-xfs.iwt
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile

from iowitness.collector import targets
from iowitness.commands import _recording, run
from iowitness.errors import IowitnessError, UsageError
from iowitness.replay import paths, plan as replay_plan, stream_plan

# replay/player.c, compiled by the install (setup.py) beside the probe
NATIVE_PLAYER = os.path.join(os.path.dirname(paths.__file__), "build", "iowitness-player")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", metavar="TRACE", help="a trace saved by run or attach")
    parser.add_argument("--into", metavar="DIR", required=True,
                        help="where the trace's files are made again (created when missing); nothing is "
                             "written outside it")
    parser.add_argument("--timing", default="as-recorded", metavar="as-recorded|fast|xN",
                        help="think time between a thread's calls: as recorded, none (fast), or N times as "
                             "fast as recorded (x2, x0.5) (default %(default)s)")
    parser.add_argument("--force", action="store_true",
                        help="replace files that already exist under DIR where the replay puts the trace's "
                             "files (a symlink is refused even so)")
    parser.add_argument("--player", choices=("auto", "native", "python"), default="auto",
                        help="what issues the calls: 'native', replay/player.c built with the probe (about 0.2 us "
                             "of its own per call), or 'python', the same in Python (a few us per call: a replay "
                             "of fast cached calls runs slower than the original); 'auto' takes native when it was "
                             "built (default %(default)s)")
    _recording.add_recording_options(parser, argparse.SUPPRESS)


def speed_of(timing: str) -> float:
    """--timing as the player's speed: 1 as recorded, 0 no think time, N times as fast."""
    if timing == "as-recorded":
        return 1.0
    if timing == "fast":
        return 0.0
    if timing.startswith("x"):
        try:
            value = float(timing[1:])
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value > 0:
            return value
    raise UsageError(f"--timing must be as-recorded, fast or xN with N a positive number (x2, x0.5), not {timing!r}")


def execute(args) -> int:
    if args.files:
        raise UsageError("replay traces the files it makes under --into; --file does not apply")
    speed = speed_of(args.timing)
    _recording.check_numbers(args)
    native = _native_player(args.player)
    work = tempfile.mkdtemp(prefix="iowitness-replay-")
    try:
        return _replay(args, speed, native, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _replay(args, speed: float, native: str | None, work: str) -> int:
    plan_path = os.path.join(work, "plan.bin" if native else "plan.npz")
    # a trace that cannot be replayed says so, root or not; the native player's plan is streamed
    # to its file by a process of its own (memory bounded, not by the trace's length:
    # replay/stream_plan.py), started first so that it runs while this machine's tracing is
    # checked (0.4 to 0.6 s here). At --timing fast the player starts on it once its files are
    # known, while the think times and waits are still being written (followed; not a plan with
    # async requests); a timed replay waits for the whole plan, so that no thread's first call is
    # held back by the build while another's keeps its recorded start
    if not native:
        return _recorded(args, speed, None, replay_plan.build(args.trace), plan_path)
    build = stream_plan.start_apart(args.trace, plan_path, follow=speed == 0)
    try:
        _recording.require_backend(args)
    except IowitnessError:
        try:
            build.announced()   # a trace that cannot be replayed says so first, root or not
        finally:
            build.stop()
        raise
    except BaseException:
        build.stop()
        raise
    plan = build.announced()
    if not plan.followed:
        return _recorded(args, speed, native, build.finish(), plan_path)
    try:
        code = _recorded(args, speed, native, plan, plan_path)
    except BaseException:
        build.stop()
        raise
    build.finish()   # the build's own error, if it failed once followed (the player stopped on it)
    return code


def _recorded(args, speed: float, native: str | None, plan, plan_path: str) -> int:
    """Make the plan's files under --into and record the player replaying it."""
    if not native and plan.has_async:
        raise UsageError("the trace holds libaio or io_uring requests, which only the native player replays "
                         f"({NATIVE_PLAYER}, built by the install when clang is found); the Python player does not")
    _recording.require_backend(args)
    into = os.path.abspath(args.into)
    dirs_needed = len(paths.directories([f["rel"] for f in plan.files]))
    if dirs_needed > targets.NAME_RULES_MAX:   # the probe watches each directory: refused before any is made
        raise UsageError(f"the trace's files lie in {dirs_needed:,} directories; a replay traces at most "
                         f"{targets.NAME_RULES_MAX:,}")
    dirs = paths.prepare(into, [f["rel"] for f in plan.files], [f["size"] for f in plan.files],
                         [f["precreate"] for f in plan.files], args.force, [f.get("cold", False) for f in plan.files])
    if plan.source.get("damaged"):
        print(f"iowitness: warning: {args.trace} is damaged, {plan.source['damaged']}: only the calls before "
              "the damage are replayed", file=sys.stderr)
    if plan.source.get("missing"):   # said even with --quiet, as run says it of its own trace
        print(f"iowitness: warning: {args.trace} misses calls its run made ({plan.source['missing']}): only the "
              "calls it holds are replayed; record the original again with a larger --ring-buffer-mb",
              file=sys.stderr)
    calls = plan.count if isinstance(plan, stream_plan.NativePlan) else len(plan.calls)
    _recording.say(args, f"replaying {calls:,} calls of {len(plan.threads)} thread(s) on "
                         f"{len(plan.files)} file(s) into {into}" + _skipped(plan)
                         + f", {'native' if native else 'Python'} player")
    if isinstance(plan, replay_plan.Plan):
        plan.save(plan_path)
    args.files = dirs
    args.on_fault = "stop"
    args.trace_label = "replay"
    player = [native] if native else [sys.executable, "-m", "iowitness.replay.player"]
    args.command = [*player, plan_path, into, repr(speed)] + (["--follow"] if getattr(plan, "followed", False) else [])
    args.extra_meta = {"replay_of": {"trace": plan.source["path"], "command": plan.source["command"],
                                     "host": plan.source["host"], "timing": args.timing, "into": into,
                                     "files": {f["rel"]: orig for f, orig in
                                               zip(plan.files, plan.source["original_paths"])},
                                     "not_replayed": plan.skipped,
                                     "original_missing": plan.source.get("missing") or ""}}
    return run.execute(args)


def _native_player(choice: str) -> str | None:
    """The native player's path, None for the Python one."""
    built = NATIVE_PLAYER if os.access(NATIVE_PLAYER, os.X_OK) else None
    if choice == "native" and built is None:
        raise UsageError(f"--player native: {NATIVE_PLAYER} was not built (the install builds it with the probe: "
                         "clang is needed); use --player python")
    return None if choice == "python" else built


def _skipped(plan) -> str:
    total = sum(plan.skipped.values())
    return f" ({total:,} recorded calls not replayed: see the replay's output)" if total else ""
