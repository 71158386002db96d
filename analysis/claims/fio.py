"""fio's claims: one per job (or group) and direction that moved data.

Reads `--output-format=json` and `json+` (the same numbers plus latency bins), and, more
simply, the per-job lines of the default "normal" text output. Checked against fio 3.33
outputs in tests/data/claims/fio/.

For each job and each of read / write / trim with io_bytes > 0: Claim.test is
"<job> <direction>" (the names analysis.benchmarks gives fio phases), value and unit are
fio's `bw` in KiB/s, bytes_per_s is `bw_bytes`, ops_per_s is `iops`, seconds_per_op is the
mean total latency (`lat_ns`, submission + completion). With --group_reporting fio prints
one entry per group, named after the group's first job.

Example: `parse(open("fio.json").read())[0]` for `fio --output-format=json --name=writer
--rw=write ...` is Claim(test="writer write", value=682666, unit="KiB/s",
bytes_per_s=699050666, ops_per_s=170666.67, job="writer", direction="write", ...).
"""

from __future__ import annotations

import json
import re

from iowitness.analysis.claims import Claim, UnparsableOutput

# fio's byte rates. HOWTO, "JSON output": "the `bw` value is reported in 1024 bytes per
# second units"; `bw_bytes` is the same rate in bytes per second (io_bytes * 1000 /
# runtime in ms), so it is preferred. In text output "Outputs always use correct prefixes"
# (HOWTO, kb_base): KiB = 1024, kB = 1000, and so on, "bw=2383.3kB/s (2327.4KiB/s)".
RATES = {
    "B/s": 1,
    "KiB/s": 1024, "MiB/s": 1024 ** 2, "GiB/s": 1024 ** 3, "TiB/s": 1024 ** 4, "PiB/s": 1024 ** 5,
    "kB/s": 1000, "MB/s": 1000 ** 2, "GB/s": 1000 ** 3, "TB/s": 1000 ** 4, "PB/s": 1000 ** 5,
}
# plain counts (IOPS=146k): SI prefixes, as above; a run of 2048 ops in 14 ms prints
# "IOPS=146k" (146,286), not 143k
COUNT_PREFIXES = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
# latency lines "lat (usec): min=..., avg= 6.05": the unit is in the parentheses
TIMES = {"nsec": 1e-9, "usec": 1e-6, "msec": 1e-3, "sec": 1}
DIRECTIONS = ("read", "write", "trim")

_JOB = re.compile(r"^(?P<job>\S.*?): \(groupid=(?P<group>\d+), jobs=(?P<jobs>\d+)\): err=\s*(?P<err>-?\d+)")
_DDIR = re.compile(r"^\s+(?P<ddir>read|write|trim)\s*: IOPS=(?P<iops>[\d.]+)(?P<prefix>[kMGT]?), "
                   r"BW=(?P<bw>[\d.]+)(?P<unit>\S+?) \((?P<bw2>[\d.]+)(?P<unit2>\S+?)\)")
_LAT = re.compile(r"^\s+lat \((?P<unit>nsec|usec|msec|sec)\): .*\bavg=\s*(?P<avg>[\d.]+)(?P<prefix>[kMGT]?),")


def parse(text: str) -> list[Claim]:
    """fio JSON (non-JSON lines before it, such as fio's notes, are skipped) or normal text."""
    starts = [m.start() for m in re.finditer(r"^\{", text, re.MULTILINE)]
    if starts:
        return _from_json(text, starts)
    if re.search(r"^\S.*: \(groupid=\d+, jobs=\d+\): err=", text, re.MULTILINE):
        return _from_text(text)
    raise UnparsableOutput('not fio output: no JSON object with "fio version" and no "<job>: (groupid=N, jobs=N)" line')


