"""Every printed figure of a set of benchmarks, judged under `run`, `attach -p` and an strace
`import`, as many rounds as asked, on a quiet machine or beside CPU hogs: a table of verdicts
per benchmark and way of recording, every DISAGREES and every failure printed with its reason,
and the traces of those kept (issue 30: "no false DISAGREES on any of them").

    sudo .venv/bin/python scripts/verdict_census.py --rounds 2 [--hogs 2] [--only REGEX]
        [--modes run,attach,attach-mid,import] [--keep DIR]

The benchmarks: IOzone, fio, dd and sysbench fileio as the project knows them, and the
home-made workloads of tests/workloads/ with their specs (built with gcc here). Each runs in a
fresh directory under /var/tmp. `attach` starts the benchmark (its usual run, output in a
file), stops it at once (SIGSTOP, before its first test), attaches to its PID, and lets it go
(SIGCONT) only once iowitness says it is recording: however long the probe takes to load (11 s
at load 19), every test runs under the attach, and its figures are judged from the output the
trace recorded, as `attach -p` gives them. `attach-mid` is an attach as a user makes it to a
benchmark already running: after --attach-after seconds, judged with --claims (a longer run of
it where the usual one ends before the probe is loaded; one that still does is "skipped"): the
figures of the tests that ended before the attach are CANNOT JUDGE, never DISAGREES.
The stop of `attach` lands only once Popen has returned, after the exec: on a busy machine the
benchmark may have run for milliseconds before it, into its first test (seen: threads_bench's
first thread done, ops_bench openclose 83 of its 300 operations), and that test's figures are
then CANNOT JUDGE because the trace began mid-test. So each mode's CANNOT JUDGE reasons are
counted under the table, numbers and names taken out, to tell such a reason from a new one.
per_test_lines and timeline_bench are attached to at a gate of their own by their kernel tests,
not here. A benchmark, an iowitness command or a report that fails is counted apart ("failed"),
never as a verdict.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT / "tests" / "workloads"
IOWITNESS = [str(ROOT / ".venv" / "bin" / "iowitness")]
GCC_FLAGS = ("-O1", "-Wall", "-Wl,-z,now")
VERDICTS = ("agrees", "explained", "cannot judge", "disagrees")
MODES = ("run", "attach", "attach-mid", "import")
# how long the probe may take to load under `attach` before the run counts as failed
ATTACH_TIMEOUT_S = 180


@dataclass
class Benchmark:
    name: str
    argv: list[str]                 # "{d}": its directory; "{exe}": the home-made workload built
    spec: str | None = None         # a spec file beside the workload, or None (known to iowitness)
    build: str | None = None        # tests/workloads/NAME.c
    prepare: list[str] | None = None   # run once in its directory before it (not recorded)
    libs: tuple[str, ...] = ()
    longer: list[str] | None = None    # its argv under attach: long enough to be attached to mid-run


BENCHMARKS = [
    Benchmark("iozone -i0 -i1 -i2", ["iozone", "-i0", "-i1", "-i2", "-s", "64m", "-r", "64k", "-f", "{d}/iozone.tmp"],
              longer=["iozone", "-i0", "-i1", "-i2", "-s", "512m", "-r", "64k", "-f", "{d}/iozone.tmp"]),
    Benchmark("iozone -t 2", ["iozone", "-i0", "-i1", "-t", "2", "-s", "32m", "-r", "64k", "-F", "{d}/f1", "{d}/f2"]),
    Benchmark("fio randrw 2 jobs", ["fio", "--name=mix", "--rw=randrw", "--bs=4k", "--size=32m", "--ioengine=psync",
                                    "--numjobs=2", "--group_reporting", "--directory={d}"],
              longer=["fio", "--name=mix", "--rw=randrw", "--bs=4k", "--size=32m", "--ioengine=psync", "--numjobs=2",
                      "--group_reporting", "--directory={d}", "--time_based", "--runtime=5"]),
    Benchmark("fio write fsync=16", ["fio", "--name=s", "--rw=write", "--bs=4k", "--size=8m", "--fsync=16",
                                     "--directory={d}"],
              longer=["fio", "--name=s", "--rw=write", "--bs=4k", "--size=8m", "--fsync=16", "--directory={d}",
                      "--time_based", "--runtime=5"]),
    Benchmark("dd fdatasync", ["dd", "if=/dev/zero", "of={d}/dd.bin", "bs=1M", "count=128", "conv=fdatasync"]),
    Benchmark("sysbench fileio rndrw", ["sysbench", "fileio", "--file-num=2", "--file-total-size=64M",
                                        "--file-test-mode=rndrw", "--time=3", "run"],
              prepare=["sysbench", "fileio", "--file-num=2", "--file-total-size=64M", "prepare"],
              longer=["sysbench", "fileio", "--file-num=2", "--file-total-size=64M", "--file-test-mode=rndrw",
                      "--time=6", "run"]),
    Benchmark("dbench -t 5", ["dbench", "-t", "5", "-D", "{d}", "1"]),
    Benchmark("ioping -D", ["ioping", "-D", "-c", "41", "-i", "0.005", "{d}"]),
    Benchmark("ioping -C", ["ioping", "-c", "20", "-i", "0.01", "-C", "{d}"]),
    Benchmark("fs_mark -S 1", ["fs_mark", "-d", "{d}/fs", "-n", "200", "-s", "16384", "-S", "1"]),
    Benchmark("bonnie++ -f", ["bonnie++", "-d", "{d}", "-s", "64M:4k", "-r", "32M", "-n", "0", "-u", "root", "-q",
                              "-f", "-D"]),
    Benchmark("stress-ng --hdd", ["stress-ng", "--hdd", "1", "--hdd-ops", "2000", "--temp-path", "{d}",
                                  "--metrics-brief"]),
    Benchmark("ops_bench groups", ["{exe}", "groups", "{d}", "200"], "ops_bench.toml", "ops_bench",
              longer=["{exe}", "groups", "{d}", "500"]),
    Benchmark("ops_bench openclose", ["{exe}", "openclose", "{d}/oc", "300"], "ops_bench.toml", "ops_bench"),
    Benchmark("latency_bench sync", ["{exe}", "{d}/lat", "2000", "4096", "sync"], "latency_bench.toml",
              "latency_bench", libs=("-lm",)),
    Benchmark("csv_bench", ["{exe}", "{d}", "16", "100"], "csv_bench.toml", "csv_bench",
              longer=["{exe}", "{d}", "128", "100"]),
    Benchmark("per_test_lines", ["{exe}", "{d}/p"], "per_test_lines.toml", "per_test_lines"),
    Benchmark("threads_bench many", ["{exe}", "many", "{d}/t", "4", "64"], "threads_bench.toml", "threads_bench",
              libs=("-pthread",), longer=["{exe}", "many", "{d}/t", "4", "256"]),
    Benchmark("timeline_bench", ["{exe}", "{d}/tl"], "timeline_bench.toml", "timeline_bench"),
    Benchmark("stdio_reopen", ["{exe}", "{d}/s", "16", "200"], "stdio_reopen.toml", "stdio_reopen",
              longer=["{exe}", "{d}/s", "64", "400"]),
]


def _built(name: str, libs: tuple[str, ...], where: Path) -> Path:
    exe = where / name
    if not exe.exists():
        subprocess.run(["gcc", *GCC_FLAGS, "-o", str(exe), str(WORKLOADS / f"{name}.c"), *libs], check=True)
    return exe


def _argv(argv: list[str], d: Path, exe: Path | None) -> list[str]:
    return [a.replace("{d}", str(d)).replace("{exe}", str(exe or "")) for a in argv]


def _judged(trace: Path, bench: Benchmark, claims: Path | None) -> tuple[list[dict], str]:
    """(the report's verdicts, why it failed or "")."""
    argv = [*IOWITNESS, "report", str(trace), "--json"]
    if bench.spec:
        argv += ["--spec", str(WORKLOADS / bench.spec)]
    if claims is not None:
        argv += ["--claims", str(claims)]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0 or "Traceback" in proc.stderr:
        return [], f"report exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"
    return json.loads(proc.stdout)["verdicts"], ""


def _record(mode: str, bench: Benchmark, d: Path, exe: Path | None,
            attach_after: float) -> tuple[Path, Path | None, str]:
    """(the trace, the output file to judge it with or None, why it failed or "")."""
    argv = _argv(bench.longer if mode == "attach-mid" and bench.longer else bench.argv, d, exe)
    trace = d / "run.iwt"
    if mode == "run":
        proc = subprocess.run([*IOWITNESS, "run", "-q", "-o", str(trace), "--", *argv], cwd=d,
                              capture_output=True, text=True)
        return trace, None, "" if proc.returncode == 0 else f"run exit {proc.returncode}: {proc.stderr.strip()[-200:]}"
    if mode == "import":
        log, out = d / "run.strace", d / "out.txt"
        with open(out, "w") as sink:
            proc = subprocess.run(["strace", "-f", "-ttt", "-T", "-y", "-s", "4096", "-o", str(log), "--", *argv],
                                  cwd=d, stdout=sink, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            return trace, None, f"benchmark under strace exit {proc.returncode}"
        imported = subprocess.run([*IOWITNESS, "import", str(log), "-o", str(trace)], capture_output=True, text=True)
        return trace, None, "" if imported.returncode == 0 else \
            f"import exit {imported.returncode}: {imported.stderr[-200:]}"
    if mode == "attach":
        return _attached_from_its_start(argv, d, trace)
    out = d / "out.txt"
    with open(out, "w") as sink:
        benchmark = subprocess.Popen(argv, cwd=d, stdout=sink, stderr=subprocess.STDOUT)
        time.sleep(attach_after)
        if benchmark.poll() is not None:
            return trace, out, "skipped: ended before the attach"
        collector = subprocess.run([*IOWITNESS, "attach", "-q", "-p", str(benchmark.pid), "-o", str(trace)],
                                   capture_output=True, text=True)
        benchmark.wait()
    if collector.returncode != 0 and re.search(r"no process with PID|exited while iowitness was attaching",
                                                collector.stderr):
        return trace, out, "skipped: ended while the probe loaded"
    return trace, out, "" if collector.returncode == 0 else \
        f"attach exit {collector.returncode}: {collector.stderr[-200:]}"


def _attached_from_its_start(argv: list[str], d: Path, trace: Path) -> tuple[Path, Path | None, str]:
    """`attach -p` to the benchmark held stopped from its first instant until the probe records.

    The benchmark's own process (its command line is what the trace names) is stopped right
    after its exec, before it has begun a test, and continued once the collector says
    "attached; recording"; its figures are then judged from the output the trace recorded (no
    --claims). A wait of minutes for the probe is no failure; a collector that never records is."""
    out, said = d / "out.txt", d / "attach.err"
    with open(out, "w") as sink, open(said, "w") as collector_err:
        benchmark = subprocess.Popen(argv, cwd=d, stdout=sink, stderr=subprocess.STDOUT)
        collector = None
        try:
            os.kill(benchmark.pid, signal.SIGSTOP)
            while _state(benchmark.pid) not in ("T", "Z", ""):
                time.sleep(0.01)
            if benchmark.poll() is not None:
                return trace, None, "skipped: ended before it could be stopped"
            collector = subprocess.Popen([*IOWITNESS, "attach", "-p", str(benchmark.pid), "-o", str(trace)],
                                         stdout=subprocess.DEVNULL, stderr=collector_err)
            deadline = time.monotonic() + ATTACH_TIMEOUT_S
            while "attached; recording" not in said.read_text():
                if collector.poll() is not None or time.monotonic() > deadline:
                    # the benchmark's state says whether it was still there, stopped, for the collector
                    return trace, None, (f"attach did not record in {ATTACH_TIMEOUT_S} s (the benchmark: state "
                                         f"{_state(benchmark.pid) or 'gone'}, exit {benchmark.poll()}): "
                                         f"{said.read_text()[-200:]}")
                time.sleep(0.1)
        finally:
            try:
                os.kill(benchmark.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass   # it ended before it could be stopped, and poll() reaped it
            if collector is None or collector.returncode is not None:
                benchmark.kill()
            benchmark.wait()
            if collector is not None and collector.poll() is None:
                try:
                    collector.wait(120)
                except subprocess.TimeoutExpired:
                    collector.terminate()
                    collector.wait()
    if collector.returncode != 0:
        return trace, None, f"attach exit {collector.returncode}: {said.read_text()[-200:]}"
    return trace, None, ""


def _state(pid: int) -> str:
    """A process's state letter from /proc (T: stopped), or "" once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def reason_kind(reason: str) -> str:
    """A verdict's reason with its numbers and program names taken out, cut at 160 characters:
    the same words count as one reason whatever the run's figures, PIDs and program (the trace
    began "1.912 s after threads_bench (PID 32645) started" and "2.245 s after ops_bench (PID
    1398)" are one reason)."""
    kind = re.sub(r"after \S+ \(PID", "after NAME (PID", reason)
    kind = re.sub(r"\d[\d,.]*", "#", kind)
    return kind[:160]


def _hog() -> None:
    while True:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--modes", default="run,attach,import")
    parser.add_argument("--only", default="", help="a regular expression on the benchmarks' names")
    parser.add_argument("--hogs", type=int, default=0, help="CPU hogs to run beside (busy loops)")
    parser.add_argument("--attach-after", type=float, default=0.5, help="seconds before attach -p (attach-mid)")
    parser.add_argument("--keep", type=Path, default=Path("/var/tmp/iowitness-census"),
                        help="where the traces of DISAGREES and failures are kept")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("verdict_census: run and attach need root: run it with sudo", file=sys.stderr)
        return 2
    try:
        only = re.compile(args.only)
    except re.error as exc:
        print(f"verdict_census: --only {args.only!r} is not a regular expression ({exc})", file=sys.stderr)
        return 2
    chosen = [b for b in BENCHMARKS if only.search(b.name)]
    modes = args.modes.split(",")
    if not chosen or args.rounds < 1 or set(modes) - set(MODES):
        print("verdict_census: nothing to run: --only matches none of "
              f"{', '.join(b.name for b in BENCHMARKS)}, or --rounds is below 1, or --modes is not from "
              f"{','.join(MODES)}", file=sys.stderr)
        return 2
    missing = sorted({b.argv[0] for b in chosen if b.build is None and shutil.which(b.argv[0]) is None})
    if missing:
        print(f"verdict_census: not installed: {', '.join(missing)} (scripts/setup.sh installs them)", file=sys.stderr)
        return 2
    hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    tally: dict[tuple[str, str], Counter] = {}
    unjudged: dict[str, Counter] = {}   # mode -> CANNOT JUDGE reasons (as reason_kind gives them)
    found: list[str] = []
    binaries = Path(tempfile.mkdtemp(prefix="iow-census-bin-"))
    # a census stopped early (SIGTERM, Ctrl-C) still prints what it judged so far
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        for round_ in range(1, args.rounds + 1):
            for bench in chosen:
                exe = _built(bench.build, bench.libs, binaries) if bench.build else None
                for mode in modes:
                    d = Path(tempfile.mkdtemp(prefix="iow-census-", dir="/var/tmp"))
                    counts = tally.setdefault((bench.name, mode), Counter())
                    load = os.getloadavg()[0]
                    try:
                        if bench.prepare:
                            subprocess.run(bench.prepare, cwd=d, check=True, capture_output=True)
                        trace, claims, failed = _record(mode, bench, d, exe, args.attach_after)
                        verdicts, why = ([], failed) if failed else _judged(trace, bench, claims)
                        if why.startswith("skipped"):
                            counts["skipped"] += 1
                            continue
                        if why:
                            counts["failed"] += 1
                            found.append(f"round {round_} {bench.name} [{mode}] FAILED: {why}")
                        for v in verdicts:
                            counts[v["verdict"]] += 1
                            if v["verdict"] == "cannot judge":
                                unjudged.setdefault(mode, Counter())[reason_kind(v["reasons"][0])] += 1
                            if v["verdict"] == "disagrees":
                                found.append(f"round {round_} {bench.name} [{mode}] (load {load:.1f}) DISAGREES: "
                                             f"{v['claim']['printed'][:80]!r}: {v['reasons'][0][:200]}")
                        if why or any(v["verdict"] == "disagrees" for v in verdicts):
                            args.keep.mkdir(parents=True, exist_ok=True)
                            kept = args.keep / f"r{round_}-{re.sub(r'[^A-Za-z0-9]+', '_', bench.name)}-{mode}"
                            shutil.copytree(d, kept, dirs_exist_ok=True,
                                            ignore=shutil.ignore_patterns("*.tmp", "f1", "f2", "test_file.*"))
                            found.append(f"    kept in {kept}")
                    finally:
                        shutil.rmtree(d, ignore_errors=True)
                    print(f"round {round_} {bench.name:24} {mode:7} {dict(counts)}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        found.append("stopped early: the table holds the benchmarks judged before the stop")
    finally:
        for h in hogs:
            h.terminate()
        shutil.rmtree(binaries, ignore_errors=True)
    print(f"{'benchmark':26} {'mode':7} " + " ".join(f"{v:>12}" for v in (*VERDICTS, "failed", "skipped")))
    for (name, mode), counts in tally.items():
        print(f"{name:26} {mode:7} " + " ".join(f"{counts[v]:>12}" for v in (*VERDICTS, "failed", "skipped")))
    for mode, reasons in unjudged.items():
        print(f"CANNOT JUDGE under {mode}, by reason (numbers as #, names as NAME):")
        for reason, n in reasons.most_common():
            print(f"  {n:5} {reason}")
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
