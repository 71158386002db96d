"""ioping, a benchmark the project was not written for (Debian's ioping), read with
docs/specs/ioping.toml: its summary is about its reads, not the file it prepares first (match
"order" inside a window keeps to the claim's direction), its per-request lines are no window
edge for the summary, and the microseconds of its own clock around each call are named "gap in
user space", never a false DISAGREES. Ground truth: ioping's own request count and size (-c,
4 KiB), which the trace's read phase must hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from iowitness.analysis.judge import trace_verdicts as judged
from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel

SPEC = Path(__file__).resolve().parents[2] / "docs" / "specs" / "ioping.toml"
REQUESTS = 20


def test_ioping_summary_is_about_its_reads_and_no_figure_disagrees(tmp_path):
    ioping = require_tool("ioping")
    # GIVEN ioping making 20 cached 4 KiB read requests, 10 ms apart, after preparing its file
    out = tmp_path / "ioping.iwt"
    iowitness("run", "-q", "-o", str(out), "--", ioping, "-c", str(REQUESTS), "-i", "0.01", "-C", str(tmp_path))
    trace = load(out)
    phases = trace.phases()
    reads = phases[phases["operation"] == "read"]
    assert len(reads) == 1 and int(reads["ops"].iloc[0]) == REQUESTS, phases[["phase", "operation", "ops"]]
    assert (phases["operation"] == "write").any(), "ioping prepares its file first: a write phase"
    # WHEN its lines are judged with the shipped spec, written as a user would (no rank, no match)
    verdicts = judged.verdicts(trace, spec=str(SPEC))
    summary = [v for v in verdicts if not v.claim.extra.get("requests")]
    # THEN the summary's four figures are about the read phase, not the write phase before it,
    # over ioping's 19 counted requests (the warm-up skipped), in a window from the trace's start
    assert [v.claim.extra["statistic"] for v in summary] == ["min", "mean", "max", "mdev"]
    for v in summary:
        assert v.phases == [int(reads["phase"].iloc[0])], (v.claim.printed, v.phases)
        assert any("after the trace's start" in r for r in v.reasons), v.reasons
    assert [v.counts.get("operations") for v in summary if v.verdict != "cannot judge"] in (
        [REQUESTS - 1] * len([v for v in summary if v.verdict != "cannot judge"]),)
    # AND no figure disagrees: each fits, or is named as the seam around ioping's calls; the
    # per-request lines are one set of ioping's 19 counted requests (the "(fast)" ones too)
    lines = [v for v in verdicts if v.claim.extra.get("requests")]
    assert [v.claim.extra["requests"] for v in lines] == [REQUESTS - 1], [v.claim.printed for v in lines]
    for v in verdicts:
        assert v.verdict != "disagrees", (v.claim.printed, v.reasons)
        if v.verdict == "cannot judge":
            assert v.reasons[0].startswith("gap in user space"), (v.claim.printed, v.reasons)
    # AND check says the same: no DISAGREES line, and it exits 1 only for what it could not judge
    checked = iowitness("check", "--spec", str(SPEC), str(out), check=False)
    assert "DISAGREES" not in checked.stdout, checked.stdout
    assert checked.returncode == (0 if all(v.ok for v in verdicts) else 1), checked.stdout
    # AND without --spec, check finds the shipped spec by the recorded command, and says so
    found = iowitness("check", str(out), check=False)
    assert (found.stdout, found.returncode) == (checked.stdout, checked.returncode), found.stderr
    assert "read with the shipped spec ioping" in found.stderr, found.stderr


def test_ioping_direct_request_lines_agree_when_each_is_within_its_call(tmp_path):
    ioping = require_tool("ioping")
    # GIVEN ioping -D: 40 O_DIRECT reads (tens of µs each, ioping's clock a few µs around each),
    # its request 1 printed as "(warmup)", which the spec's pattern leaves out
    out = tmp_path / "ioping.iwt"
    iowitness("run", "-q", "-o", str(out), "--", ioping, "-D", "-c", "41", "-i", "0.005", str(tmp_path))
    trace = load(out)
    text = trace.output["stdout"]
    assert "request=1 " in text and "(warmup)" in text and "generated 41 requests" in text, text
    # WHEN judged with the shipped spec
    [lines] = [v for v in judged.verdicts(trace, spec=str(SPEC)) if v.claim.extra.get("requests")]
    # THEN requests 2-41 are each set against their own read (the trace has 41: the warm-up's is
    # the one no line names); when all 40 are within their read's band they agree (before: a
    # CANNOT JUDGE "gap in user space", the trace's 41 reads against 40 lines); one preempted
    # between ioping's clock read and its call may leave them to the seam, never a DISAGREES
    assert lines.claim.extra["requests"] == 40 and lines.counts["requests"] == 40, lines.reasons
    if lines.counts["within"] == 40:
        assert lines.verdict == "agrees", lines.reasons
        assert "numbered up to 41, 1 more are requests whose lines the spec leaves out" in lines.reasons[0]
    else:
        assert lines.verdict in ("agrees", "cannot judge") and lines.verdict != "disagrees", lines.reasons


def test_ioping_write_figures_are_about_its_requests_not_its_files_preparation(tmp_path):
    ioping = require_tool("ioping")
    # GIVEN ioping -W: it writes its 1 MiB working set (256 writes of 4 KiB, the man page's
    # default for a directory), then makes 20 write requests on the same file, each a 4 KiB
    # pwrite and its fdatasync (-C would suppress it): one write phase for both
    out = tmp_path / "ioping.iwt"
    iowitness("run", "-q", "-o", str(out), "--", ioping, "-W", "-c", str(REQUESTS), "-i", "0.01", str(tmp_path))
    trace = load(out)
    text = trace.output["stdout"]
    assert f"generated {REQUESTS} requests" in text and ">>>" in text, text
    phases = trace.phases()
    [writes] = phases[phases["operation"] == "write"].itertuples()
    assert writes.ops == 256 + REQUESTS, phases[["phase", "operation", "ops"]]
    # WHEN judged with the shipped spec, the same file as for reads
    verdicts = judged.verdicts(trace, spec=str(SPEC))
    # THEN the request lines are each held to their own write and fdatasync, and the summary
    # (it takes its request lines' direction: writes) is over ioping's 19 counted
    # requests, the preparation's 256 writes left out: no figure disagrees (before: every one
    # CANNOT JUDGE as reads; as writes, the lines 0 of 19 within, against the preparing writes)
    [lines] = [v for v in verdicts if v.claim.extra.get("requests")]
    assert lines.claim.direction == "write" and lines.counts["requests"] == REQUESTS - 1, lines.reasons
    summary = [v for v in verdicts if not v.claim.extra.get("requests")]
    assert [(v.claim.extra["statistic"], v.claim.direction) for v in summary] == [
        (s, "write") for s in ("min", "mean", "max", "mdev")]
    _none_disagrees_and_each_starts_after_the_preparation(verdicts)
    assert [v.counts["operations"] for v in summary if v.verdict != "cannot judge"] == \
        [REQUESTS - 1] * len([v for v in summary if v.verdict != "cannot judge"])


def test_ioping_quiet_summary_is_about_its_reads(tmp_path):
    ioping = require_tool("ioping")
    # GIVEN ioping -R (rapid: quiet, a 64 MiB working set written first), 20 requests: no
    # request line, only the summary
    out = tmp_path / "ioping.iwt"
    iowitness("run", "-q", "-o", str(out), "--", ioping, "-R", "-c", str(REQUESTS), str(tmp_path))
    trace = load(out)
    assert "request=" not in trace.output["stdout"] and "min/avg/max/mdev" in trace.output["stdout"]
    phases = trace.phases()
    [reads] = phases[phases["operation"] == "read"].itertuples()
    assert reads.ops == REQUESTS, phases[["phase", "operation", "ops"]]
    # WHEN judged with the shipped spec
    verdicts = judged.verdicts(trace, spec=str(SPEC))
    # THEN its four figures are about the read phase (its table's own direction, no request line
    # to take one from), over ioping's 19 counted requests: never the 16,384 preparing writes
    assert [v.phases for v in verdicts] == [[reads.phase]] * 4, [(v.claim.printed, v.phases) for v in verdicts]
    for v in verdicts:
        assert v.verdict != "disagrees", (v.claim.printed, v.reasons)


def test_ioping_quiet_write_summary_is_about_its_counted_requests(tmp_path):
    ioping = require_tool("ioping")
    # GIVEN ioping -W -q: its 1 MiB working set written, then 20 write requests (a pwrite and its
    # fdatasync each) in the same phase, and only a summary printed: no request line to say
    # where the requests begin, its "19 requests completed in ..., 76 KiB written" line alone
    # saying how many and that they are writes
    out = tmp_path / "ioping.iwt"
    iowitness("run", "-q", "-o", str(out), "--", ioping, "-W", "-q", "-c", str(REQUESTS), "-i", "0.01",
              str(tmp_path))
    trace = load(out)
    text = trace.output["stdout"]
    assert "request=" not in text and f"{REQUESTS - 1} requests completed" in text and "written" in text, text
    phases = trace.phases()
    [writes] = phases[phases["operation"] == "write"].itertuples()
    assert writes.ops == 256 + REQUESTS, phases[["phase", "operation", "ops"]]
    # WHEN judged with the shipped spec
    verdicts = judged.verdicts(trace, spec=str(SPEC))
    # THEN its four figures are about the write phase, over ioping's own 19 counted requests, the
    # 256 preparing writes and the warm-up left out: none disagrees (before: all four CANNOT
    # JUDGE, "no call operation to time after the 1 skipped", judged as reads)
    assert [(v.claim.extra["statistic"], v.claim.direction) for v in verdicts] == [
        (s, "write") for s in ("min", "mean", "max", "mdev")]
    _none_disagrees_and_each_starts_after_the_preparation(verdicts)
    for v in verdicts:
        if v.verdict != "cannot judge":
            assert v.counts["operations"] == REQUESTS - 1, v.counts


def _none_disagrees_and_each_starts_after_the_preparation(verdicts) -> None:
    """ioping -W: no figure disagrees, each says its requests start after the 256 preparing
    writes (call 257), and one that cannot be judged names the gap in user space."""
    for v in verdicts:
        assert v.verdict != "disagrees", (v.claim.printed, v.reasons)
        assert any(r.startswith("the benchmark's requests start at call 257 ") for r in v.reasons), v.reasons
        if v.verdict == "cannot judge":
            assert v.reasons[0].startswith("gap in user space"), (v.claim.printed, v.reasons)
