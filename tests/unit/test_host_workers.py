"""Each host's work in a process of its own (analysis/runs/host_workers.py): results in the hosts'
order, errors said as in one process, a process that dies said in one line, one process at most
per core at once.

Ground truth: the process ids and times each work records itself, and the exceptions it raises."""

from __future__ import annotations

import os
import signal
import time

import pytest

from iowitness.analysis.runs import host_workers
from iowitness.errors import Interrupted, TooLarge, UsageError


def test_each_hosts_work_runs_in_a_process_of_its_own_and_comes_back_in_order(monkeypatch):
    # GIVEN four hosts' works on a machine of two processes at most, each saying where and when it ran
    monkeypatch.setenv("IOWITNESS_HOST_PROCESSES", "2")

    def work(k):
        began = time.monotonic()
        time.sleep(0.3)
        return {"host": k, "pid": os.getpid(), "child": host_workers.in_child(), "ran": (began, time.monotonic())}

    # WHEN they run
    results = host_workers.each(4, work)
    # THEN each comes back in the hosts' order, from a forked process of its own (not this one)
    assert [r["host"] for r in results] == [0, 1, 2, 3]
    pids = {r["pid"] for r in results}
    assert len(pids) == 4 and os.getpid() not in pids and all(r["child"] for r in results)
    assert not host_workers.in_child()
    # AND never more than two at once: at any work's start, at most one other was running
    for r in results:
        at = r["ran"][0]
        assert sum(1 for o in results if o["ran"][0] <= at < o["ran"][1]) <= 2


def test_one_process_means_every_work_here_one_after_the_other(monkeypatch):
    # GIVEN IOWITNESS_HOST_PROCESSES=1 WHEN three works run THEN each ran in this process
    monkeypatch.setenv("IOWITNESS_HOST_PROCESSES", "1")
    assert host_workers.each(3, lambda k: (k, os.getpid())) == [(k, os.getpid()) for k in range(3)]


def test_a_hosts_error_is_raised_as_in_one_process(monkeypatch):
    # GIVEN two hosts, the second's work refusing its trace as a user's error
    monkeypatch.setenv("IOWITNESS_HOST_PROCESSES", "2")

    def work(k):
        if k == 1:
            raise UsageError("host1.iwt: no phase; trace the fio server with iowitness attach")
        return k

    # WHEN they run THEN that error comes out here, its class (its exit code) and its one line kept
    with pytest.raises(UsageError, match="^host1.iwt: no phase; trace the fio server") as caught:
        host_workers.each(2, work)
    assert caught.value.exit_code == 2


def test_a_process_that_dies_is_said_in_one_line(monkeypatch):
    # GIVEN two hosts, the first's process killed (as the kernel's out-of-memory killer would)
    monkeypatch.setenv("IOWITNESS_HOST_PROCESSES", "2")

    def work(k):
        if k == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        return k

    # WHEN they run THEN one line says what happened and what to do, with exit code 7
    with pytest.raises(TooLarge) as caught:
        host_workers.each(2, work)
    assert "\n" not in str(caught.value) and "IOWITNESS_HOST_PROCESSES=1" in str(caught.value)
    assert caught.value.exit_code == 7


def test_an_error_that_cannot_be_unpickled_keeps_its_line_and_exit_code(monkeypatch):
    # GIVEN two hosts, the second's work ended by SIGTERM (Interrupted takes the signal as well as
    # its message, so its pickle cannot make it again)
    monkeypatch.setenv("IOWITNESS_HOST_PROCESSES", "2")

    def work(k):
        if k == 1:
            raise Interrupted("interrupted by SIGTERM", signal.SIGTERM)
        return k

    # WHEN they run THEN the same line comes out here with the same exit code (143)
    with pytest.raises(Exception) as caught:
        host_workers.each(2, work)
    assert str(caught.value) == "interrupted by SIGTERM" and caught.value.exit_code == 143
