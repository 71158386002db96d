"""fio: its claims, one per job (or group) and direction that moved data; its job names for phases.

Recognised by its program, `fio` (or `fio-3.33`), and by its JSON "fio version" or a
"<job>: (groupid=N, jobs=N)" line. Reads `--output-format=json` and `json+` (the same numbers
plus latency bins), and, more simply, the per-job lines of the default "normal" text output.
Checked against fio 3.33 outputs in tests/data/claims/fio/.

For each job and each of read / write / trim with io_bytes > 0: Claim.test is
"<job> <direction>" (the names name_phases gives fio phases), value and unit are
fio's `bw` in KiB/s, bytes_per_s is `bw_bytes`, ops_per_s is `iops`, seconds_per_op is the
mean total latency (`lat_ns`, submission + completion). With --group_reporting fio prints
one entry per group, named after the group's first job. After all of them, one latency claim
per job and direction, "<job> <direction> latency" (fio_latency.py: clat/lat/slat statistics
and percentiles, judged against each request).

Example: `parse(open("fio.json").read())[0]` for `fio --output-format=json --name=writer
--rw=write ...` is Claim(test="writer write", value=682666, unit="KiB/s",
bytes_per_s=699050666, ops_per_s=170666.67, job="writer", direction="write", ...).
"""

from __future__ import annotations

import configparser
import json
import os
import re
from collections import Counter, defaultdict

import pandas as pd

from iowitness.analysis.benchmarks import fio_files, fio_latency, fio_ramp, fio_terse
from iowitness.analysis.judge.claim import Claim, Match, UnparsableOutput
from iowitness.analysis.judge.verdict_rules import Verdict, cannot_judge, claimed
from iowitness.analysis.measure import stream_evidence
from iowitness.analysis.read import recorded_paths

NAME = "fio"
PROGRAM = "fio"
SIGNATURE = re.compile(r'^\{\s*"fio version"|^\S.*: \(groupid=\d+, jobs=\d+\): err=', re.MULTILINE)

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
# fio's rw values and the directions each one moves data in (fio HOWTO, "rw")
FIO_DIRECTIONS = {
    "read": {"read"}, "randread": {"read"}, "write": {"write"}, "randwrite": {"write"},
    "rw": {"read", "write"}, "readwrite": {"read", "write"}, "randrw": {"read", "write"},
    "trim": set(), "randtrim": set(), "trimwrite": {"write"},
}

# a job's runtime is whole milliseconds, rounded up, and its bandwidth the bytes over it
# (backend.c, update_runtime): judge/clock_tick.py
CLOCK = {"clock_s": 1e-3, "clock_rounds": "up", "clock_said": "fio's runtime is whole milliseconds, rounded up"}

# what fio says of a failed job: "err=25 (file:ioengines.c:399, func=td_io_queue, error=...): pid="
_FAILED = re.compile(r"err=\s*-?\d+ \((?:.*?error=)?(.*?)\): pid=")
_JOB = re.compile(r"^(?P<job>\S.*?): \(groupid=(?P<group>\d+), jobs=(?P<jobs>\d+)\): err=\s*(?P<err>-?\d+)")
_DDIR = re.compile(r"^\s+(?P<ddir>read|write|trim)\s*: IOPS=(?P<iops>[\d.]+)(?P<prefix>[kMGT]?), "
                   r"BW=(?P<bw>[\d.]+)(?P<unit>\S+?) \((?P<bw2>[\d.]+)(?P<unit2>\S+?)\)")
_LAT = re.compile(r"^\s+lat \((?P<unit>nsec|usec|msec|sec)\): .*\bavg=\s*(?P<avg>[\d.]+)(?P<prefix>[kMGT]?),")


