"""fio's latency figures (its JSON's clat_ns, lat_ns, slat_ns per job or group and direction),
as one claim each, judged in one verdict against the requests the trace saw.

What fio times, and what the trace can see of it (fio HOWTO, "Interpreting the output"):

  slat  submission latency: the time fio spent submitting the request. For a synchronous
        engine (psync, sync, pvsync...) fio measures none (N = 0): it is no syscall figure, and
        nothing is judged. For io_uring and libaio it is the io_uring_enter/io_submit step,
        which the trace does not time apart from the request.
  clat  completion latency: for a synchronous engine the whole read/write call, exactly what
        the trace times per call; for an asynchronous one from the end of submission until
        fio reaped the completion.
  lat   slat + clat: from before the submission until fio reaped the completion.

The trace times a request from the kernel's submission (inside the submitting call) to the
kernel's completion. So for a synchronous engine each clat statistic is judged against the
same statistic of the calls (above it but within the time from the call before to the call after:
fio's clock took in time outside the call, explained); for an asynchronous one the trace's figure
agrees when it lies between fio's clat figure and its lat figure, is explained when fio's
are above it (fio reaps a completion after the kernel makes it, a wait the trace cannot see),
and disagrees when fio's are below it (for a percentile, which fio gives for clat only unless
lat_percentiles=1, the upper end is the clat percentile plus slat's maximum: a percentile of a
sum is at most that), each bound widened by the statistic's band (analysis/judge/latency.py:
tolerance, rank interval for percentiles, ALLOWANCE_S).

Example: for `fio --name=j --rw=randread --ioengine=psync --output-format=json`, claims(job,
"read", ...) gives one Claim(test="j read latency", unit="ns", value=<clat mean>, extra={"fio_latency":
{"clat": {"mean": ..., "p99": ...}, ...}}) and judge() one verdict: "clat: 22 of 22 statistics
within their band ...".
"""

from __future__ import annotations

import re

from iowitness.analysis.benchmarks import fio_ramp
from iowitness.analysis.judge import latency
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.judge.verdict_rules import MAPPED_LATENCY, Verdict, cannot_judge, mapped, missing_reason
from iowitness.analysis.measure.figures import fmt

# fio's normal text output: a job's header, a direction's line, its clat/lat lines (values may
# carry a k or M: "max=5007.4k"), its clat percentiles ("|  1.00th=[  924], ..."), and the
# number of requests issued per direction ("issued rwts: total=0,2048,0,0")
_JOB = re.compile(r"^(?P<job>\S.*?): \(groupid=\d+, jobs=\d+\): err=")
_DDIR = re.compile(r"^\s+(?P<ddir>read|write|trim)\s*: IOPS=")
_STATS = re.compile(r"^\s+(?P<kind>clat|slat|lat) \((?P<unit>nsec|usec|msec|sec)\): min=\s*(?P<min>[\d.]+[kM]?), "
                    r"max=\s*(?P<max>[\d.]+[kM]?), avg=\s*(?P<mean>[\d.]+[kM]?), stdev=\s*(?P<stddev>[\d.]+[kM]?)")
_PERCENTILES = re.compile(r"^\s+clat percentiles \((?P<unit>nsec|usec|msec|sec)\):")
_PERCENTILE = re.compile(r"(?P<p>[\d.]+)th=\[\s*(?P<value>[\d.]+[kM]?)\]")
_HEADER = re.compile(r"^(?P<job>\S.*?): \(g=\d+\): .*\bioengine=(?P<engine>[^,\s]+)")
ISSUED = re.compile(r"^\s+issued rwts: total=(?P<r>\d+),(?P<w>\d+),(?P<t>\d+)")
TEXT_UNITS = {"nsec": 1e-9, "usec": 1e-6, "msec": 1e-3, "sec": 1.0}
SUFFIXES = {"": 1, "k": 1e3, "M": 1e6}
# fio's engines that make one blocking call per request (HOWTO, "ioengine")
SYNCHRONOUS = ("psync", "sync", "pvsync", "pvsync2", "vsync")
KINDS = ("clat", "lat", "slat")


def _stats(block: dict) -> dict[str, float] | None:
    """A clat_ns/lat_ns/slat_ns block in seconds: mean, stddev, min, max, and pNN."""
    if not isinstance(block, dict) or not block.get("N"):
        return None
    out = {name: float(block[name]) * 1e-9 for name in ("mean", "stddev", "min", "max") if name in block}
    for key, value in (block.get("percentile") or {}).items():
        try:
            p = float(key)
        except ValueError:
            continue
        out[f"p{p:g}"] = float(value) * 1e-9
    out["N"] = float(block["N"])
    return out


