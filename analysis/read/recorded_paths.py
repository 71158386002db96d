"""Paths of a recorded command line, as the benchmark saw them: a relative path resolves
against the working directory the trace recorded (meta "cwd"), never against the directory
the reader runs in.

IOzone's `-F f1 f2` and fio's job file, its `filename=` and `directory=` are relative to the
benchmark's cwd; `iowitness report` may run anywhere, on another machine even. A trace that
recorded no cwd (older traces, some imports) leaves a relative path as it is: it matches no
recorded (absolute) path rather than one the reader's directory makes up.

Example: `resolve("f1", "/data/bench")` is "/data/bench/f1"; `resolve("/tmp/x", "/data")` is
"/tmp/x"; `resolve("f1", None)` is "f1".

The process the recorded command is (command_pid): the one `run` started, the program an
attached gate ran (its own exec, or a shell's child), or the first PID `attach -p` was given,
whose command line the trace names.
"""

from __future__ import annotations

import os


def resolve(path: str, cwd: str | None) -> str:
    """`path` as the benchmark meant it: absolute, against `cwd` when relative."""
    if os.path.isabs(path):
        return os.path.normpath(path)
    if not cwd:
        return os.path.normpath(path) if path else path
    return os.path.normpath(os.path.join(cwd, path))


def resolve_all(paths: list[str], cwd: str | None) -> list[str]:
    return [resolve(p, cwd) for p in paths]


def cwd_of(trace) -> str | None:
    """The benchmark's recorded working directory, or None (no trace, or none recorded)."""
    meta = getattr(trace, "meta", None) or {}
    cwd = meta.get("cwd")
    return str(cwd) if cwd else None


def command_pid(meta: dict) -> int | None:
    """The PID of the recorded command's process: meta "pid" (`run`, an import), else the program
    an attached gate ran (meta "command_exec"), else the first process `attach -p` was given
    (meta "attached", its command line the trace's command);
    None when there is neither (`attach --file`). fio's own process lays out its files: under
    an attach made before that, its phases are fio's layout only if this names it."""
    if meta.get("pid"):
        return int(meta["pid"])
    ran = (meta.get("command_exec") or {}).get("pid")
    if ran:   # the program a gate attached to exec'd, or a shell attached to forked (gate_programs)
        return int(ran)
    given = [p for p in meta.get("attached") or [] if isinstance(p, dict) and p.get("pid")]
    return int(given[0]["pid"]) if given else None
