"""IOzone's cluster mode: `iozone -+m CLIENTS -t N ...`, one trace per client host.

The master starts a new `iozone -+s` on each client host for every test (through `$RSH`),
each in the workdir its line of CLIENTS names ("host workdir path-to-iozone"); child k works
on iozone.DUMMY.k there. Each host is traced by its own collector (`iowitness attach --file
WORKDIR`). The master's figures are throughput-mode figures over all hosts' children, so the
hosts' traces are merged into one on the common wall clock (analysis/runs/merged_trace.py). On that
merged trace IOzone's own matcher forms the groups of N concurrent children and judges every
claim exactly as for `iozone -t N` on one machine: the "Children see" sums, min/max/avg per
process, min xfer, and with -C each child's line, which is its host's claim.

Example: `judge(master_text, [("A.iwt", a), ("B.iwt", b)], 0.05)` gives a hosts.Cluster whose
hosts carry their child's verdicts and whose all_clients carry the rest.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from contextlib import ExitStack

import numpy as np

from iowitness.analysis.benchmarks import iozone_claims
from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.judge.claim import UnparsableOutput
from iowitness.analysis.runs import hosts as host_module, merged_trace
from iowitness.analysis.runs.dataset import clock_offset_ns
from iowitness.collector.format.traceformat import ops_of_kind
from iowitness.errors import UsageError
from iowitness.safepath import kind

_COMMAND = re.compile(r"^\s*Command line used:\s*(?P<argv>.+?)\s*$", re.MULTILINE)


def is_master_output(text: str) -> bool:
    """Whether `text` is the output of an IOzone master in cluster mode (-+m)."""
    found = _COMMAND.search(text)
    return bool(found) and "-+m" in _argv(found.group("argv"))


def _argv(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()


def command(text: str) -> list[str]:
    found = _COMMAND.search(text)
    if not found:
        raise UsageError("the --claims output is IOzone's without its 'Command line used:' line: give the master's "
                         "whole output")
    return _argv(found.group("argv"))


LIST_LIMIT = 1 << 20   # bytes read of a client list at most: IOzone takes 256 clients at most


def clients(argv: list[str]) -> tuple[str, list[tuple[str, str]] | None]:
    """(the -+m file as given, its (host, workdir) lines in order, None when it cannot be read
    here: the report may run on another machine than the master).

    The path comes from the --claims text, which anyone may have written, and report may run as
    root: it is opened only as a regular file (never a FIFO, which would hang, or a device, which
    would never end), read up to LIST_LIMIT bytes, and taken only when every line is a client
    line (host, workdir, path to iozone); what it holds otherwise is never shown."""
    path = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-+m"), "")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError):
        return path, None
    with os.fdopen(fd, "rb") as handle:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise UsageError(f"the client list {path} (after -+m in the --claims output) is {kind(found.st_mode)}, "
                             "not a regular file; give the master's output naming its real client list")
        if found.st_size > LIST_LIMIT:
            raise UsageError(f"the client list {path} (after -+m in the --claims output) holds {found.st_size:,} "
                             f"bytes, more than any IOzone client list ({LIST_LIMIT:,} at most); give the "
                             "master's output naming its real client list")
        text = handle.read(LIST_LIMIT + 1).decode("utf-8", errors="replace")
    lines = [line.split() for line in text.splitlines()]
    lines = [words for words in lines if words and not words[0].startswith("#")]
    if len(text) > LIST_LIMIT or any(len(words) < 3 or "/" not in words[2] for words in lines):
        raise UsageError(f"{path} (after -+m in the --claims output) is not an IOzone client list: not every "
                         "line reads 'host workdir path-to-iozone'; give the master's output naming its real "
                         "client list")
    return path, [(words[0], os.path.normpath(words[1])) for words in lines]


def _workdirs(trace) -> set[str]:
    """The directories a host's collector watched (attach --file DIR), and those of its files."""
    found = {os.path.normpath(r["path"]) for r in trace.meta.get("file_rules") or []
             if isinstance(r, dict) and isinstance(r.get("path"), str) and r.get("directory")}
    found |= {os.path.dirname(os.path.normpath(f["path"])) for f in trace.meta.get("files") or []
              if isinstance(f, dict) and isinstance(f.get("path"), str)}
    return found