def parse(text: str) -> list[Claim]:
    """fio JSON (non-JSON lines before it, such as fio's notes, are skipped), normal text, or
    terse (fio_terse.py)."""
    starts = [m.start() for m in re.finditer(r"^\{", text, re.MULTILINE)]
    if starts:
        return _from_json(text, starts)
    if re.search(r"^\S.*: \(groupid=\d+, jobs=\d+\): err=", text, re.MULTILINE):
        return _from_text(text)
    if fio_terse.LINE.search(text):
        try:
            found = fio_terse.claims(text, CLOCK)
        except (ValueError, IndexError) as e:
            raise UnparsableOutput(f"fio terse output that cannot be read: {e}") from None
        if not found:
            raise UnparsableOutput("fio terse output has no job that moved any data")
        return found
    raise UnparsableOutput('not fio output: no JSON object with "fio version", no "<job>: (groupid=N, jobs=N)" line '
                           'and no terse line ("3;fio-3.33;job;0;0;...")')


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
                       "interim_reports": len(docs) - 1, **_queue(job, final), **CLOCK,
                       "counted_calls": s.get("total_ios"), "ramp_s": _ramp(job, final)}))
    if not claims:
        raise UnparsableOutput("fio JSON output has no job that moved any data")
    # then each job's latency per direction, one claim each (fio_latency.py), after every rate
    # so that the rates keep their places
    for claim in list(claims):
        s = final["jobs"][claim.extra["job_index"]].get(claim.test.rsplit(" ", 1)[1]) or {}
        keep = {k: claim.extra[k] for k in ("from", "fio_version", "job_index", "groupid", "ioengine", "iodepth",
                                             "ramp_s")}
        latency_claim = fio_latency.claim(claim.job, claim.test.rsplit(" ", 1)[1], s, claim.extra["job_index"],
                                          len(claims), keep)
        if latency_claim is not None:
            claims.append(latency_claim)
    return claims


def _queue(job: dict, final: dict) -> dict:
    """The job's ioengine and iodepth as asked (its options over the global ones; fio's
    defaults psync and 1), and fio's own iodepth_level: the share of its submissions made at
    each depth, in percent (HOWTO, "IO depths")."""
    options = {**(final.get("global options") or {}), **(job.get("job options") or {})}
    try:
        depth = int(str(options.get("iodepth", 1)).strip())
    except ValueError:
        depth = None
    levels = job.get("iodepth_level")
    return {"ioengine": str(options.get("ioengine", "psync")), "iodepth": depth,
            "iodepth_level": {str(k): float(v) for k, v in levels.items() if isinstance(v, (int, float))}
            if isinstance(levels, dict) else None}


def _ramp(job: dict, final: dict) -> float:
    """The job's ramp_time in seconds (its options over the global ones), 0.0 without one."""
    options = {**(final.get("global options") or {}), **(job.get("job options") or {})}
    return fio_ramp.seconds(options.get("ramp_time"))


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
    failed: list[str] = []   # jobs fio says failed, with its error, in its words
    for line in text.split("\n")[:-1]:  # a last line without its newline may be cut
        m = _JOB.match(line)
        if m:
            job, group = m.group("job"), int(m.group("group"))
            if m.group("err") != "0":
                why = _FAILED.search(line)
                failed.append(f"{job!r} (err={m.group('err')}{': ' + why.group(1) if why else ''})")
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
                extra={"from": "text", "groupid": group, **CLOCK,
                       "also_printed": f"{m.group('bw2')}{m.group('unit2')}",
                       "also_bytes_per_s": float(m.group("bw2")) * RATES[m.group("unit2")]}))
            continue
        m = fio_latency.ISSUED.match(line)
        if m:
            # the requests fio counted, per direction, of this job entry's rates
            for claim in claims:
                if claim.job == job and claim.direction in ("read", "write") and "counted_calls" not in claim.extra:
                    claim.extra["counted_calls"] = int(m.group(claim.direction[0]))
            continue
        m = _LAT.match(line)
        if m and claims and claims[-1].job == job and claims[-1].seconds_per_op is None:
            # the "lat" line under a direction: total latency per I/O
            average = float(m.group("avg")) * COUNT_PREFIXES[m.group("prefix")]
            claims[-1].seconds_per_op = average * TIMES[m.group("unit")]
    if not claims and failed:
        raise UnparsableOutput(f"fio's job {failed[0]} failed before moving any data: no figure to judge; "
                               "fix the job (fio's own message is in its output) and run it again")
    if not claims:
        raise UnparsableOutput("fio text output ends before any job's 'read: IOPS=..., BW=...' line")
    # then each entry's latency per direction (fio_latency.py), after every rate
    return claims + fio_latency.text_claims(text, claims)


