"""Two processes writing to one captured pipe, their calls returning in another order than
their bytes went in (collector/format/printed_timeline.py, lines_of_writes): every line keeps
a time, each no later than the return of any write whose bytes follow it.

Ground truth: the bytes and times written out by hand below."""

from __future__ import annotations

from iowitness.collector.format.printed_timeline import PENDING_MOST, Write, lines_of_writes

PIPE = (0, 11)


def _w(t, data, pid):
    return Write(t, "stdout", pid, len(data), data, PIPE)


def _lines(tl):
    return [(line.text, line.t_ns, line.pid) for line in tl.lines]


def test_a_write_preempted_before_its_return_keeps_every_later_line_timed():
    # GIVEN a parent's "a", a child's "B" (its bytes in the pipe next, its call returning at
    # 300, after a CPU hog had its CPU), then the parent's "c" (returned at 200) and "d"
    writes = [_w(100, b"a\n", 1), _w(200, b"c\n", 1), _w(300, b"B\n", 2), _w(400, b"d\n", 1)]
    # WHEN the writes, in order of return, are joined with the capture's bytes
    tl = lines_of_writes(writes, {"stdout": b"a\nB\nc\nd\n"}, captures=True)
    # THEN every line has a time (before: "c" and "d" had none, and every claim of the run was
    # matched by order); "B" was in the pipe before "c" returned, so by 200
    assert _lines(tl) == [("a", 100, 1), ("B", 200, 2), ("c", 200, 1), ("d", 400, 1)]


def test_writes_in_order_keep_their_own_times():
    writes = [_w(100, b"a\n", 1), _w(200, b"B\n", 2), _w(300, b"c\n", 1)]
    tl = lines_of_writes(writes, {"stdout": b"a\nB\nc\n"}, captures=True)
    assert _lines(tl) == [("a", 100, 1), ("B", 200, 2), ("c", 300, 1)]


def test_a_write_that_never_reached_the_capture_is_still_no_line():
    # GIVEN plumbing between the benchmark's own processes (`a | b`: a pipe the capture does not
    # read), more writes of it than are kept waiting
    plumbing = [Write(10 + i, "stdout", 3, 2, b"p\n", (0, 99)) for i in range(PENDING_MOST + 5)]
    writes = [*plumbing, _w(500, b"a\n", 1), _w(600, b"b\n", 1)]
    # WHEN joined THEN only the captured lines, with their own times
    tl = lines_of_writes(writes, {"stdout": b"a\nb\n"}, captures=True)
    assert _lines(tl) == [("a", 500, 1), ("b", 600, 1)]
