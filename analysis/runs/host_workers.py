"""Each host's own work of a run over several hosts (its report, its verdicts) in a process of its
own, on the machine's cores: the hosts' reports are independent until they are put on one clock.

    results = host_workers.each(len(hosts), work)   # work(k) per host k, each in a forked process

The processes are forked from this one (each has the opened traces and everything made before;
it must remove what it writes, since it ends without this process's exit handlers), at most one
per core at once and a new one per host, so memory is that of as many host reports
as cores, whatever the number of hosts, plus this process's. Each result comes back pickled (the
typed parts of a Report, the verdicts: plain data). A work that raises: its exception is raised
here (a UsageError stays one line and its exit code); a process that dies (killed, out of
memory) is said in one line. `IOWITNESS_HOST_PROCESSES` caps the processes (1: every host's work
in this process, one after the other).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
from multiprocessing import connection
from typing import Any, Callable, TypeVar

from iowitness import tuning
from iowitness.errors import IowitnessError, TooLarge

T = TypeVar("T")

# the work of the current each(): the forked processes inherit it (a closure cannot be pickled)
_work: Callable | None = None
_in_child = False


def in_child() -> bool:
    """Whether this is a host's own process (its results go back pickled), not the command's."""
    return _in_child


def processes_for(count: int) -> int:
    """How many processes `count` hosts' work runs in: one per core at most (IOWITNESS_HOST_PROCESSES)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(count, tuning.count_from_env("IOWITNESS_HOST_PROCESSES", cores, least=1))


def each(count: int, work: Callable[[int], T]) -> list[T]:
    """[work(0), ..., work(count - 1)], each in a process of its own (see the module's text)."""
    global _work
    processes = processes_for(count)
    if processes <= 1:
        return [work(k) for k in range(count)]
    context = multiprocessing.get_context("fork")
    results: list = [None] * count
    waiting: list[int] = list(range(count))
    running: dict[Any, tuple[int, Any]] = {}   # per pipe: its host and process
    _work = work
    try:
        while waiting or running:
            while waiting and len(running) < processes:
                k = waiting.pop(0)
                reader, writer = context.Pipe(duplex=False)
                process = context.Process(target=_child, args=(k, writer), daemon=True)
                process.start()
                writer.close()
                running[reader] = (k, process)
            for ready_one in connection.wait(list(running)):
                ready: Any = ready_one   # one of the pipes given
                k, process = running.pop(ready)
                value: Any
                try:
                    done, value = ready.recv()
                except EOFError:   # it died before it could say anything
                    done, value = False, TooLarge(
                        "a process judging one host's trace ended without its result (out of memory, or "
                        "killed); run again with IOWITNESS_HOST_PROCESSES=1 to judge the hosts one after "
                        "the other in one process")
                ready.close()
                process.join()
                if not done:
                    raise value
                results[k] = value
    finally:
        _work = None
        for reader, (_, process) in running.items():   # another host's failure ends the rest
            process.terminate()
            process.join()
            reader.close()
    return results


def _child(k: int, writer) -> None:
    global _in_child
    _in_child = True
    assert _work is not None
    try:
        result = (True, _work(k))
    except BaseException as exc:   # said by the command's process, as if raised there
        result = (False, exc)
    try:
        # unpickled here first: an error whose class cannot be made again from its pickle
        # (Interrupted takes its signal too) would fail in the command's process instead
        writer.send_bytes(pickle.dumps(pickle.loads(pickle.dumps(result))))
    except Exception as exc:   # a result or an error that cannot be pickled
        said: BaseException = RuntimeError(f"host {k}'s result could not be handed back: {exc!r}")
        if not result[0] and isinstance(result[1], IowitnessError):   # its line and its exit code kept
            said = IowitnessError(str(result[1]))
            said.exit_code = result[1].exit_code
        writer.send((False, said))
    writer.close()


# what a Report holds that is plain data (pickled back from a host's process); the rest (its
# evidence, its passes over the blocks) are the process's own and end with it
REPORT_PARTS = ("phases", "groups", "outliers", "benchmark", "device", "histograms", "stretches", "t0",
                "phase_keys_ns")


def report_parts(trace) -> dict:
    """The plain parts of `trace`'s report, to be handed back (with_report)."""
    built = trace.report()
    parts = {name: getattr(built, name) for name in REPORT_PARTS}
    parts["data_calls_seen"] = getattr(trace, "data_calls_seen", None)
    return parts


def with_report(trace, parts: dict) -> None:
    """`trace`'s report made of the parts a host's process handed back: every form shows it as
    the report built here (its verdicts were judged there)."""
    from iowitness.analysis.report import Report

    trace.data_calls_seen = parts["data_calls_seen"]
    trace._report = Report(**{name: parts[name] for name in REPORT_PARTS}, trace=trace)