# ---- the command line ----

def add_command(claims: list[Claim], argv: list[str]) -> None:
    if "--group_reporting" in argv:
        for claim in claims:
            claim.extra["group_reporting"] = True


def processes(argv: list[str]) -> int | None:
    return None  # a job's clones (numjobs=N) are told apart by their phases


def window(argv: list[str]) -> str | None:
    return None  # not modelled: its calls


def fio_jobs(argv: list[str], cwd: str | None = None) -> dict[str, dict]:
    """fio job names with their filename/directory, from --name options or job files."""
    jobs, current, shared = {}, None, {}
    for arg in argv[1:]:
        if arg.startswith("--name="):
            current = arg.split("=", 1)[1]
            jobs[current] = dict(shared)
        elif arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            (jobs[current] if current else shared)[key] = value
        elif not arg.startswith("-") and os.path.isabs(job_file := recorded_paths.resolve(arg, cwd)) \
                and os.path.isfile(job_file):   # relative with no recorded cwd: not the reader's file
            parser = configparser.ConfigParser(allow_no_value=True, strict=False)
            try:
                parser.read(job_file)
            except configparser.Error:
                continue
            for section in parser.sections():
                if section != "global":
                    jobs[section] = {**(dict(parser["global"]) if parser.has_section("global") else {}),
                                     **dict(parser[section])}
    return jobs


# ---- fio's own files: never phases ----

# options naming a file fio itself writes or reads, not a job's data (fio HOWTO: --output,
# the *_log options, which take a prefix for "<prefix>_bw.<N>.log" and the like)
_OWN_OPTIONS = ("output", "trigger-file")
_LOG_OPTIONS = ("write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log")
# a job with verify= saves where its verification got to (verify_state_save, on by default) as
# "<local or client>-<job>-<clone>-verify.state" (verify.c, verify_state_gen_name)
_VERIFY_STATE = re.compile(r".+-.+-\d+-verify\.state")


def own_files(argv: list[str], cwd: str | None = None):
    """A test on a path: is it one of fio's own files (a job file, its --output, a log) and
    not a job's data? Their reads and writes are in the trace (all files are traced) but in no
    phase: fio times none of them."""
    cwd = cwd or "/"
    exact, prefixes = set(), set()

    def full(path: str) -> str:
        return os.path.normpath(os.path.join(cwd, path))

    args = argv[1:]
    for i, arg in enumerate(args):
        key, eq, value = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if key in _OWN_OPTIONS and eq:
            exact.add(full(value))
        elif key in _LOG_OPTIONS and eq:
            prefixes.add(full(value))
        elif not arg.startswith("-"):
            exact.add(full(arg))   # a job file (or the value of "--output FILE")
    for job, options in fio_jobs(argv, cwd).items():
        for key in _LOG_OPTIONS:
            if key in options:   # without a value: the job's name is the prefix
                prefixes.add(full(options[key] or job))
    logs = tuple(prefixes)

    def is_own(path: str) -> bool:
        # a relative path: the collector could not resolve it (the process had exited); fio's
        # processes share its working directory
        path = full(path)
        return path in exact or bool(logs) and path.endswith(".log") and path.startswith(logs) \
            or bool(_VERIFY_STATE.fullmatch(os.path.basename(path)))

    return is_own


# ---- names for phases ----

def name_phases(phases: pd.DataFrame, argv: list[str], root_pid: int | None = None,
                cwd: str | None = None) -> list[str | None]:
    """'job direction' per phase. fio's own process lays out missing files before the jobs
    start: those phases are 'fio layout', not the job (fio counts them nowhere). cwd: the
    benchmark's working directory, where a relative job file is read from."""
    jobs = fio_jobs(argv, cwd)
    names = []
    owner = iter(fio_files.owners(phases, jobs, cwd, root_pid))   # by filename=, one per phase
    # the main thread of fio's first process (jobs run as other processes, or with --thread as other threads)
    for path, operation, tid in zip(phases["path"], phases["operation"], phases["tid"]):
        if root_pid is not None and int(tid) == int(root_pid):
            names.append("fio layout")
            next(owner)
            continue
        base = os.path.basename(str(path))
        job = None
        match = re.fullmatch(r"(.+)\.(\d+)\.(\d+)", base)
        if match and match.group(1) in jobs:
            job = match.group(1)
        else:
            job = next(owner)
        if job is None and len(jobs) == 1:
            job = next(iter(jobs))
        names.append(f"{job} {operation}" if job else None)
    return names


