"""fio's ramp_time: the requests of a job's first seconds run but are not counted.

With `ramp_time=T` fio runs a job for T seconds, then resets its statistics and starts its
clock again (HOWTO, "ramp_time": "run the specified workload for this amount of time before
logging any performance numbers"): its bandwidth, IOPS and latencies are over the requests
after the ramp only. The trace sees every request; those fio counted are the job's last N, N
being its own count (JSON `total_ios`, text `issued rwts: total=`). So the claim's window
starts at the (calls - N)-th data call of its phases, and its latencies are those of the last
N requests.

Example: `--ramp_time=1 --runtime=2 --time_based` randread: the trace saw 59,470 reads, fio
counted 24,225: the first 35,245 are the ramp, left out.
"""

from __future__ import annotations

import re

import pandas as pd

# fio's time suffixes (parse.c, "time_based" values); a bare number is seconds for ramp_time
_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "ms": 1e-3, "msec": 1e-3, "us": 1e-6, "usec": 1e-6,
          "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def seconds(value) -> float:
    """A ramp_time option as seconds; 0.0 for none or one fio would not read either."""
    m = re.fullmatch(r"\s*([\d.]+)\s*([a-z]*)\s*", str(value or "").lower())
    if not m or m.group(2) not in _UNITS:
        return 0.0
    try:
        return float(m.group(1)) * _UNITS[m.group(2)]
    except ValueError:
        return 0.0


def ramp_of(claim, job_options: dict | None) -> float:
    """The claim's job's ramp_time in seconds: from fio's JSON job options (the claim's extra)
    or the job's options on the command line or in its job file."""
    said = claim.extra.get("ramp_s")
    if said:
        return float(said)
    return seconds((job_options or {}).get("ramp_time"))


def left_out(claim, rows: pd.DataFrame, ramp_s: float) -> int:
    """How many of the phases' first data calls are fio's ramp: the calls the trace saw less
    those fio counted; 0 without a ramp, or without fio's count."""
    counted = claim.extra.get("counted_calls")
    if ramp_s <= 0 or counted is None or not len(rows):
        return 0
    return max(int(rows["ops"].sum()) - int(counted), 0)


def reason(ramp_s: float, skipped: int, counted: int) -> str:
    return (f"fio's ramp_time of {ramp_s:g} s: the first {skipped:,} calls ran before fio started counting, "
            f"left out; fio counted the last {counted:,}")