def claim(name: str, ddir: str, stats: dict, job_index: int, index: int, extra: dict) -> Claim | None:
    """One claim for a job's (or group's) latency in one direction, or None when fio gave none."""
    blocks = {kind: _stats(stats.get(f"{kind}_ns")) for kind in KINDS}
    if blocks["clat"] is None:
        return None
    mean = blocks["clat"]["mean"]
    return Claim(source="fio", test=f"{name} {ddir} latency", value=mean * 1e9, unit="ns",
                 printed=f'jobs[{job_index}] "{name}" {ddir}: clat_ns mean={mean * 1e9:.1f}, '
                         + (f'N={int(blocks["clat"]["N"])}' if blocks["clat"]["N"] == blocks["clat"]["N"]
                            else "N not printed"), seconds_per_op=mean,
                 direction=ddir if ddir != "trim" else None, job=name, index=index,
                 extra={**extra, "fio_latency": {k: v for k, v in blocks.items() if v is not None}})


def _number(text: str) -> float:
    return float(text.rstrip("kM")) * SUFFIXES[text[-1] if text[-1] in "kM" else ""]


def text_claims(text: str, rates: list[Claim]) -> list[Claim]:
    """Latency claims from fio's normal text output, one per job entry and direction that has a
    rate claim (`rates`, in the same order), after them. Its figures are rounded to the unit
    printed (whole µs for "clat percentiles (usec)"): half that unit widens every band."""
    found: list[tuple[str, str, dict, float]] = []
    job = ddir = None
    blocks: dict = {}
    resolution = 0.0
    in_percentiles = None
    engines: dict[str, str] = {}
    for line in text.split("\n"):
        m = _HEADER.match(line)
        if m:
            engines.setdefault(m.group("job"), m.group("engine"))
            continue
        m = _JOB.match(line)
        if m:
            job, ddir = m.group("job"), None
            continue
        m = _DDIR.match(line)
        if m and job is not None:
            ddir, blocks, in_percentiles = m.group("ddir"), {}, None
            found.append((job, ddir, blocks, 0.0))
            continue
        if ddir is None:
            continue
        m = _STATS.match(line)
        if m:
            unit = TEXT_UNITS[m.group("unit")]
            blocks[m.group("kind")] = {k: _number(m.group(k)) * unit for k in ("min", "max", "mean", "stddev")}
            continue
        m = _PERCENTILES.match(line)
        if m:
            in_percentiles = TEXT_UNITS[m.group("unit")]
            # percentiles are printed as whole units: up to half a unit off
            resolution = max(resolution, in_percentiles / 2)
            found[-1] = (found[-1][0], found[-1][1], blocks, in_percentiles / 2)
            continue
        if in_percentiles and line.lstrip().startswith("|") and "clat" in blocks:
            for p, value in _PERCENTILE.findall(line):
                blocks["clat"][f"p{float(p):g}"] = _number(value) * in_percentiles
            continue
        in_percentiles = None
        m = ISSUED.match(line)
        if m:
            # every direction of this job entry: its count of requests
            for entry in found:
                if entry[0] == job and "clat" in entry[2] and "N" not in entry[2]["clat"]:
                    entry[2]["clat"]["N"] = float(m.group({"read": "r", "write": "w", "trim": "t"}[entry[1]]))
    out = []
    for rate, (job, ddir, blocks, half_unit) in zip(rates, found):
        if "clat" not in blocks or (rate.job, rate.test) != (job, f"{job} {ddir}"):
            continue
        blocks["clat"].setdefault("N", float("nan"))
        mean = blocks["clat"]["mean"]
        extra = {"from": "text", "groupid": rate.extra.get("groupid"), "resolution_s": half_unit,
                 "ioengine": engines.get(job, "psync")}
        out.append(Claim(source="fio", test=f"{job} {ddir} latency", value=mean * 1e9, unit="ns",
                         printed=f'"{job}" {ddir}: clat mean={mean * 1e9:.1f} ns', seconds_per_op=mean,
                         direction=ddir if ddir != "trim" else None, job=job, index=len(rates) + len(out),
                         extra={**extra, "fio_latency": blocks}))
    return out


def _faults_counted(claim: Claim, rows) -> str:
    """fio's count of requests beside the trace's faults: equal when each request faulted once
    (a random read of pages not cached, fio's madvise(MADV_RANDOM)), and still untimed."""
    requests = claim.extra["fio_latency"]["clat"].get("N", float("nan"))
    if requests != requests:
        return ""
    return f" (fio counted {int(requests):,} requests, the trace {int(rows['faults'].sum()):,} faults)"


