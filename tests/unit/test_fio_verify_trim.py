"""fio options tried as an outsider, on their real outputs (tests/data/claims/fio/): --verify's pass
is timed from its file's open (and cache invalidation) to its last read (judge/open_window.py), and
rw=trimwrite's trims are discards the trace has no call for (fio.TRIMS). Traces built call by call
in the shape the real runs had, whose times are known."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from iowitness.analysis.benchmarks import fio
from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.judge.claim import UnparsableOutput
from iowitness.analysis.measure import stream_full
from tests.support.synthetic import O_CREAT, O_DIRECT, O_RDWR, O_WRONLY, Calls

DATA = Path(__file__).resolve().parents[1] / "data" / "claims" / "fio"
KiB = 1024


def _judged(calls: Calls, argv: list[str], output: str):
    trace = SimpleNamespace(events=calls.frame(), meta={"command": argv, "pid": None})
    return matching.match(stream_full.build(trace), fio.parse(output), "fio", argv, trace=trace)


def test_a_verify_pass_is_timed_from_its_open_to_its_last_read():
    # GIVEN fio --rw=randwrite --verify=crc32c's shape: 2,048 writes of 4 KiB in 20.8 ms, a close;
    # then its verify pass: the file opened again, 1.6 ms of cache invalidation (posix_fadvise on
    # the 8 MiB just written), 2,048 reads in 11.5 ms, then 12 ms writing its verify state, the close
    argv = ["fio", "--name=v", "--rw=randwrite", "--bs=4k", "--size=8m", "--verify=crc32c", "--filename=/d/v.dat"]
    calls = Calls().open("/d/v.dat", O_RDWR | O_CREAT)
    for k in range(2048):
        calls.pwrite(4 * KiB, (k * 769 % 2048) * 4 * KiB, latency=10_000)
    calls.close().gap(10_000).open("/d/v.dat", O_RDWR).gap(1_640_000)
    for k in range(2048):
        calls.pread(4 * KiB, k * 4 * KiB, latency=5_600)
    calls.gap(12_000_000).close()
    # WHEN its real output (read: 8192KiB/14msec) is judged
    verdicts = {v.claim.test: v for v in _judged(calls, argv, (DATA / "verify_crc32c.txt").read_text())}
    # THEN the verify's read rate is explained by its open to its last read (13.1 ms, fio's 14 ms
    # rounded up), not by the calls' 11.5 ms (DISAGREES, 0.82x) nor the open to the close
    read = verdicts["v read"]
    assert read.verdict == "explained", read.reasons
    assert read.reasons[0].startswith("the benchmark's clock ran from its open of the file to its last data call")
    assert "to its clock's tick" in read.reasons[0]
    assert verdicts["v write"].verdict != "disagrees", verdicts["v write"].reasons


def test_trims_are_discards_the_trace_has_no_call_for():
    # GIVEN fio --rw=trimwrite on a loop device: each 64 KiB block discarded (an ioctl the probe
    # does not record) and then written with O_DIRECT: 256 writes in 8 ms
    argv = ["fio", "--name=tw", "--rw=trimwrite", "--bs=64k", "--size=16m", "--filename=/dev/loop1", "--direct=1"]
    calls = Calls().open("/dev/loop1", O_WRONLY | O_DIRECT)
    for k in range(256):
        calls.pwrite(64 * KiB, k * 64 * KiB, latency=12_000).gap(19_000)
    calls.close()
    # WHEN its real output is judged
    verdicts = _judged(calls, argv, (DATA / "trimwrite.txt").read_text())
    # THEN the trim rate and latency cannot be judged, and say why (not "no phase of the trace
    # matches this claim"); the write figures are about the write phase
    trims = [v for v in verdicts if v.claim.direction is None]
    assert [v.claim.test for v in trims] == ["tw trim", "tw trim latency"]
    for v in trims:
        assert v.verdict == "cannot judge" and v.reasons[0] == fio.TRIMS and not v.phases, v.reasons
    writes = [v for v in verdicts if v.claim.direction == "write"]
    assert len(writes) == 2 and all(v.phases == [1] for v in writes), [(v.claim.test, v.phases) for v in writes]


def test_a_job_fio_says_failed_is_named_with_its_error():
    # GIVEN fio's output for trimwrite on a regular file: the job failed (err=25) before any I/O
    text = (DATA / "trim_on_file.txt").read_text()
    # WHEN it is read
    with pytest.raises(UnparsableOutput) as failed:
        fio.parse(text)
    # THEN the one line names the job and fio's error (it said the output "ends before any
    # job's 'read: IOPS=...' line", as if cut)
    assert str(failed.value).startswith("fio's job 'tw' (err=25: Inappropriate ioctl for device) failed before "
                                        "moving any data"), str(failed.value)
