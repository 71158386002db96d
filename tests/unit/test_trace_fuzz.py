"""A damaged trace is never read as a good one: chunk heads under the CRC (format 3), sizes
bounded before allocation, every JSON value checked, nothing but regular files read; and a
few hundred seeded mutants of real-ish traces through show, report, check and export
(tests/support/trace_mutants.py, scripts/fuzz_traces.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from iowitness import cli
from iowitness.collector.format import codec, tracewriter
from iowitness.collector.format.traceformat import CHUNK, COUNTERS, EVENTS, START
from iowitness.collector.format.tracereader import read
from iowitness.collector.format.tracewriter import TraceWriter, chunk_head, file_header
from iowitness.errors import BadTrace
from iowitness.probes.layout import layout
from tests.support import trace_mutants
from tests.support.cli import IOWITNESS, iowitness

ROOT = Path(__file__).resolve().parents[2]
# the CI run: a fixed seed, so that a failure is found again; IOWITNESS_FUZZ_SEED tries others
SEED = int(os.environ.get("IOWITNESS_FUZZ_SEED", "19"))
MUTANTS = 300


# Forks the command from a small process and writes the command's peak RSS (KiB, from wait4)
# to the fd named in its first argument. Why not wait4 from pytest itself: a process's
# ru_maxrss keeps the peak of the process it was forked from, up to its exec, and pytest is
# hundreds of MiB by the end of the suite.
_LAUNCHER = ("import os, sys\n"
             "pid = os.fork()\n"
             "if pid == 0:\n"
             "    os.execv(sys.argv[2], sys.argv[2:])\n"
             "_, status, usage = os.wait4(pid, 0)\n"
             "os.write(int(sys.argv[1]), str(usage.ru_maxrss).encode())\n"
             "code = os.waitstatus_to_exitcode(status)\n"
             "sys.exit(code if code >= 0 else 128 - code)\n")


def run_measured(argv: list[str], timeout: float = 120) -> tuple[int, str, str, int]:
    """A subprocess's exit code, stdout, stderr and peak RSS in MiB: its own (_LAUNCHER)."""
    rss_read, rss_write = os.pipe()
    try:
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(rss_write), *argv], stdout=out,
                                    stderr=err, text=True, cwd=ROOT, pass_fds=(rss_write,))
            os.close(rss_write)
            rss_write = None
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                pytest.fail(f"{' '.join(argv)} ran over {timeout} s")
            out.seek(0)
            err.seek(0)
            peak_kib = int(os.read(rss_read, 64) or b"0")
            return code, out.read(), err.read(), peak_kib // 1024
    finally:
        os.close(rss_read)
        if rss_write is not None:
            os.close(rss_write)


def dd_trace(tmp_path) -> tuple[Path, bytes, list]:
    path = tmp_path / "dd.iwt"
    trace_mutants.write_dd_trace(path)
    data = path.read_bytes()
    return path, data, trace_mutants.chunks_of(data)


def test_a_few_hundred_mutants_give_no_traceback_no_hang_and_no_silent_loss(tmp_path):
    # GIVEN the fuzzer, run as a user would run it, on MUTANTS mutants of the two base traces
    argv = [sys.executable, str(ROOT / "scripts/fuzz_traces.py"), "--mutants", str(MUTANTS), "--seed", str(SEED),
            "--json", "--keep", str(tmp_path)]
    # WHEN it runs (show, report --json, check and export on each mutant)
    began = time.monotonic()
    # (a hang is caught per command, at trace_mutants.COMMAND_LIMIT_S; the whole run's bound only
    # ends a run that went wrong, and a busy machine takes several times the 35 s it takes idle)
    code, out, err, _ = run_measured(argv, timeout=900)
    summary = json.loads(out)
    # THEN no mutant gave a traceback, a hang, an undocumented exit code or a silent loss
    assert code == 0 and summary["problems"] == [], json.dumps(summary["problems"], indent=1)[:4000]
    # AND every class of outcome was seen: the mutants reach past the reader's first checks
    assert summary["outcomes"]["refused"] > 30 and summary["outcomes"]["damaged"] > 100, summary["outcomes"]
    # AND reading stayed bounded: a decompression bomb is refused, not expanded
    assert summary["max_rss_mib"] < 400, summary
    print(f"{MUTANTS} mutants, seed {SEED}: {summary['outcomes']}, {summary['seconds']} s, "
          f"max RSS {summary['max_rss_mib']} MiB, slowest {summary['slowest_s']} s "
          f"(wall {time.monotonic() - began:.1f} s)")


