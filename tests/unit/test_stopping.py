"""Stopping a benchmark's process tree: SIGINT to all of it, SIGKILL to what ignores it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from iowitness.collector import stopping
from iowitness.collector.processes import alive, descendants

# a parent with one child, which ignores SIGINT when told to, then says it is ready on the
# stdout it shares with its parent
TREE = ("import signal, subprocess, sys, time\n"
        "child = [sys.executable, '-c', 'import signal, time\\n"
        "if %r: signal.signal(signal.SIGINT, signal.SIG_IGN)\\n"
        "print(\"ready\", flush=True)\\n"
        "time.sleep(60)']\n"
        "p = subprocess.Popen(child)\n"
        "time.sleep(60)\n")


def _tree(child_ignores: bool):
    parent = subprocess.Popen([sys.executable, "-c", TREE % child_ignores], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    # the child's own word that its disposition is set, however long a busy machine takes to
    # start it (a fixed 0.3 s sleep assumed the start: on a busy machine SIGINT could come first)
    assert parent.stdout.readline() == "ready\n", "the child never started"
    (child,) = descendants({parent.pid}) - {parent.pid}
    return parent, child


def test_sigint_reaches_every_process_of_the_tree():
    # GIVEN a parent and its child, neither ignoring SIGINT
    parent, child = _tree(child_ignores=False)
    # WHEN the tree is stopped (the grace only bounds the wait: stop returns when the tree is gone;
    # 5 s was too short for two Pythons to unwind a KeyboardInterrupt at load average 15, and the
    # child was SIGKILLed: a unit-tier run of 28 Nov)
    stopped = stopping.stop(stopping.ProcessTree(parent.pid, os.pidfd_open(parent.pid)), time.sleep, grace=60)
    # THEN SIGINT ended both, no SIGKILL was needed, and the words say so
    assert parent.wait(5) != 0 and not alive(child)
    assert not stopped.killed and stopped.outcome() == f"the benchmark (PID {parent.pid}) was stopped with SIGINT"


def test_a_process_that_ignores_sigint_is_killed_at_the_deadline():
    # GIVEN a child that ignores SIGINT (its parent does not)
    parent, child = _tree(child_ignores=True)
    started = time.monotonic()
    # WHEN the tree is stopped with a grace of half a second
    stopped = stopping.stop(stopping.ProcessTree(parent.pid, os.pidfd_open(parent.pid)), time.sleep, grace=0.5)
    # THEN the child outlived SIGINT, got SIGKILL at the deadline, and the words say so
    assert stopped.killed and 0.5 <= time.monotonic() - started < 5
    assert parent.wait(5) != 0 and not alive(child)
    assert stopped.outcome() == (f"the benchmark (PID {parent.pid}) did not stop within 0.5 s of SIGINT "
                                 "and was killed with SIGKILL")