# ---- which phases a claim is about ----

def matcher(report, claims: list[Claim], argv: list[str], trace=None):
    """A job's phases in the claim's direction; fio prints one entry per clone of a job
    (numjobs=N), all under the job's name: the k-th entry is about the k-th clone."""
    phases = report.phases
    root = recorded_paths.command_pid(trace.meta) if trace is not None else None
    cwd = trace.meta.get("cwd") if trace is not None else None
    # a job's rates and its latencies are counted apart: the k-th of each is about clone k
    entries = Counter((c.job, c.direction, "fio_latency" in c.extra) for c in claims)
    seen: dict[tuple, int] = defaultdict(int)

    jobs = fio_jobs(argv, cwd)
    found: dict[int, Match] = {}
    asked: list[bool] = []

    def find(claim: Claim) -> Match:
        if id(claim) not in found:
            found[id(claim)] = _find(claim)
        return found[id(claim)]

    def judge_latency(claim: Claim, rows: pd.DataFrame, tolerance: float, missing: str):
        if not asked:   # the first latency judged asks every latency claim's requests: one pass
            asked.append(True)
            report.evidence.ask([stream_evidence.values_question([int(p) for p in find(c).rows["phase"]],
                                                                 "call", c.direction)
                                 for c in claims if "fio_latency" in c.extra])
        return fio_latency.judge(claim, rows, trace, report, tolerance, missing)

    def _find(claim: Claim) -> Match:
        if claim.direction is None:   # a trim: no call of the trace is one
            return Match(phases.iloc[0:0], judge=lambda window, tolerance, missing: _trim_verdict(claim))
        rows, combine = _rows(claim, phases, argv, root, cwd)
        entry = (claim.job, claim.direction, "fio_latency" in claim.extra)
        if entries[entry] > 1 and combine == "sum":
            k = seen[entry]
            seen[entry] += 1
            rows = _clone(rows, claim.job, k)
        claim.extra["ramp_s"] = fio_ramp.ramp_of(claim, jobs.get(claim.job or ""))
        if "fio_latency" in claim.extra and trace is not None:
            return Match(rows, judge=lambda window, tolerance, missing, rows=rows:
                         judge_latency(claim, rows, tolerance, missing))
        depth = depth_note(claim, rows)
        skipped = fio_ramp.left_out(claim, rows, claim.extra["ramp_s"])
        start = report.evidence.nth_call_start([int(p) for p in rows["phase"]], skipped, 0) if skipped else None
        return Match(rows, combine=combine, notes=[depth] if depth else [], start_ns=start,
                     start_why=fio_ramp.reason(claim.extra["ramp_s"], skipped, int(claim.extra["counted_calls"]))
                     if start is not None else "")

    return find


# fio's trims are discards (rw=trim, randtrim, trimwrite): on a block device an ioctl
# (BLKDISCARD), which the probe does not record; on a regular file fio refuses them (err=25)
TRIMS = ("fio's trims are discard requests (ioctl BLKDISCARD on a block device), not data calls: the trace "
         "records no call for them, so a trim figure has nothing in it to be set against")


def _trim_verdict(claim: Claim) -> Verdict:
    """A trim figure's verdict: it cannot be judged, and says why (TRIMS)."""
    return cannot_judge(Verdict(claim, [], "cannot judge", kind=claimed(claim)[1]), TRIMS)


def _clone(rows: pd.DataFrame, job: str, k: int) -> pd.DataFrame:
    """The phases of clone k of a job (numjobs=N; fio prints the clones in this order). Its own
    files are named "<job>.<k>.<file>" (fio's filesetup.c); clones sharing a file are told
    apart by the order of their first data call, which a busy machine can shuffle."""
    numbered = rows["path"].astype(str).map(lambda p: re.fullmatch(rf"{re.escape(job)}\.(\d+)\.\d+",
                                                                  os.path.basename(p)))
    if len(rows) and numbered.map(bool).all():
        return rows[numbered.map(lambda m: int(m.group(1))) == k]
    clones = list(dict.fromkeys(rows.sort_values("data_first_ns")["tid"]))
    return rows[rows["tid"] == clones[k]] if k < len(clones) else rows.iloc[0:0]