@pytest.mark.parametrize("field_offset, bit", [(0, 1), (8, 3)], ids=["kind", "length"])
def test_one_flipped_bit_in_a_chunk_head_ends_the_reading_where_it_is(tmp_path, field_offset, bit):
    # GIVEN a format 3 trace whose second EVENTS chunk has one bit flipped in its kind or length
    path, data, chunks = dd_trace(tmp_path)
    at = [c for c in chunks if c[1] == EVENTS][1][0]
    damaged = bytearray(data)
    damaged[at + field_offset] ^= 1 << bit
    path.write_bytes(bytes(damaged))
    # WHEN it is read
    trace = read(path)
    # THEN the reading stops at that chunk: it and all after it are reported, not dropped unseen
    assert trace.meta["complete"] is False
    assert trace.meta["truncated_bytes"] == len(data) - at
    assert "fails its CRC" in trace.meta["unread_reason"] or "runs past" in trace.meta["unread_reason"]
    assert trace.event_count < len(trace_mutants.dd_events())


def test_the_same_flip_in_a_format_2_trace_reads_on_but_show_says_its_heads_are_unchecked(tmp_path, capsys):
    # GIVEN the chunks of a trace framed as format 2 (CRC of the payload alone), and the kind
    # of its second EVENTS chunk changed to one no reader knows, the CRC left as it was
    _, data, chunks = dd_trace(tmp_path)
    parts = [(kind, data[at + CHUNK.size:at + CHUNK.size + length]) for at, kind, length in chunks]
    second = [k for k, (kind, _) in enumerate(parts) if kind == EVENTS][1]
    old = bytearray(file_header(2) + b"".join(chunk_head(kind, payload, 2) + payload for kind, payload in parts))
    at = len(file_header(2)) + sum(CHUNK.size + len(p) for _, p in parts[:second])
    old[at] ^= 1 << 4       # EVENTS (2) becomes 18
    path = tmp_path / "v2.iwt"
    path.write_bytes(bytes(old))
    # WHEN it is read and shown
    trace = read(path)
    assert cli.main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    # THEN format 2 cannot see the damage, but says so: the heads are unchecked, a kind was skipped
    assert trace.meta["chunk_heads_checked"] is False and trace.meta["format_version"] == 2
    assert trace.meta["unknown_chunks"] == {"18": 1}
    assert "format 2: chunk headers not checksummed" in shown
    assert "1 chunk of a kind this iowitness does not know (18) skipped" in shown


def test_a_format_3_trace_of_this_writer_reads_as_checked_and_whole(tmp_path, capsys):
    path, data, _ = dd_trace(tmp_path)
    trace = read(path)
    assert int.from_bytes(data[8:12], "little") == 3
    assert trace.meta["chunk_heads_checked"] is True and trace.meta["unknown_chunks"] == {}
    assert trace.meta["complete"] is True and trace.meta["unread_reason"] is None
    assert cli.main(["show", str(path)]) == 0
    assert "WARNING" not in capsys.readouterr().out


def test_a_record_chunk_cut_out_whole_reads_incomplete_by_the_counts_at_the_end(tmp_path, capsys):
    # GIVEN a trace with one EVENTS chunk taken out, the framing of the rest intact (no CRC sees it)
    path, data, chunks = dd_trace(tmp_path)
    whole = read(path)
    at, _, length = next(c for c in chunks if c[1] == EVENTS)
    cut = tmp_path / "cut.iwt"
    cut.write_bytes(data[:at] + data[at + CHUNK.size + length:])
    # WHEN it is read
    trace = read(cut)
    # THEN it holds fewer events than END counted, and says so: incomplete, in show's warnings
    assert trace.event_count < whole.event_count
    assert trace.meta["complete"] is False
    assert trace.meta["records_missing"] == (f"{whole.event_count:,} events counted, "
                                             f"{trace.event_count:,} held")
    assert cli.main(["show", str(cut)]) == 0
    shown = capsys.readouterr().out
    assert "records are missing though every chunk read well" in shown
    assert "INCOMPLETE (records counted at the end are missing" in shown


