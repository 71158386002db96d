"""The output timeline's lines (collector/format/printed_timeline.py): writes to fd 1 and 2 with
their times, joined with the captured text by bytes, or made into lines from their own bytes.

Ground truth: the bytes and times given to it, written out by hand below.
"""

from __future__ import annotations

import numpy as np

from iowitness.analysis.read.printed import PrintedLine, lines_of
from iowitness.collector.format.printed_timeline import Write, lines_of_writes, text_of, timeline
from iowitness.probes.layout import layout

PIPE, FILE = (0, 11), (2049, 12)


def _w(t, data, stream="stdout", ret=None, pid=7, file=PIPE):
    return Write(t, stream, pid, len(data) if ret is None else ret, data, file)


def _lines(tl):
    return [(line.text, line.t_ns, line.stream) for line in tl.lines]


def test_a_line_written_by_two_writes_has_the_time_of_the_second():
    # GIVEN "abc" then "def\n" through the capture
    tl = lines_of_writes([_w(100, b"abc"), _w(200, b"def\n")], {"stdout": b"abcdef\n"})
    # THEN one line, ended by the second write
    assert _lines(tl) == [("abcdef", 200, "stdout")]
    assert tl.writes == 2 and tl.cut == 0 and not tl.rebuilt


def test_a_write_of_several_lines_gives_each_its_time():
    tl = lines_of_writes([_w(100, b"a\nb\n"), _w(300, b"c\n")], {"stdout": b"a\nb\nc\n"})
    assert _lines(tl) == [("a", 100, "stdout"), ("b", 100, "stdout"), ("c", 300, "stdout")]


def test_a_last_line_without_a_newline_is_a_line():
    tl = lines_of_writes([_w(100, b"a\n"), _w(150, b"tail")], {"stdout": b"a\ntail"})
    assert _lines(tl) == [("a", 100, "stdout"), ("tail", 150, "stdout")]
    # AND from a file's own bytes too
    tl = lines_of_writes([_w(100, b"a\n", file=FILE), _w(150, b"tail", file=FILE)], {})
    assert _lines(tl) == [("a", 100, "stdout"), ("tail", 150, "stdout")]


def test_stdout_and_stderr_are_interleaved_by_time():
    writes = [_w(100, b"one\n"), _w(150, b"warn\n", "stderr"), _w(200, b"two\n")]
    tl = lines_of_writes(writes, {"stdout": b"one\ntwo\n", "stderr": b"warn\n"})
    assert _lines(tl) == [("one", 100, "stdout"), ("warn", 150, "stderr"), ("two", 200, "stdout")]


def test_hostile_bytes_and_invalid_utf8_are_replaced_not_raised():
    data = b"\xff\xfe ok \x1b[31mred\x00\n\xc3"
    tl = lines_of_writes([_w(100, data, file=FILE)], {})
    assert [line.t_ns for line in tl.lines] == [100, 100]
    assert "\ufffd" in tl.lines[0].text and "\x1b[31mred\x00" in tl.lines[0].text
    assert tl.lines[1].text == "\ufffd"


def test_captured_text_the_writes_do_not_cover_has_no_time():
    # GIVEN a capture with a line no recorded write gave (a process outside the traced set)
    tl = lines_of_writes([_w(100, b"a\n")], {"stdout": b"a\nb\n"})
    assert _lines(tl) == [("a", 100, "stdout"), ("b", None, "stdout")]


def test_a_write_longer_than_the_bound_is_counted_and_its_line_marked():
    # GIVEN a write of 10 bytes of which 4 were kept, to a file (no capture)
    tl = lines_of_writes([_w(100, b"ab\ncd", ret=10, file=FILE), _w(200, b"ef\n", file=FILE)], {}, bound=5)
    assert tl.cut == 1 and tl.bytes_not_kept == 5 and tl.writes == 2
    assert [(line.text, line.cut) for line in tl.lines] == [("ab", False), ("cd", True), ("ef", False)]
    assert "1 cut at" in tl.summary() and "5 bytes not kept" in tl.summary()


def test_writes_elsewhere_rebuild_the_text_the_capture_lacks():
    # GIVEN stdout sent to a file by a shell: the capture got none of it, stderr all of it
    writes = [_w(100, b"x 1\n", file=FILE), _w(120, b"e\n", "stderr"), _w(140, b"x 2\n", file=FILE)]
    tl = lines_of_writes(writes, {"stdout": b"", "stderr": b"e\n"})
    assert tl.rebuilt == {"stdout"}
    assert text_of(tl, {"stdout": "", "stderr": "e\n"}) == {"stdout": "x 1\nx 2\n", "stderr": "e\n"}


def test_a_cr_lf_split_over_two_writes_is_one_line_end():
    tl = lines_of_writes([_w(100, b"a\r", file=FILE), _w(200, b"\nb\n", file=FILE)], {})
    assert _lines(tl) == [("a", 200, "stdout"), ("b", 200, "stdout")]