def depth_note(claim: Claim, rows: pd.DataFrame) -> str | None:
    """The queue depth fio asked for, what fio counted, and what the trace saw in the claim's
    phases; None when there is nothing to say (a synchronous job at depth 1, or no phase)."""
    asked = claim.extra.get("iodepth")
    if not len(rows) or not asked or "async_ops" not in rows:
        return None
    engine = claim.extra.get("ioengine", "psync")
    queued = rows[rows["async_ops"] > 0]
    if not len(queued):
        if asked <= 1:
            return None
        return (f"queue depth: iodepth={asked} was asked, but the trace saw no asynchronous request in these "
                f"phases, only plain calls (ioengine={engine} makes one call at a time, whatever iodepth says)")
    seen_max = int(queued["depth_max"].max())
    means = queued["depth_mean"].dropna()
    mean = f"{means.mean():.1f}" if len(means) == 1 else f"{means.min():.1f}-{means.max():.1f} (per phase)"
    words = [f"queue depth: iodepth={asked} asked ({engine}); the trace saw at most {seen_max} in flight, "
             f"{mean} on average"]
    levels = "; ".join(text for text in queued["depth_levels"] if text)
    if levels:
        words.append(f"at submission {levels}")
    fio_levels = claim.extra.get("iodepth_level") or {}
    fio_text = ", ".join(f"{k}={v:.1f}%" for k, v in fio_levels.items() if v >= 0.1)
    if fio_text:
        words.append(f"fio counted {fio_text} (iodepth_level: fio holds a request until it reaps its "
                     "completion, the trace until the kernel completes it)")
    if seen_max < asked / 2:
        words.append(f"the queue never got deeper than {seen_max} of the {asked} asked: requests completed "
                     "about as fast as they were submitted (as buffered I/O served from the page cache does, "
                     "completing at submission), so the figure is not one of a deep queue")
    return "; ".join(words)


def _rows(claim: Claim, phases: pd.DataFrame, argv: list[str], root, cwd=None) -> tuple[pd.DataFrame, str]:
    """A job's phases in the claim's direction; with --group_reporting, those of every job of
    the group that moves data in that direction, as one figure over the group's runtime."""
    names = phases["benchmark_name"].astype(object)
    jobs = fio_jobs(argv, cwd)
    members = [claim.job]
    grouped = bool(claim.extra.get("group_reporting") or "--group_reporting" in argv)
    if grouped:
        order = list(jobs)
        if claim.job in order:
            members = [claim.job]
            for job in order[order.index(claim.job) + 1:]:
                if "new_group" in jobs[job] or "stonewall" in jobs[job] or "wait_for_previous" in jobs[job]:
                    break
                members.append(job)
    wanted = set()
    for job in members:
        rw = jobs.get(job, {}).get("rw", jobs.get(job, {}).get("readwrite", "read"))
        moves = FIO_DIRECTIONS.get(rw.split(":")[0], {"read", "write"})
        if claim.direction in moves or job == claim.job and len(members) == 1:
            wanted |= {f"{job} {claim.direction}", f"{job} mixed"}
    rows = phases[names.isin(wanted)]
    # fio lays files out in its main process before the jobs start: not a job's I/O
    if root is not None and (rows["tgid"] != root).any():
        rows = rows[rows["tgid"] != root]
    # a group's figure is its bytes over the longest member's runtime (fio's stat.c), also when
    # the members are the clones of one job (numjobs=N): not the sum of the clones' own rates,
    # which differ from it as soon as one clone runs longer than another
    if grouped or len(members) > 1:
        return rows, "span"
    # one thread's phases (loops=N, one after the other; nrfiles=N, interleaved): the job's
    # bytes over its runtime, not the sum of each phase's own rate
    return rows, "wall" if len(rows) > 1 and rows["tid"].nunique() == 1 else "sum"