def test_a_probe_cost_with_one_of_its_two_window_figures_is_shown_as_not_sampled(tmp_path, capsys):
    # GIVEN a trace whose COUNTERS say calls were timed in windows but not for how long (a
    # crafted chunk under a good CRC: what scripts/fuzz_traces.py --seed 7 found, mutant 444)
    path, data, chunks = dd_trace(tmp_path)
    at, kind, length = [c for c in chunks if c[1] == COUNTERS][-1]
    counters = json.loads(data[at + CHUNK.size:at + CHUNK.size + length])
    counters["probe_cost"] = {"run_time_ns": 5000, "run_cnt": 10, "source": "sampled", "mode": "sampled",
                              "sampled_calls": 4, "sampled_s": None}
    odd = tmp_path / "odd.iwt"
    odd.write_bytes(trace_mutants._reframed(data, at, kind, json.dumps(counters).encode()))
    # WHEN show and report read it, THEN they print the observer line, no traceback
    assert cli.main(["show", str(odd)]) == 0 and cli.main(["report", str(odd)]) == 0
    assert "probe" in capsys.readouterr().out


def test_a_decompression_bomb_is_refused_before_it_is_expanded(tmp_path):
    # GIVEN an EVENTS block whose zstd frame (14 bytes) declares 8 GiB, and whose head claims
    # as many rows as a block may hold
    path, data, chunks = dd_trace(tmp_path)
    at, kind, length = [c for c in chunks if c[1] == EVENTS][0]
    itemsize = layout().event.itemsize
    head = codec.HEAD.pack((60 << 20) // itemsize, itemsize, len(codec._plan(layout().event).columns), codec.ZSTD, 0)
    bomb = head + trace_mutants._rle_frame(declared=8 << 30, blocks=4)
    path.write_bytes(data[:at] + chunk_head(kind, bomb) + bomb + data[at + CHUNK.size + length:])
    # WHEN show reads it, in its own process
    code, out, err, rss = run_measured([*IOWITNESS, "show", str(path)], timeout=60)
    # THEN it reads what came before, says the rest is damaged, and stays small
    assert code == 0, err
    assert "compressed frame declares 8,589,934,592 bytes" in out
    assert rss < 300


def test_records_that_would_decode_to_far_more_than_the_file_are_refused(tmp_path):
    # GIVEN blocks of 500,000 identical events each (36 MB decoded from a few hundred bytes)
    path = tmp_path / "zeros.iwt"
    writer = TraceWriter(path, {})
    for _ in range(3):
        writer.write_events(np.zeros(500_000, layout().event))
    writer.close({})
    # WHEN read
    trace = read(path)
    # THEN the first block fits the floor (64 MiB), the second does not: the reading ends there
    assert trace.event_count == 500_000 and trace.meta["complete"] is False
    assert "a decompression bomb?" in trace.meta["unread_reason"]


def test_the_writer_splits_batches_into_blocks_a_reader_accepts(tmp_path, monkeypatch):
    # GIVEN a block limit of 100 events, and a batch of 1,050
    monkeypatch.setattr(tracewriter, "MAX_BLOCK_BYTES", 100 * layout().event.itemsize)
    records = trace_mutants.dd_events()
    records = np.concatenate([records] * 6)[:1050]
    records["start_ns"] = np.arange(1050) * 10
    path = tmp_path / "split.iwt"
    writer = TraceWriter(path, {})
    writer.write_events(records)
    writer.close({})
    # WHEN read THEN the batch went out as 11 chunks and reads back whole
    kinds = [kind for _, kind, _ in trace_mutants.chunks_of(path.read_bytes())]
    assert kinds.count(EVENTS) == 11
    assert read(path).raw_events().tobytes() == records.tobytes()


@pytest.mark.parametrize("start, why", [
    ({"clock_start": {"monotonic_ns": "soon"}}, "START.clock_start.monotonic_ns is not a count or time"),
    ({"targets": [{"dev": 1, "ino": 2}]}, "START.targets[0] has no path"),
    ({"pid": 2**40}, "START.pid is not an integer from 0 to 2^32 - 1"),
    ({"device_view": {"devices": [{"device": "8:1", "dev": -1}]}}, "START.device_view.devices[0].dev"),
])
def test_a_start_chunk_with_an_odd_value_is_refused_in_one_line_naming_it(tmp_path, start, why):
    path = tmp_path / "odd.iwt"
    TraceWriter(path, start).close({})
    with pytest.raises(BadTrace, match="broken START chunk .*" + re.escape(why)):
        read(path)


@pytest.mark.parametrize("field, odd", [("op", "|O"), ("start_ns", "<f8"), ("path", "<U8")])
def test_a_record_description_with_another_type_is_refused(tmp_path, field, odd):
    # GIVEN a START whose layout gives a field a type the reader must not build (an object, a
    # float for a clock, unicode for a path), its CRC good
    path, data, chunks = dd_trace(tmp_path)
    at, kind, length = chunks[0]
    start = json.loads(data[at + CHUNK.size:at + CHUNK.size + length])
    record = start["layout"]["meta" if field == "path" else "event"]
    next(f for f in record["fields"] if f[0] == field)[1] = odd
    payload = json.dumps(start).encode()
    path.write_bytes(data[:at] + chunk_head(START, payload) + payload + data[at + CHUNK.size + length:])
    # WHEN read THEN BadTrace names the field
    with pytest.raises(BadTrace, match=f"field {field}"):
        read(path)


@pytest.mark.parametrize("end, why", [
    ({"exit_code": "0"}, "END.exit_code is not an integer"),
    ({"device_view": {"diskstats_fields": ["reads"]}}, "diskstats_fields has no writes"),
    ({"collector_cpu_s": {"user": float("nan"), "system": 0}}, "END.collector_cpu_s.user is not a finite number"),
])
def test_an_end_chunk_with_an_odd_value_ends_the_reading_and_the_trace_reads_incomplete(tmp_path, end, why):
    # GIVEN a trace whose END (the last chunk) holds a value the reports would trip on
    path = tmp_path / "odd-end.iwt"
    writer = TraceWriter(path, {"clock_start": {"monotonic_ns": 0}})
    writer.write_events(trace_mutants.dd_events())
    writer.close(end)
    # WHEN read
    trace = read(path)
    # THEN the events are kept, and the trace is INCOMPLETE, saying why and how much was left
    assert trace.event_count == len(trace_mutants.dd_events())
    assert trace.meta["complete"] is False and trace.meta["truncated_bytes"] > 0
    assert why in trace.meta["unread_reason"]


def test_check_says_on_stderr_that_the_trace_is_damaged(tmp_path, capsys):
    # GIVEN a dd trace cut inside its last chunk
    path, data, _ = dd_trace(tmp_path)
    path.write_bytes(data[:-10])
    # WHEN checked THEN the verdicts come, and stderr says the trace is incomplete and why
    assert cli.main(["check", str(path)]) in (0, 1)
    err = capsys.readouterr().err
    assert "iowitness: warning: the trace is INCOMPLETE" in err
    assert "runs past the end of the file" in err


@pytest.mark.parametrize("command", ["show", "report", "check", "export", "compare"])
def test_a_path_that_is_not_a_regular_file_is_refused_at_once_in_one_line(tmp_path, command):
    # GIVEN /dev/zero (no end), a FIFO (no writer: opening it would wait) and a directory
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    base, _, _ = dd_trace(tmp_path)
    for target, what in (("/dev/zero", "a character device"), (str(fifo), "a named pipe"),
                         (str(tmp_path), "a directory")):
        args = {"compare": [str(base), target], "export": [target, "--parquet", str(tmp_path / "x.parquet")]}
        # WHEN the command is given it (a command that read /dev/zero or waited on the FIFO would
        # never end: the timeout catches it; no bound on the wall time, which a busy machine stretches)
        proc = iowitness(command, *args.get(command, [target]), check=False, timeout=120, cwd=ROOT)
        if command == "compare" and what == "a directory":
            # compare reads a directory as a Parquet dataset (docs/compare-groups.md): one usage line
            assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
            assert f"{target} is a directory but not a Parquet dataset" in proc.stderr
            continue
        # THEN it exits 6 with one line naming what the path is, without reading or waiting
        assert proc.returncode == 6, (command, target, proc.stderr)
        assert proc.stderr.count("\n") == 1 and f"{target} is {what}, not a trace file" in proc.stderr