def test_records_of_the_probe_layout_are_read_in_completion_order():
    # GIVEN two iow_output records, out of order, one on fd 3 (never output)
    rec = np.zeros(3, dtype=layout().structs["iow_output"])
    for i, (end, fd, text) in enumerate(((300, 1, b"late\n"), (100, 1, b"early\n"), (200, 3, b"no\n"))):
        rec[i]["end_ns"], rec[i]["fd"], rec[i]["tgid"] = end, fd, 9
        rec[i]["ret"] = rec[i]["copied"] = len(text)
        rec[i]["data"][:len(text)] = np.frombuffer(text, np.uint8)
    tl = timeline(rec, {"stdout": b"early\nlate\n"})
    assert _lines(tl) == [("early", 100, "stdout"), ("late", 300, "stdout")] and tl.writes == 2


class _Old:
    output = {"stdout": "a\nb\n", "stderr": "w\n"}


def test_a_trace_without_a_timeline_gives_its_captured_lines_with_no_time():
    assert lines_of(_Old()) == [PrintedLine("a", None, "stdout"), PrintedLine("b", None, "stdout"),
                                PrintedLine("w", None, "stderr")]


def _printed_records(*rows):
    rec = np.zeros(len(rows), dtype=layout().structs["iow_output"])
    for i, (end, fd, text) in enumerate(rows):
        rec[i]["start_ns"], rec[i]["end_ns"], rec[i]["fd"], rec[i]["tgid"] = end - 5, end, fd, 3
        rec[i]["ret"] = rec[i]["copied"] = len(text)
        rec[i]["data"][:len(text)] = np.frombuffer(text, np.uint8)
    return rec


def test_a_trace_file_keeps_its_timeline_and_an_old_one_reads_without(tmp_path, monkeypatch):
    from iowitness.analysis.read.run import load
    from iowitness.collector.format import tracewriter
    from iowitness.collector.format.tracewriter import TraceWriter

    # GIVEN a trace with captured output and the writes that made it
    new = tmp_path / "new.iwt"
    writer = TraceWriter(new, {"command": ["bench"]})
    writer.write_printed(_printed_records((100, 1, b"rate 5\n"), (200, 2, b"warn\n")))
    writer.write_output("stdout", b"rate 5\n")
    writer.write_output("stderr", b"warn\n")
    writer.close({"exit_code": 0})
    # THEN its lines have their times, and the header line says what was recorded
    trace = load(new)
    assert [(line.text, line.t_ns) for line in lines_of(trace)] == [("rate 5", 100), ("warn", 200)]
    assert trace.printed.summary() == "output: 2 writes, 0 cut at 4 KiB"

    # GIVEN a trace written before the timeline existed (its layout has no `output`)
    old = tmp_path / "old.iwt"
    real = tracewriter.describe_layout
    monkeypatch.setattr(tracewriter, "describe_layout",
                        lambda lay: {k: v for k, v in real(lay).items() if k != "output"})
    writer = TraceWriter(old, {"command": ["bench"]})
    writer.write_output("stdout", b"rate 5\n")
    writer.close({"exit_code": 0})
    # THEN it reads, with its lines untimed
    trace = load(old)
    assert trace.printed is None and lines_of(trace) == [PrintedLine("rate 5", None, "stdout")]


def test_a_write_on_fd_1_that_reached_stderrs_capture_is_stderr():
    # GIVEN `echo to-err >&2` in sh: dup2(2, 1), then write(1, ...), which reaches stderr's pipe
    tl = lines_of_writes([_w(100, b"to-out\n"), _w(200, b"to-err\n")],
                         {"stdout": b"to-out\n", "stderr": b"to-err\n"})
    # THEN the line is stderr's, with its time, and no stream is rebuilt
    assert _lines(tl) == [("to-out", 100, "stdout"), ("to-err", 200, "stderr")] and not tl.rebuilt


def test_under_run_a_pipe_or_dev_null_the_capture_did_not_read_is_not_output():
    # GIVEN a shell script's $(readlink ...) writing into the shell's pipe, `head >/dev/null`,
    # then the benchmark's line
    writes = [Write(100, "stdout", 8, 10, b"/usr/bin/x", (0, 50), 1), Write(150, "stdout", 9, 2, b"y\n", (5, 4), 2),
              _w(200, b"rate 5\n")]
    tl = lines_of_writes(writes, {"stdout": b"rate 5\n"}, captures=True)
    assert _lines(tl) == [("rate 5", 200, "stdout")] and not tl.rebuilt
    # AND a regular file (a shell's `> out.txt`) is output
    tl = lines_of_writes([Write(100, "stdout", 8, 4, b"r 1\n", (2049, 7), 8)], {"stdout": b""}, captures=True)
    assert _lines(tl) == [("r 1", 100, "stdout")] and tl.rebuilt == {"stdout"}
    # AND under attach (no capture) a pipe is where the output goes: its lines are kept
    tl = lines_of_writes(writes[:1], {}, captures=False)
    assert _lines(tl) == [("/usr/bin/x", 100, "stdout")]