def judge(claim: Claim, rows, trace, report, tolerance: float, missing: str = "") -> Verdict:
    blocks = claim.extra["fio_latency"]
    engine = str(claim.extra.get("ioengine", "psync"))
    synchronous = engine in SYNCHRONOUS
    verdict = Verdict(claim, [int(p) for p in rows["phase"]], "agrees", window="mean of each request",
                      kind="latency")
    if rows.empty:
        return cannot_judge(verdict, "no phase of the trace matches this job's latency")
    if missing:
        verdict.reasons.append(missing_reason(missing))
    # the requests' latencies held as OperationValues: in memory up to a budget, in a file past it
    values = report.evidence.operation_values(verdict.phases, "call", claim.direction)
    if not len(values):
        return cannot_judge(verdict, "the job's phases have no request the trace timed"
                            + (f": they are page faults, {MAPPED_LATENCY}{_faults_counted(claim, rows)}"
                               if mapped(rows) else ""))
    clat, lat, slat = blocks["clat"], blocks.get("lat", {}), blocks.get("slat")
    ramp_s, skipped = float(claim.extra.get("ramp_s") or 0.0), 0
    if ramp_s > 0 and clat["N"] == clat["N"] and int(clat["N"]) < len(values):
        # fio's statistics are over the requests after its ramp: the last N (fio_ramp.py)
        skipped = len(values) - int(clat["N"])
        values = values.tail(skipped)
    statistics = [latency.statistic_name(n) or n for n in clat if n != "N"]
    values.fetch(latency.ranks_read(len(values), statistics))   # once, for every statistic's band
    verdict.figures = {"mean of each request": latency.figure(values, "mean")}
    verdict.counts = {"requests": len(values), "statistics": len([n for n in clat if n != "N"])}
    verdict.ratio = clat["mean"] / verdict.figures["mean of each request"]
    off, unexplained = [], []
    names = [n for n in clat if n != "N"]
    # the most fio's clock around one call can take in (fio preempted between its clock read and
    # the call, on a busy machine): from its thread's previous call's end to its next one's start,
    # since fio reads its clock after the one and before the other. A thread's first and last
    # calls have no such edge on one side: there, from the call's own start, or to its own end
    # ("around"), which leaves out a preemption before the first call or after the last (never
    # the call's own latency alone: fio's clock around the last call takes in fio's time before
    # it too). Asked for only when a statistic is above the calls' band: a streamed report reads
    # the trace once more for them
    gaps = []

    def gaps_band(statistic):
        if not gaps:
            gaps.append(report.evidence.operation_values(verdict.phases, "around", claim.direction).tail(skipped))
            gaps[0].fetch(latency.ranks_read(len(gaps[0]), statistics))
        return latency.band(gaps[0], statistic, tolerance)[1]
    for name in names:
        statistic = latency.statistic_name(name) or name
        lo, hi, _ = latency.band(values, statistic, tolerance)
        # fio's text output rounds its figures to the unit it prints
        lo, hi = lo - claim.extra.get("resolution_s", 0.0), hi + claim.extra.get("resolution_s", 0.0)
        low = clat[name]
        # a percentile of slat + clat is at most clat's percentile plus slat's largest value
        high = low if synchronous else lat.get(name, low + (slat or {}).get("max", 0.0))
        low, high = min(low, high), max(low, high)
        if high < lo or low > hi:
            off.append(f"{name} {fmt(low, 'latency')}" + ("" if high == low else f"..{fmt(high, 'latency')}")
                       + f" vs trace {fmt(latency.figure(values, statistic), 'latency')}")
            # above the kernel's figure: for a synchronous engine, within what the gaps between
            # calls allow (fio's clock took in time outside the call); for an asynchronous one,
            # the wait until fio reaped the completion, which the trace cannot see. Below it,
            # nothing accounts for it: fio cannot have seen a request end before the kernel did
            above = low > hi and (not synchronous or low <= gaps_band(statistic))
            if not above:
                unexplained.append(name)
    counted = (f"fio counted {int(clat['N']):,} requests, the trace {len(values):,}" if clat["N"] == clat["N"]
               else f"the trace counted {len(values):,} requests")
    what = ("clat is the whole call (a synchronous engine: fio measures no submission latency, slat N=0, "
            "which is no syscall figure)" if synchronous else
            f"{engine}: the trace times each request from the kernel's submission to its completion, between "
            f"fio's clat (from the end of submission to fio's reaping) and its lat (from before the submission)"
            + ("; slat, fio's submission step, is not timed apart by the trace" if slat else ""))
    summary = (f"clat: {len(names) - len(off)} of {len(names)} statistics within their band ("
               + ", ".join(names) + f"); {what}; {counted}")
    if off and not unexplained:
        verdict.verdict = "explained"
        verdict.reasons.insert(0, f"fio's clock took in time outside the calls: {', '.join(off)}, each within what "
                                  "the time from the previous call's end to the next one's start allows (fio "
                                  "preempted, or at its own work, between its clock read and the call)"
                                  if synchronous else
                                  f"fio reaped completions after the kernel made them: {', '.join(off)}, each above "
                                  f"the kernel's figure; fio counts a request done when it reaps it ({engine}'s "
                                  "completion queue), the kernel when it completes it, and the wait between them "
                                  "is not in the trace")
    elif off:
        verdict.verdict = "disagrees"
    if off:
        summary += "; outside: " + "; ".join(off)
    verdict.reasons.insert(0 if verdict.verdict != "explained" else 1, summary)
    if skipped:
        verdict.reasons.append(fio_ramp.reason(ramp_s, skipped, len(values)))
    if clat["N"] == clat["N"] and int(clat["N"]) != len(values):
        verdict.reasons.append(f"the counts differ ({counted}): the statistics are over different requests")
    return verdict

