"""The benchmark's own log and result files are output, never data (spec `output_files`).

fs_mark writes its result lines to fs_log.txt in its working directory and each child's
results to fs_log.txt.PID, which the parent reads back: calls on files like these are the
benchmark talking, not the I/O it measures. A spec names them with globs
(`[benchmark] output_files = ["fs_log.txt*"]`): a glob without "/" matches a file's name, one
with "/" its path (a relative one against the benchmark's recorded cwd,
analysis/read/recorded_paths.py). Their phases are taken out of the phases every claim is
matched among, so they are never part of a claim's figures nor of its window's bursts; the
report says how many were left out and which files they were.

Why at the judgement and not in the event walk (as fd 1 and 2 are, analysis/phasing/output_fds.py):
the spec is known only when the claims are read, after the phases are built; the phase table
itself keeps them, so `report` without a spec still shows every file the benchmark touched.
The rule is on recorded paths, so it holds alike under run, attach (a file already open at
the attach is named by its /proc path) and an strace import.

    view, note = apply(report, claims, trace)   # note: "" when the spec names none
"""

from __future__ import annotations

import fnmatch
import os

from iowitness.analysis.read import recorded_paths


class _View:
    """A report whose phases leave out the output files' (claim_windows._View, the same idea)."""

    def __init__(self, report, phases):
        self._report = report
        self.phases = phases

    def __getattr__(self, name):
        return getattr(self._report, name)


def globs_of(claims) -> tuple[str, ...]:
    """The spec's output_files, as its claims carry them (extra["output_files"])."""
    for claim in claims:
        globs = claim.extra.get("output_files")
        if globs:
            return tuple(globs)
    return ()


def matches(path: str, globs: tuple[str, ...], cwd: str | None) -> bool:
    """Whether a recorded path is one of the output files."""
    if not path:
        return False
    name = os.path.basename(path)
    for glob in globs:
        if "/" not in glob:
            if fnmatch.fnmatchcase(name, glob):
                return True
        elif fnmatch.fnmatchcase(path, recorded_paths.resolve(glob, cwd)):
            return True
    return False


def apply(report, claims, trace=None) -> tuple[object, str]:
    """(the report to match claims in, a note for the report): the phases on the spec's output
    files left out, or the report as it is when there are none."""
    globs = globs_of(claims)
    phases = report.phases
    if not globs or not len(phases) or "path" not in phases.columns:
        return report, ""
    cwd = recorded_paths.cwd_of(trace)
    paths = phases["path"].astype(object)
    output = paths.map(lambda p: matches(str(p) if isinstance(p, str) else "", globs, cwd)).to_numpy(bool)
    if not output.any():
        return report, ""
    files = sorted({os.path.basename(str(p)) for p in paths[output]})
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3:,} more" if len(files) > 3 else "")
    count = int(output.sum())
    note = (f"{count:,} phase{'s' if count != 1 else ''} on the benchmark's own output files ({shown}; spec "
            "output_files) left out: output, not data")
    return _View(report, phases[~output]), note
