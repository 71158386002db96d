"""fio's data files as a job names them, and which job each phase on a file shared by several
jobs belongs to.

A job's `filename=` (several joined by ':') is relative to its `directory=` (default: fio's
working directory), itself relative to fio's cwd: both resolve against the cwd the trace
recorded (analysis/read/recorded_paths.py), never the reader's.

Jobs on one file (a write job, `stonewall`, then a read job on the same file) are told apart
by their processes: fio runs every job, and every clone of a job (numjobs=N), as a process (or
with --thread a thread) of its own, created in the order of the job file (fio's
backend.c run_threads forks them in job order), so the k-th process on the file, in order of
creation (its pid), is the k-th job (clone) of those naming the file.

Example: jobs {"writer": {"filename": "data.bin", "rw": "write"}, "reader": {"filename":
"data.bin", "rw": "read", "stonewall": None}} in /d: both name /d/data.bin; the phases of the
first process on it are "writer"'s, those of the second "reader"'s.
"""

from __future__ import annotations

import pandas as pd

from iowitness.analysis.read import recorded_paths


def job_files(options: dict, cwd: str | None) -> set[str]:
    """The absolute paths a job's filename= names (none when fio makes up the names)."""
    names = [n for n in str(options.get("filename") or "").split(":") if n]
    directory = recorded_paths.resolve(str(options["directory"]).split(":")[0], cwd) \
        if options.get("directory") else cwd
    return {recorded_paths.resolve(n, directory) for n in names}


def owners(phases: pd.DataFrame, jobs: dict[str, dict], cwd: str | None, root_pid: int | None) -> list[str | None]:
    """Per phase, the job whose filename= names its file: the only one, or on a file several
    jobs name, the one of its process in fio's order of jobs and clones; None when no job
    names it."""
    files = {job: job_files(options, cwd) for job, options in jobs.items()}
    paths = [recorded_paths.resolve(str(p), cwd) for p in phases["path"]]
    naming = {path: [job for job, named in files.items() if path in named] for path in set(paths)}
    out: list[str | None] = []
    order = _order_on_shared(phases, paths, naming, jobs, root_pid)
    for i, path in enumerate(paths):
        named = naming[path]
        out.append(order.get(i, named[-1]) if len(named) > 1 else named[0] if named else None)
    return out


def _order_on_shared(phases: pd.DataFrame, paths: list[str], naming: dict, jobs: dict, root_pid) -> dict[int, str]:
    """Row -> job for the rows on a file several jobs name: the k-th worker (process, or thread
    of fio's own process under --thread) on the file, by id, runs the k-th clone in job order."""
    out: dict[int, str] = {}
    tgids, tids = phases["tgid"].to_numpy(), phases["tid"].to_numpy()
    for path, named in naming.items():
        if len(named) < 2:
            continue
        slots = [job for job in named for _ in range(_clones(jobs[job]))]
        # fio's own main thread lays the file out before the jobs start: no job's
        rows = [i for i, p in enumerate(paths) if p == path and (root_pid is None or int(tids[i]) != int(root_pid))]
        worker = {i: int(tids[i]) if root_pid is not None and int(tgids[i]) == int(root_pid) else int(tgids[i])
                  for i in rows}
        ids = sorted(set(worker.values()))
        for i in rows:   # a worker more than the clones (none expected): the last job's, as before
            out[i] = slots[min(ids.index(worker[i]), len(slots) - 1)]
    return out


def _clones(options: dict) -> int:
    try:
        return max(1, int(str(options.get("numjobs") or 1)))
    except ValueError:
        return 1
