"""A replay plan as fio iologs (version 3) and a job file that replays them with read_iolog.

One iolog per recorded thread (fio replays an iolog in one job; a log may name several files),
each line `TIMESTAMP FILE ACTION [OFFSET LENGTH]`, the timestamp in microseconds since the
trace's first call (fio's iolog.c writes and reads microseconds). Files are named
DIR/files/REL, REL being the place `iowitness replay` gives them (replay/paths.py), so the
two replays lay a trace out the same way.

What fio's iolog can say: add, open, close, read, write, sync (fsync), datasync (fdatasync).
Reads and writes carry the bytes the call moved (a short read is replayed as the bytes it
read, an EOF read is left out); lseek, ftruncate, fallocate and dup have no action and are
counted as left out. An open is logged when a thread's first fd on a file opens, a close when
its last closes; a call on a file the thread never opened opens it first. Files the trace
found already there are listed with the size its reads needed (`prepare` in the job file's
comment) and made there as `iowitness replay` makes them: fio does not make a file an iolog
only reads.
"""

from __future__ import annotations

import os

from iowitness.errors import OutputError, UsageError
from iowitness.replay import paths
from iowitness.replay.plan import OPS, READS, WRITES, Plan

HEADER = "fio version 3 iolog"
ACTIONS = {**{name: "read" for name in READS}, **{name: "write" for name in WRITES},
           "fsync": "sync", "fdatasync": "datasync"}


def logs(plan: Plan, files_dir: str) -> tuple[list[tuple[int, list[str], bool]], dict[str, int], dict[str, int]]:
    """Per thread: (thread, the iolog's lines, whether it opened a file O_DIRECT); the calls
    left out by syscall; bytes per direction in the logs."""
    names = [os.path.join(files_dir, f["rel"]) for f in plan.files]
    for name in names:
        if any(c.isspace() for c in name):
            raise UsageError(f"fio's iolog cannot name {name!r}: fio reads a file name up to the first space")
    left_out: dict[str, int] = {}
    moved = {"read": 0, "write": 0}
    out = []
    for t, (first, count) in enumerate(zip(plan.threads["first"].tolist(), plan.threads["count"].tolist())):
        c = plan.calls[first:first + count]
        lines = [HEADER]
        added: set[int] = set()
        opened: dict[int, int] = {}
        direct = False
        for op, f, flags, offset, size, ret, start in zip(c["op"].tolist(), c["file"].tolist(), c["flags"].tolist(),
                                                          c["offset"].tolist(), c["size"].tolist(),
                                                          c["ret"].tolist(), c["start_ns"].tolist()):
            name, ts = names[f], start // 1000
            if f not in added:
                added.add(f)
                lines.append(f"{ts} {name} add")
            kind = OPS[op]
            if kind == "open":
                direct |= bool(flags & getattr(os, "O_DIRECT", 0))
                opened[f] = opened.get(f, 0) + 1
                if opened[f] == 1:
                    lines.append(f"{ts} {name} open")
                continue
            if kind == "close":
                if opened.get(f, 0) > 0:
                    opened[f] -= 1
                    if opened[f] == 0:
                        lines.append(f"{ts} {name} close")
                continue
            action = ACTIONS.get(kind)
            if action is None:
                left_out[kind] = left_out.get(kind, 0) + 1
                continue
            if opened.get(f, 0) == 0:
                opened[f] = 1
                lines.append(f"{ts} {name} open")
            if action in ("read", "write"):
                moved_bytes = ret if action == "read" else size
                if moved_bytes <= 0 or offset < 0:
                    left_out[f"{kind} of 0 bytes" if moved_bytes <= 0 else f"{kind} at no offset"] = \
                        left_out.get(f"{kind} of 0 bytes" if moved_bytes <= 0 else f"{kind} at no offset", 0) + 1
                    continue
                moved[action] += moved_bytes
                lines.append(f"{ts} {name} {action} {offset} {moved_bytes}")
            else:
                lines.append(f"{ts} {name} {action} 0 0")
        for f, n in opened.items():
            if n > 0:
                lines.append(f"{int(c['start_ns'][-1]) // 1000} {names[f]} close")
        out.append((t, lines, direct))
    return out, left_out, moved


def write(plan: Plan, out_dir: str) -> dict:
    """The iologs, the job file (replay.fio) and the files' directory under out_dir; what was written."""
    out_dir = os.path.abspath(out_dir)
    files_dir = os.path.join(out_dir, "files")
    per_thread, left_out, moved = logs(plan, files_dir)
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create {out_dir}: {exc.strerror}") from None
    paths.prepare(files_dir, [f["rel"] for f in plan.files], [f["size"] for f in plan.files],
                  [f["precreate"] for f in plan.files], force=False)
    job = [f"; fio job replaying {plan.source['path']} (made by iowitness export --fio-iolog)",
           f"; the original ran: {' '.join(plan.source.get('command') or [])}",
           "; files the trace found already there, made by the export with these sizes (made again by",
           "; hand, they must be at least as large):"]
    job += [f";   {os.path.join(files_dir, f['rel'])} {f['size']}" for f in plan.files if f["precreate"]]
    job += ["; left out (fio's iolog has no action for them): "
            + (", ".join(f"{k} {v}" for k, v in sorted(left_out.items())) or "nothing"),
            "", "[global]", "ioengine=psync", ""]
    for t, lines, direct in per_thread:
        tgid, tid = int(plan.threads["tgid"][t]), int(plan.threads["tid"][t])
        log_name = f"thread-{t + 1}-{tgid}-{tid}.iolog"
        _write_new(os.path.join(out_dir, log_name), "\n".join(lines) + "\n")
        job += [f"[thread-{t + 1}-{tgid}-{tid}]", f"read_iolog={os.path.join(out_dir, log_name)}"]
        job += ["direct=1"] if direct else []
        job.append("")
    _write_new(os.path.join(out_dir, "replay.fio"), "\n".join(job))
    return {"jobs": len(per_thread), "bytes": moved, "left_out": left_out,
            "job_file": os.path.join(out_dir, "replay.fio"),
            "files_dir": files_dir}


def _write_new(path: str, text: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        raise OutputError(f"{path} exists: export --fio-iolog writes into a new or empty directory") from None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w") as f:
        f.write(text)

