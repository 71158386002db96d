"""The workloads scripts/bench/observers.py runs under each observer, and how each is scored.

Each workload is a command that prints its own throughput (fio's JSON, IOzone's and dd's
rates read by iowitness's own claim adapters, pread_loop's calls/s), so the score never
depends on the observer's start-up time. Sizes keep an untraced run at a few seconds and a
run under strace within a minute.
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from iowitness.analysis.benchmarks import dd as dd_claims, iozone as iozone_claims

HERE = Path(__file__).resolve().parent


@dataclass
class Workload:
    name: str
    describe: str
    command: list[str]
    files: list[str]              # what iowitness traces (--file)
    score: Callable[[str, str], float]   # (stdout, stderr) -> throughput, higher is better
    unit: str
    prepare: Callable[[], None] = field(default=lambda: None)   # before each run (delete old output)
    # throughput per CPU-second of the benchmark itself, where it says how much CPU it used:
    # other load on the machine moves it far less than wall-clock throughput
    cpu_score: Callable[[str, str], float] | None = None
    # how interleaved.py follows its progress inside one run: "rchar" (/proc/PID/io, bytes from
    # read calls) or "fio-status" (fio's own cumulative io_bytes every 100 ms): io_uring and
    # libaio reads are no read calls, and the kernel adds nothing to rchar for them
    progress: str = "rchar"
    # bytes one call moves (fio's 4 KiB blocks, the loop's 1 byte): turns a rate per CPU-second
    # into CPU-ns per call, so that workloads whose calls take different times compare in ns
    call_bytes: int | None = None


def _fio_bandwidth(direction: str):
    def score(stdout: str, _stderr: str) -> float:
        return float(json.loads(stdout[stdout.index("{"):])["jobs"][0][direction]["bw_bytes"])
    return score


def _fio_bandwidth_per_cpu(direction: str):
    def score(stdout: str, _stderr: str) -> float:
        job = json.loads(stdout[stdout.index("{"):])["jobs"][0]
        return float(job[direction]["bw_bytes"]) / ((job["usr_cpu"] + job["sys_cpu"]) / 100)
    return score


def _geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _iozone_score(stdout: str, _stderr: str) -> float:
    """Geometric mean of the rates IOzone printed (write, rewrite, read, reread)."""
    claims = iozone_claims.without_report(iozone_claims.parse(stdout))
    return _geometric_mean([c.bytes_per_s for c in claims if c.bytes_per_s])


def _dd_score(_stdout: str, stderr: str) -> float:
    return dd_claims.parse(stderr)[-1].bytes_per_s


def _pread_field(name: str):
    def score(stdout: str, _stderr: str) -> float:
        words = stdout.split()
        return float(words[words.index(name) + 1])
    return score


def build_pread_loop(work: Path) -> Path:
    binary = work / "pread_loop"
    subprocess.run(["cc", "-O2", "-o", str(binary), str(HERE / "pread_loop.c")], check=True)
    return binary


def cached_file(path: Path, mib: int) -> Path:
    """A file of `mib` MiB, read once so that it sits in the page cache."""
    if not path.exists() or path.stat().st_size != mib << 20:
        subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={mib}", "status=none"], check=True)
    subprocess.run(["cat", str(path)], check=True, stdout=subprocess.DEVNULL)
    return path


def _removing(*paths: Path):
    def prepare() -> None:
        for p in paths:
            p.unlink(missing_ok=True)
    return prepare


def all_workloads(work: Path, seconds: float) -> dict[str, Workload]:
    """Every workload, keyed by name; files live in `work` (the benchmark's device)."""
    def fio(name: str, rw: str, direction: str, path: Path, engine: str = "psync", depth: int = 1,
            direct: bool = False) -> list[str]:
        # --invalidate=0: fio drops the file's pages from the cache before it starts unless told
        # not to, and the reads would come from the disk
        return ["fio", f"--name={name}", f"--filename={path}", f"--rw={rw}", "--bs=4k", f"--ioengine={engine}",
                f"--iodepth={depth}", "--size=256m", "--invalidate=0", "--time_based", f"--runtime={seconds:g}",
                "--output-format=json", *(["--direct=1"] if direct else [])]

    reads = work / "fio-read.bin"
    writes = work / "fio-write.bin"
    iozone_file = work / "iozone.tmp"
    dd_file = work / "dd.out"
    tiny = work / "pread.bin"
    found = {}

    def add(w: Workload) -> None:
        found[w.name] = w

    add(Workload("fio-seq-read", "fio 4 KiB psync sequential reads, page cache",
                 fio("seq-read", "read", "read", reads), [str(reads)], _fio_bandwidth("read"), "B/s",
                 prepare=lambda: cached_file(reads, 256), cpu_score=_fio_bandwidth_per_cpu("read"), call_bytes=4096))
    add(Workload("fio-rand-read", "fio 4 KiB psync random reads, page cache",
                 fio("rand-read", "randread", "read", reads), [str(reads)], _fio_bandwidth("read"), "B/s",
                 prepare=lambda: cached_file(reads, 256), cpu_score=_fio_bandwidth_per_cpu("read"), call_bytes=4096))
    # asynchronous I/O: 32 requests in flight from one thread, on the cached file (libaio
    # without O_DIRECT completes each request inside io_submit, as the page cache does)
    for engine in ("io_uring", "libaio"):
        add(Workload(f"fio-{engine.replace('_', '')}-rand-read",
                     f"fio 4 KiB {engine} random reads, iodepth 32, page cache",
                     fio(f"{engine}-rand-read", "randread", "read", reads, engine, 32), [str(reads)],
                     _fio_bandwidth("read"), "B/s", prepare=lambda: cached_file(reads, 256),
                     cpu_score=_fio_bandwidth_per_cpu("read"), progress="fio-status"))
    # the same reads with O_DIRECT, from the disk under `work`: each libaio request also has the
    # kernel's completion (iomap_dio_complete) to record
    for engine in ("libaio", "io_uring"):
        add(Workload(f"fio-{engine.replace('_', '')}-direct-rand-read",
                     f"fio 4 KiB {engine} O_DIRECT random reads, iodepth 32",
                     fio(f"{engine}-direct-rand-read", "randread", "read", reads, engine, 32, direct=True),
                     [str(reads)], _fio_bandwidth("read"), "B/s", prepare=lambda: cached_file(reads, 256),
                     cpu_score=_fio_bandwidth_per_cpu("read"), progress="fio-status"))
    add(Workload("fio-write", "fio 4 KiB psync buffered writes",
                 fio("write", "write", "write", writes), [str(writes)], _fio_bandwidth("write"), "B/s",
                 cpu_score=_fio_bandwidth_per_cpu("write")))
    add(Workload("iozone-4k", "IOzone -i0 -i1 -r4k -s 256m",
                 ["iozone", "-i0", "-i1", "-r4k", "-s256m", "-f", str(iozone_file)], [str(iozone_file)],
                 _iozone_score, "B/s", prepare=_removing(iozone_file)))
    add(Workload("iozone-64k", "IOzone -i0 -i1 -r64k -s 1g",
                 ["iozone", "-i0", "-i1", "-r64k", "-s1g", "-f", str(iozone_file)], [str(iozone_file)],
                 _iozone_score, "B/s", prepare=_removing(iozone_file)))
    add(Workload("dd-fdatasync", "dd bs=4k count=65536 conv=fdatasync",
                 ["dd", "if=/dev/zero", f"of={dd_file}", "bs=4k", "count=65536", "conv=fdatasync"],
                 [str(dd_file)], _dd_score, "B/s", prepare=_removing(dd_file)))
    binary = work / "pread_loop"
    add(Workload("pread-loop", "1-byte pread loop on a cached file (the floor's workload)",
                 [str(binary), str(tiny), f"{seconds:g}"], [str(tiny)], _pread_field("calls_per_s"), "calls/s",
                 cpu_score=_pread_field("calls_per_cpu_s"), call_bytes=1,
                 prepare=lambda: (binary.exists() or build_pread_loop(work), tiny.exists() or tiny.write_bytes(b"x"))))
    return found
