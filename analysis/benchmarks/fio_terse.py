"""fio's terse output (`--output-format=terse`, `--minimal`): one line of fields separated by
semicolons per job (or per group with group_reporting).

The fields (fio HOWTO, "Terse output"): the terse version; from version 3 on, fio's version;
the job's name, group and error; then per direction (read and write, and trim from version 4)
its total I/O in KiB, bandwidth in KiB/s, IOPS and runtime in ms, submission latency (min, max,
mean, stddev), completion latency (the same), 20 completion latency percentiles
("1.000000%=12"), total latency (min, max, mean, stddev), all in µs, and its bandwidth
statistics (5 fields; version 5 adds the bandwidth samples and IOPS min, max, mean, stddev and
samples: 11). The rest (CPU, depths, disks) is not a claim.

Example: "3;fio-3.33;j;0;0;8192;910222;227555;9;..." is job j's 8 MiB read at 910,222 KiB/s in 9 ms.
"""

from __future__ import annotations

import math
import re

from iowitness.analysis.benchmarks import fio_latency
from iowitness.analysis.judge.claim import Claim

# a terse line: its version, then (from version 3) fio's own version
LINE = re.compile(r"^(?P<version>[2-5]);(?:fio-[^;]*;)?[^;\n]*;\d+;-?\d+;[\d;.%=\-]+", re.MULTILINE)
_DIRECTIONS = {2: ("read", "write", "trim"), 3: ("read", "write"), 4: ("read", "write", "trim"),
               5: ("read", "write", "trim")}
_PERCENTILES = 20


def _width(version: int) -> int:
    return 4 + 4 + 4 + _PERCENTILES + 4 + (11 if version >= 5 else 5)


def _latency(fields: list[str], at: int, percentiles: list[str] | None = None) -> dict:
    """One latency block (µs in the line) as fio's JSON has it (ns); N unknown: terse says none."""
    block: dict = {"N": math.nan, "min": float(fields[at]) * 1e3, "max": float(fields[at + 1]) * 1e3,
                   "mean": float(fields[at + 2]) * 1e3, "stddev": float(fields[at + 3]) * 1e3}
    if percentiles:
        block["percentile"] = {}
        for field in percentiles:
            p, _, value = field.partition("=")
            if float(p.rstrip("%")) > 0:   # the unused slots read "0%=0"
                block["percentile"][p.rstrip("%")] = float(value) * 1e3
    return block


def jobs(text: str) -> list[tuple[str, int, int, str, dict]]:
    """(job name, group, terse version, direction, JSON-shaped stats) per direction that moved
    data; ValueError when a terse line is cut short or a field is not a number."""
    out = []
    for line in LINE.finditer(text):
        fields = line.group(0).split(";")
        version = int(fields[0])
        head = 4 if version == 2 else 5
        name, group = fields[head - 3], int(fields[head - 2])
        width = _width(version)
        for k, ddir in enumerate(_DIRECTIONS[version]):
            at = head + k * width
            if len(fields) < at + width:
                raise ValueError(f"fio terse line of job {name!r} is cut short in its {ddir} fields")
            io_kib = int(fields[at])
            if not io_kib:
                continue
            stats = {"io_bytes": io_kib * 1024, "bw": float(fields[at + 1]), "iops": float(fields[at + 2]),
                     "runtime": int(fields[at + 3]),
                     "slat_ns": _latency(fields, at + 4), "clat_ns": _latency(fields, at + 8,
                                                                            fields[at + 12:at + 32]),
                     "lat_ns": _latency(fields, at + 32)}
            out.append((name, group, version, ddir, stats))
    return out


def claims(text: str, clock: dict) -> list[Claim]:
    """Each job's rate per direction, then its latency per direction (fio_latency.claim)."""
    rates: list[Claim] = []
    latencies: list[tuple[str, str, dict, dict]] = []
    for name, group, version, ddir, s in jobs(text):
        extra = {"from": "terse", "terse_version": version, "groupid": group, "io_bytes": s["io_bytes"],
                 "runtime_ms": s["runtime"], **clock}
        rates.append(Claim(source="fio", test=f"{name} {ddir}", value=s["bw"], unit="KiB/s",
                           printed=f'terse "{name}" {ddir}: {s["io_bytes"] // 1024} KiB, bw={s["bw"]:g} KiB/s, '
                                   f'iops={s["iops"]:g}, runtime={s["runtime"]} ms',
                           bytes_per_s=s["bw"] * 1024, ops_per_s=s["iops"],
                           direction=ddir if ddir != "trim" else None, job=name, index=len(rates), extra=extra))
        latencies.append((name, ddir, s, {"from": "terse", "groupid": group,
                                          "resolution_s": 1e-6}))   # whole µs in the line
    out = list(rates)
    for name, ddir, s, extra in latencies:
        latency = fio_latency.claim(name, ddir, s, 0, len(out), extra)
        if latency is not None:
            out.append(latency)
    return out