def _from_json(text: str, starts: list[int]) -> list[Claim]:
    decoder, docs, position = json.JSONDecoder(), [], starts[0]
    while position is not None:
        try:
            doc, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as e:
            raise UnparsableOutput(f"fio JSON output is cut short or broken: {e.msg} (line {e.lineno})") from None
        if not isinstance(doc, dict) or "fio version" not in doc:
            raise UnparsableOutput('not fio output: the JSON object has no "fio version"')
        docs.append(doc)
        following = re.compile(r"^\{", re.MULTILINE).search(text, end)
        position = following.start() if following else None
    # --status-interval prints a full report every interval: the last one is the run's
    final = docs[-1]
    if not isinstance(final.get("jobs"), list):
        raise UnparsableOutput('fio JSON output without its "jobs" list')
    claims = []
    for j, job in enumerate(final["jobs"]):
        name = job.get("jobname")
        stats = {d: job.get(d) or {} for d in DIRECTIONS}
        total = {"bytes_per_s": sum(_bytes_per_s(s) for s in stats.values()),
                 "ops_per_s": sum(float(s.get("iops", 0)) for s in stats.values())}
        for ddir, s in stats.items():
            if not s.get("io_bytes"):
                continue
            if "bw" not in s or "iops" not in s:
                raise UnparsableOutput(f'fio JSON job "{name}" {ddir} has no "bw" or "iops"')
            lat, clat = _mean_seconds(s, "lat"), _mean_seconds(s, "clat")
            claims.append(Claim(
                source="fio", test=f"{name} {ddir}", value=float(s["bw"]), unit="KiB/s",
                printed=(f'jobs[{j}] "{name}" {ddir}: bw={s["bw"]} KiB/s, '
                         f'bw_bytes={s.get("bw_bytes")}, iops={s["iops"]}'),
                bytes_per_s=_bytes_per_s(s), ops_per_s=float(s["iops"]),
                seconds_per_op=lat if lat is not None else clat,
                direction=ddir if ddir != "trim" else None, job=name, index=len(claims),
                extra={"from": "json", "fio_version": final["fio version"], "job_index": j,
                       "groupid": job.get("groupid"), "error": job.get("error", 0),
                       "io_bytes": int(s["io_bytes"]), "runtime_ms": s.get("runtime"),
                       "lat_mean_s": lat, "clat_mean_s": clat, "total": total,
                       "interim_reports": len(docs) - 1}))
    if not claims:
        raise UnparsableOutput("fio JSON output has no job that moved any data")
    return claims


def _bytes_per_s(stats: dict) -> float:
    if "bw_bytes" in stats:
        return float(stats["bw_bytes"])
    return float(stats.get("bw", 0)) * RATES["KiB/s"]  # fio before 3.0 printed only bw


def _mean_seconds(stats: dict, kind: str) -> float | None:
    """Mean latency in seconds: fio 3 writes "<kind>_ns", fio 2 "<kind>" in microseconds."""
    if isinstance(stats.get(f"{kind}_ns"), dict) and stats[f"{kind}_ns"].get("N", 1):
        return float(stats[f"{kind}_ns"]["mean"]) * TIMES["nsec"]
    if isinstance(stats.get(kind), dict) and stats[kind].get("N", 1):
        return float(stats[kind]["mean"]) * TIMES["usec"]
    return None


def _from_text(text: str) -> list[Claim]:
    claims: list[Claim] = []
    job = group = None
    for line in text.split("\n")[:-1]:  # a last line without its newline may be cut
        m = _JOB.match(line)
        if m:
            job, group = m.group("job"), int(m.group("group"))
            continue
        m = _DDIR.match(line)
        if m and job is not None:
            for unit in (m.group("unit"), m.group("unit2")):
                if unit not in RATES:
                    raise UnparsableOutput(f"fio line {line.strip()!r}: unit {unit!r} is not one this parser knows")
            value = float(m.group("bw"))
            claims.append(Claim(
                source="fio", test=f"{job} {m.group('ddir')}", value=value, unit=m.group("unit"),
                printed=line.strip(), bytes_per_s=value * RATES[m.group("unit")],
                ops_per_s=float(m.group("iops")) * COUNT_PREFIXES[m.group("prefix")],
                direction=m.group("ddir") if m.group("ddir") != "trim" else None, job=job, index=len(claims),
                extra={"from": "text", "groupid": group,
                       "also_printed": f"{m.group('bw2')}{m.group('unit2')}",
                       "also_bytes_per_s": float(m.group("bw2")) * RATES[m.group("unit2")]}))
            continue
        m = _LAT.match(line)
        if m and claims and claims[-1].job == job and claims[-1].seconds_per_op is None:
            # the "lat" line under a direction: total latency per I/O
            average = float(m.group("avg")) * COUNT_PREFIXES[m.group("prefix")]
            claims[-1].seconds_per_op = average * TIMES[m.group("unit")]
    if not claims:
        raise UnparsableOutput("fio text output ends before any job's 'read: IOPS=..., BW=...' line")
    return claims