def assign(lines: list[tuple[str, str]] | None, traces: list[tuple[str, object]], list_path: str) -> list[host_module.Host]:
    """One Host per line of the client list, each with its trace: the trace whose watched
    directory is the line's workdir. When the list cannot be read here, one Host per trace,
    named by its host name and directory."""
    if lines is None:
        return [host_module.Host(f"{t.meta.get('host') or '?'}:{','.join(sorted(_workdirs(t))) or p}",
                                 str(t.meta.get("host") or ""), None, [], t, p) for p, t in traces]
    free, out = list(traces), []
    # IOzone -t N takes the first N lines of the list
    for host, workdir in lines[:len(traces)]:
        candidates = [(p, t) for p, t in free if workdir in _workdirs(t)]
        if len(candidates) != 1:
            given = "; ".join(f"{p}: {', '.join(sorted(_workdirs(t))) or 'no directory'}" for p, t in traces)
            raise UsageError(f"{'no' if not candidates else 'more than one'} trace watched {workdir}, the workdir of "
                             f"{host} in {list_path} (the traces watched {given}); trace each host with "
                             "iowitness attach --file WORKDIR and give each trace once")
        free.remove(candidates[0])
        out.append(host_module.Host(f"{host}:{workdir}", host, None, [], candidates[0][1], candidates[0][0]))
    if free:
        raise UsageError(f"{', '.join(p for p, _ in free)}: no client of {list_path} has this trace's directory")
    return out


def _seen_whole(host: host_module.Host) -> bool:
    """Whether the host's trace saw each of its children from the start: every process that
    moved data on a target opened it in the trace (a child under way when the collector
    attached would not have)."""
    opening, moving = ops_of_kind("open"), ops_of_kind("read") + ops_of_kind("write")
    opened, moved = set(), set()
    for block in host.trace.source.blocks():
        tgid = block["tgid"].to_numpy()
        opened.update(np.unique(tgid[block["syscall"].isin(opening).to_numpy()]).tolist())
        moved.update(np.unique(tgid[block["syscall"].isin(moving).to_numpy()]).tolist())
    return moved <= opened


def judge_of(text: str):
    """The judge of `text` when it is an IOzone cluster-mode master's output, a function (traces,
    tolerance) -> hosts.Cluster; None when it is not."""
    return (lambda traces, tolerance: judge(text, traces, tolerance)) if is_master_output(text) else None


def judge(text: str, traces: list[tuple[str, object]], tolerance: float) -> host_module.Cluster:
    argv = command(text)
    list_path, lines = clients(argv)
    hosts = assign(lines, traces, list_path)
    try:
        claims = iozone_claims.parse(text)
    except UnparsableOutput as exc:
        raise UsageError(f"the --claims output: {exc}") from None
    children = _children(hosts)
    if "-F" not in argv and sorted(children) == list(range(len(children))) and children:
        # as if the master had named each child's file: IOzone's matcher then knows child k
        argv = argv + ["-F", *(children[k][0] for k in range(len(children)))]
    resources = ExitStack()
    try:
        trace = resources.enter_context(merged_trace.open_merged(
            [(h.path, h.trace) for h in hosts], argv, "cluster" if all(map(_seen_whole, hosts)) else "attach")).trace
        judged = matching.match(trace.report(), claims, "iozone", argv, tolerance, trace.missing, trace=trace)
    except BaseException:
        resources.close()
        raise
    everyone = []
    for verdict in judged:
        child = verdict.claim.extra.get("child") if verdict.claim.scope == "child" else None
        if child is not None and int(child) in children:
            hosts[children[int(child)][1]].verdicts.append(verdict)
        else:
            everyone.append(verdict)
    base = min(clock_offset_ns(h.trace.meta) for h in hosts)
    doc = {"iozone version": _version(text), "merged": trace}
    # the merged trace's report is printed after: its temporary files stay until the cluster is closed
    return host_module.Cluster(hosts, everyone, host_module.timeline(hosts, base), doc, resources)


def _children(hosts: list[host_module.Host]) -> dict[int, tuple[str, int]]:
    """Child number -> (its file, the index of its host): a cluster child k works on
    iozone.DUMMY.k in its host's workdir (iozone.c names the file by the child number the
    master gave it), so the trace itself says which host ran which child."""
    found: dict[int, tuple[str, int]] = {}
    for k, host in enumerate(hosts):
        for f in host.trace.meta.get("files") or []:
            name = os.path.basename(str(f.get("path") or "")) if isinstance(f, dict) else ""
            number = re.fullmatch(r"iozone\.DUMMY\.(\d+)", name)
            if number:
                found.setdefault(int(number.group(1)), (str(f["path"]), k))
    return found


def _version(text: str) -> str | None:
    found = re.search(r"Version \$Revision: (\d+\.\d+) \$", text)
    return found.group(1) if found else None
