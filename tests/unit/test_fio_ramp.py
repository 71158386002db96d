"""fio's ramp_time (analysis/benchmarks/fio_ramp.py): the requests of a job's ramp run but fio
counts only those after it. Parsed from fio's JSON and text output; judged on a trace built call
by call whose times are known."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd

from iowitness.analysis.benchmarks import fio, fio_ramp
from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.measure import stream_full
from tests.support.synthetic import O_RDONLY, Calls


def test_ramp_time_values_read_as_fio_reads_them():
    assert fio_ramp.seconds("1") == 1.0 and fio_ramp.seconds("500ms") == 0.5 and fio_ramp.seconds("2m") == 120.0
    assert fio_ramp.seconds("250us") == 0.00025 and fio_ramp.seconds(None) == 0.0
    # what fio itself would refuse is no ramp here, never a crash
    assert fio_ramp.seconds("soon") == 0.0 and fio_ramp.seconds("1.2.3") == 0.0 and fio_ramp.seconds("5 parsecs") == 0.0


def _json(ramp: str | None, total_ios: int = 2000) -> str:
    options = {"name": "r", "rw": "randread", **({"ramp_time": ramp} if ramp else {})}
    read = {"io_bytes": total_ios * 4096, "bw": 8000, "bw_bytes": 8_192_000, "iops": 2000.0, "runtime": 1000,
            "total_ios": total_ios, "clat_ns": {"N": total_ios, "mean": 50_000.0, "min": 50_000, "max": 50_000}}
    return json.dumps({"fio version": "fio-3.33", "jobs": [{"jobname": "r", "groupid": 0, "error": 0,
                                                            "job options": options, "read": read, "write": {}}]})


def test_json_and_text_say_the_ramp_and_what_fio_counted():
    [rate, _latency] = fio.parse(_json("500ms"))
    assert rate.extra["ramp_s"] == 0.5 and rate.extra["counted_calls"] == 2000
    assert fio.parse(_json(None))[0].extra["ramp_s"] == 0.0
    text = ("r: (groupid=0, jobs=1): err= 0: pid=1: Sat Nov 28 04:00:00 2026\n"
            "  read: IOPS=2000, BW=8000KiB/s (8192kB/s)(7992KiB/999msec)\n"
            "     issued rwts: total=1998,0,0,0 short=0,0,0,0 dropped=0,0,0,0\n")
    [rate] = [c for c in fio.parse(text) if c.bytes_per_s]
    assert rate.extra["counted_calls"] == 1998


def _trace():
    """A ramp of 3,000 fast reads (1 µs each, 1 µs apart: a warm cache), then 2,000 reads of
    50 µs, 450 µs apart: fio's counted second."""
    calls = Calls().open("/d/r.0.0", O_RDONLY)
    for _ in range(3000):
        calls.read(4096, latency=1_000).gap(1_000)
    for _ in range(2000):
        calls.read(4096, latency=50_000).gap(450_000)
    events = calls.close().frame()
    trace = SimpleNamespace(events=events, meta={"command": ["fio", "--name=r", "--rw=randread"], "pid": None})
    return stream_full.build(trace), trace


def test_the_claim_is_judged_on_the_requests_after_the_ramp_only():
    rep, trace = _trace()
    counted_s = (2000 * 500_000 - 450_000) / 1e9
    doc = json.loads(_json("3"))
    doc["jobs"][0]["read"].update(bw_bytes=2000 * 4096 / counted_s, bw=2000 * 4 / counted_s, iops=2000 / counted_s)
    claims = fio.parse(json.dumps(doc))
    verdicts = matching.match(rep, claims, "fio", trace.meta["command"], trace=trace)
    rate, latency = verdicts
    assert rate.verdict == "agrees", rate.reasons
    assert any("the first 3,000 calls ran before fio started counting" in r for r in rate.reasons), rate.reasons
    assert latency.verdict == "agrees", latency.reasons
    assert "fio counted 2,000 requests, the trace 2,000" in latency.reasons[0]
    # WITHOUT the ramp in its options, the same figure is judged over every call and disagrees
    doc["jobs"][0]["job options"].pop("ramp_time")
    plain = matching.match(rep, fio.parse(json.dumps(doc)), "fio", trace.meta["command"], trace=trace)
    assert plain[0].verdict != "agrees" and plain[1].verdict != "agrees"


def test_no_count_or_no_surplus_leaves_nothing_out():
    rows = pd.DataFrame({"ops": [2000]})
    claim = SimpleNamespace(extra={"counted_calls": 2000})
    assert fio_ramp.left_out(claim, rows, 1.0) == 0
    assert fio_ramp.left_out(SimpleNamespace(extra={}), rows, 1.0) == 0
    assert fio_ramp.left_out(SimpleNamespace(extra={"counted_calls": 500}), rows, 0.0) == 0
    assert fio_ramp.left_out(SimpleNamespace(extra={"counted_calls": 500}), rows, 1.0) == 1500
