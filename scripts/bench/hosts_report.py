#!/usr/bin/env python3
"""A report over several hosts (`report A.iwt B.iwt --claims client.json`) of large traces, by
two checkouts alternately in one run: wall time, CPU time and peak memory of each, and whether
their outputs are the same bytes.

The run is real: fio --server on 127.0.0.2, 127.0.0.3, ... (one "host" each), each traced by its
own `iowitness attach --pid`, and fio --client driving 4 KiB cached random reads on every host,
EVENTS reads each (fio's io_size over a 64 MiB file), then fio's JSON output kept as the claims. Made for issue 29
(a report over several hosts read block by block, its memory bounded): OLD is a checkout from
before, NEW this one. Each command is a fresh process: CPU (every process of it) and the largest
process's peak memory from os.wait4, and the peak of all its processes at once (proportional set
sizes, sampled from /proc every 0.1 s: a host's own processes, analysis/runs/host_workers.py);
run as a user's would: bytecode written first, untimed, and without this machine's
PYTHONDONTWRITEBYTECODE.

Usage (as root, from the repository; OLD a checkout with its own .venv):
  .venv/bin/python scripts/bench/hosts_report.py --old /work/old --hosts 2 --events 5000000 \\
      --keep /var/tmp/hosts5m --runs 3
  .venv/bin/python scripts/bench/hosts_report.py --old /work/old --keep /var/tmp/hosts5m --reuse --runs 3
  .venv/bin/python scripts/bench/hosts_report.py --hosts 2 --events 100000000 --keep /dev/shm/hosts200m --runs 0
  .venv/bin/python scripts/bench/hosts_report.py --keep /dev/shm/hosts200m --reuse --runs 1   # this checkout alone

Without --old only this checkout's commands run (the old path cannot read 200 M events: it held
3.8 GiB at 10 M); --runs 0 records the run and stops.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline_old_new import NEW, spread, user_environment  # noqa: E402  (a sibling script)
from report_10m import write_bytecode  # noqa: E402

sys.path.insert(0, str(NEW))
from iowitness.collector.processes import descendants  # noqa: E402
from tests.support.collectors import stop as _stop  # noqa: E402  (stop, then kill after 30 s)

FORMS = {"text": [], "json": ["--json"]}


def _tree_pss(root: int) -> int:
    """Bytes resident in `root` and every process under it now (a host's own processes too), each
    page shared by n of them counted 1/n (the kernel's proportional set size)."""
    total = 0
    for pid in descendants({root}):   # proportional: the pages a forked process shares with its parent counted once
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total += 1024 * int(next(line for line in f if line.startswith("Pss:")).split()[1])
        except (OSError, StopIteration, IndexError, ValueError):
            continue
    return total


def timed(checkout: Path, argv: list[str]) -> tuple[float, float, bytes, float, float]:
    """(wall seconds, peak GiB of the largest process, output, CPU seconds: user + system of
    every process, peak GiB of all its processes at once: sampled every 0.1 s) of one command
    of `checkout`'s iowitness."""
    begin = time.perf_counter()
    proc = subprocess.Popen([str(checkout / ".venv/bin/python"), "-m", "iowitness.cli", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=checkout,
                            env=user_environment(IOWITNESS_NO_MEMORY_CHECK="1", COLUMNS="200"))
    peak, done = [0], threading.Event()

    def sample():
        while not done.wait(0.1):
            peak[0] = max(peak[0], _tree_pss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout = proc.stdout.read()
    done.set()
    sampler.join()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - begin
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"{checkout}: {' '.join(argv)} failed ({os.waitstatus_to_exitcode(status)})")
    return wall, usage.ru_maxrss / 2**20, stdout, usage.ru_utime + usage.ru_stime, peak[0] / 2**30


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def _wait_for(what, test, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if test():
            return
        time.sleep(0.1)
    sys.exit(f"hosts_report: {what} did not happen within {timeout:.0f} s")


def _listening(address: str, port: int) -> bool:
    try:
        socket.create_connection((address, port), timeout=0.5).close()
        return True
    except OSError:
        return False


def record(folder: Path, hosts: int, events: int) -> None:
    """Record the run into folder: host0.iwt .. and client.json."""
    folder.mkdir(parents=True, exist_ok=True)
    iowitness = [str(NEW / ".venv/bin/iowitness")]
    argv = ["fio", "--output-format=json"]
    with ExitStack() as stack:
        for k in range(hosts):
            address = f"127.0.0.{k + 2}"
            port = _free_port(address)
            home = folder / f"server{k}"
            home.mkdir(exist_ok=True)
            server = subprocess.Popen(["fio", f"--server=ip:{address},{port}"], cwd=home,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            stack.callback(_stop, server)
            _wait_for(f"fio --server on {address}:{port} listening", lambda: _listening(address, port))
            log = folder / f"attach{k}.log"
            with open(log, "wb") as err:
                collector = subprocess.Popen([*iowitness, "attach", "--pid", str(server.pid), "-o",
                                              str(folder / f"host{k}.iwt")], stdout=subprocess.DEVNULL, stderr=err)
            stack.callback(_stop, collector, signal.SIGINT)
            _wait_for(f"iowitness attach of host {k}", lambda: b"attached; recording" in log.read_bytes())
            job = folder / f"job{k}.fio"
            # io_size beyond size: fio wraps around the 64 MiB file until it has read that much
            job.write_text(f"[r]\nfilename=data.bin\nrw=randread\nbs=4k\nsize=64m\nio_size={events * 4096}\n"
                           "ioengine=psync\n")
            argv += [f"--client=ip:{address},{port}", str(job)]
        print(f"hosts_report: fio --client on {hosts} hosts, {events:,} reads each ...", file=sys.stderr)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            sys.exit(f"hosts_report: fio --client failed: {proc.stderr.strip()[-500:]}")
        (folder / "client.json").write_text(proc.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="a checkout from before, with its .venv (default: none, "
                        "this checkout's commands alone)")
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--events", type=int, default=5_000_000, help="fio reads per host")
    parser.add_argument("--keep", type=Path, required=True,
                        help="folder of the recorded run (on a tmpfs, e.g. /dev/shm/hosts, the trace has no device "
                             "view: a disk's requests from anything else running would be recorded with it)")
    parser.add_argument("--reuse", action="store_true", help="the run in --keep was recorded before")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--forms", nargs="+", choices=sorted(FORMS), default=list(FORMS))
    args = parser.parse_args()
    args.keep = args.keep.resolve()   # the commands run in each checkout's folder
    if not args.reuse:
        record(args.keep, args.hosts, args.events)
    if not args.runs:
        return 0
    checkouts = ([("old", args.old)] if args.old else []) + [("new", NEW)]
    traces = sorted(str(p) for p in args.keep.glob("host*.iwt"))
    claims = str(args.keep / "client.json")
    print(f"load average at start: {os.getloadavg()}; {len(traces)} hosts, "
          f"{sum(os.path.getsize(t) for t in traces) / 2**20:.0f} MiB of traces")
    names = [name for name, _ in checkouts]
    columns = ("wall s", "CPU s", "peak GiB", "all processes GiB")
    print("| form | " + " | ".join(f"{n} {what}" for what in columns for n in names)
          + " | output | load average before, after |")
    print("|" + " --- |" * (len(columns) * len(names) + 3))
    for _, checkout in checkouts:
        write_bytecode(checkout)
    for form in args.forms:
        argv = ["report", *traces, "--claims", claims, *FORMS[form]]
        runs: dict = {name: [] for name in names}
        outputs: dict = {}
        before = os.getloadavg()[0]
        for _ in range(args.runs):
            for name, checkout in checkouts:
                wall, peak, stdout, cpu, together = timed(checkout, argv)
                runs[name].append((wall, cpu, peak, together))
                # every run's output against the first's: the same bytes each time, and old against new
                outputs.setdefault(name, stdout)
                if outputs[name] != stdout:
                    outputs[name] = b"(differs from run to run)"
        same = ("same bytes" if outputs["old"] == outputs["new"] else "DIFFERENT") if args.old else "-"
        cells = [spread([r[i] for r in runs[n]]) for i in range(len(columns)) for n in names]
        print(f"| {form} | {' | '.join(cells)} | {same} | {before:.1f}, {os.getloadavg()[0]:.1f} |", flush=True)
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
