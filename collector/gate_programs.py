"""Which program is the benchmark when `attach --pid` was given a gate: the process attached to
execs it (`sh -c 'read go; exec iozone ...'`, bash's `sh -c 'read go; iozone ...'`), or a shell
attached to forks a child that execs it (dash's `sh -c 'read go; iozone -t 2 ...'`: the shell
waits, the benchmark is its child).

Fed the probe's FORK, EXEC and FILE facts in the order they came, it follows the shell: a child
it forks is the shell too (a subshell) until that child execs a program that is not a shell;
that program is one the shell ran, read from /proc at once (processes.after_exec), while it
likely still runs. Its own children (IOzone -t's, fio's jobs) are that program's, never
programs of their own, even when they exec (fio's exec_prerun, a benchmark's system("sync")).

The benchmark is then:
- the one program the shell ran;
- of several (`mkdir d; cd d; iozone ...; cat results`), the one that ran longest (from its exec
  to the shell's next program, or the trace's end) among those that opened a file the trace
  follows (themselves or their children): a setup or a tidy-up step is short or touches no
  target; when none opened one, the longest of all. Every program is listed in the trace
  (END `gate_programs`) and the report says which was taken and why;
- else, what the process attached to last exec'd (any process, a wrapper's `exec`);
- else nothing: the trace's command stays the attached process's.

A process attached to that is not a shell (a benchmark, a Python harness) is never followed
into its children's execs: what a benchmark runs is not the benchmark.
"""

from __future__ import annotations

import os

import numpy as np

from iowitness.collector import processes

SHELLS = frozenset({"sh", "dash", "bash", "zsh", "ksh", "ksh93", "mksh", "ash", "yash", "posh", "busybox"})
LISTED = 64   # programs described in END (a shell loop may run thousands)


def is_shell(name: str | None) -> bool:
    return bool(name) and os.path.basename(str(name)) in SHELLS


class GatePrograms:
    def __init__(self, pid: int, comm: str | None):
        self.pid = pid
        self.shells = {pid} if is_shell(comm) else set()
        self.own_exec: dict | None = None    # what `pid` itself last exec'd
        self.ran: list[dict] = []            # programs a shell ran, in order of their exec
        self._program_of: dict[int, int] = {}   # a process -> the index in `ran` of its program
        self.count = 0

    def note(self, facts: np.ndarray, kinds: dict[str, int]) -> None:
        """Follow one drain's facts, in the order the probe sent them."""
        wanted = np.isin(facts["kind"], [kinds["IOW_META_FORK"], kinds["IOW_META_EXEC"], kinds["IOW_META_FILE"]])
        for fact in facts[wanted]:
            kind, tgid = int(fact["kind"]), int(fact["tgid"])
            if kind == kinds["IOW_META_FORK"]:
                parent = int(fact["parent_tgid"])
                if parent in self.shells:
                    self.shells.add(tgid)
                elif parent in self._program_of:
                    self._program_of[tgid] = self._program_of[parent]
            elif kind == kinds["IOW_META_EXEC"]:
                self._exec(tgid, os.fsdecode(bytes(fact["path"]).split(b"\0", 1)[0]), int(fact["ts_ns"]))
            elif fact["fd"] >= 0 and tgid in self._program_of:   # fd -1: registered at the attach
                self.ran[self._program_of[tgid]]["opened_target"] = True

    def _exec(self, tgid: int, path: str, ts_ns: int) -> None:
        described = None
        if tgid == self.pid:
            described = {**processes.after_exec(tgid, path), "ts_ns": ts_ns}
            self.own_exec = described
        if tgid not in self.shells and not (tgid == self.pid and is_shell(path)):
            return
        if is_shell(path):   # a shell that runs a script (`exec bash run.sh`) is still the shell
            self.shells.add(tgid)
            return
        self.shells.discard(tgid)
        self.count += 1
        if len(self.ran) < LISTED:
            if described is None:
                described = {**processes.after_exec(tgid, path), "ts_ns": ts_ns}
            self.ran.append({**described, "opened_target": False})
            self._program_of[tgid] = len(self.ran) - 1

    def benchmark(self, end_ns: int) -> tuple[dict | None, dict | None]:
        """(the benchmark's command_exec record, END's `gate_programs` or None)."""
        if not self.ran:
            return self.own_exec, None
        ran = [{k: v for k, v in p.items() if k != "opened_target"} for p in self.ran]
        if len(self.ran) == 1:
            return ran[0], None
        lasted = [(self.ran[i + 1]["ts_ns"] if i + 1 < len(self.ran) else end_ns) - p["ts_ns"]
                  for i, p in enumerate(self.ran)]
        opened = [i for i, p in enumerate(self.ran) if p["opened_target"]]
        pool = opened or list(range(len(self.ran)))
        chosen = max(pool, key=lambda i: lasted[i])
        why = ("the longest-running of those that opened a file the trace follows" if opened
               else "the longest-running (none opened a file the trace follows)")
        listed = [{"pid": p["pid"], "path": p["path"], "cmdline": p["cmdline"], "ts_ns": p["ts_ns"],
                   "lasted_ns": max(0, lasted[i]), "opened_target": p["opened_target"]}
                  for i, p in enumerate(self.ran)]
        return ran[chosen], {"shell": self.pid, "count": self.count, "programs": listed, "chosen": chosen, "why": why}
