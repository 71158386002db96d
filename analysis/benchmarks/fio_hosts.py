"""fio over several hosts: fio --client driving several fio --server, one trace per server.

Each server host is traced by its own `iowitness attach --pid SERVER`; the client's
`--output-format=json` output holds one `client_stats` entry per job per host (with the
host's `hostname` and `port` as the client named them) and, with two hosts or more, one
"All clients" entry per group: the sum over the hosts, fio's rate being the bytes over the
longest host's runtime.

Here:
- each trace is matched to its host by the address its fio server listens on (`--server=
  ip:ADDR,PORT` in the attached process's command line), else by the trace's host name;
- each host's claims are judged against its own trace, exactly as a single run's are (the
  host's entries are a fio JSON of their own; the job options fio reports name the phases);
- the traces are aligned on one clock (analysis/runs/hosts.py);
- the all-clients claims are judged against every host's phases of that job and direction
  together, with fio's arithmetic (all bytes over the longest host's time), and the aligned
  timeline is given: when each host started and ended, and the rate over the union of their
  wall-clock windows.
"""

from __future__ import annotations

import json
import re
import tempfile
from contextlib import ExitStack

import pandas as pd

from iowitness.analysis.benchmarks import fio, fio_latency
from iowitness.analysis.judge import match_claims as matching, verdict_rules
from iowitness.analysis.judge.claim import UnparsableOutput
from iowitness.analysis.measure import stream_full
from iowitness.analysis.runs import host_workers, pooled_hosts
from iowitness.analysis.runs.dataset import clock_offset_ns
from iowitness.analysis.runs.hosts import Cluster, Host, timeline
from iowitness.errors import UsageError

ALL_CLIENTS = "All clients"
DEFAULT_PORT = 8765        # fio's (fio HOWTO, "Client/Server")
POOLED_ARGV = ["fio"]   # the pooled trace's command: fio's, with none of a job's options
TIME_COLUMNS = ("first_ns", "last_ns", "data_first_ns", "data_last_ns", "sync_end_ns", "close_end_ns")


def read_client_output(text: str) -> dict | None:
    """The fio client's JSON (the "<host> ..." lines fio prints before it are skipped), None when
    the text holds no fio JSON."""
    for match in re.finditer(r"^\{", text, re.MULTILINE):
        try:
            doc, _ = json.JSONDecoder().raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict) and "fio version" in doc:
            if not isinstance(doc.get("client_stats"), list) or not doc["client_stats"]:
                raise UsageError('the --claims output is fio JSON without "client_stats": it is not a fio '
                                 "--client run's; several traces are judged against a client's output, one trace "
                                 "against a plain fio run's")
            return doc
    return None


def judge_of(text: str):
    """The judge of `text` when it is a fio --client run's JSON output, a function (traces,
    tolerance) -> hosts.Cluster; None when it is not (UsageError when it is fio JSON of no client)."""
    doc = read_client_output(text)
    return None if doc is None else (lambda traces, tolerance: judge(doc, traces, tolerance))


def server_address(cmdline: list) -> tuple[str, int] | None:
    """(address, port) a `fio --server[=ARGS]` command line listens on; None when it is not one.
    An address of "" listens on every address."""
    for word in cmdline or []:
        word = str(word)
        if word == "--server":
            return "", DEFAULT_PORT
        if word.startswith("--server="):
            spec = word.split("=", 1)[1]
            spec = re.sub(r"^(ip|ip6|sock):", "", spec)
            address, _, port = spec.partition(",")
            return address, int(port) if port.isdigit() else DEFAULT_PORT
    return None


def _addresses(trace) -> set[tuple[str, int]]:
    found = set()
    for cmdline in [trace.meta.get("command")] + [p.get("cmdline") for p in trace.meta.get("attached") or []
                                                  if isinstance(p, dict)]:
        address = server_address(cmdline or [])
        if address:
            found.add(address)
    return found


def hosts_of(doc: dict) -> list[Host]:
    hosts: dict[tuple, Host] = {}
    for entry in doc["client_stats"]:
        if not isinstance(entry, dict) or entry.get("jobname") == ALL_CLIENTS:
            continue
        key = (str(entry.get("hostname") or ""), entry.get("port"))
        if key not in hosts:
            name = f"{key[0]}:{key[1]}" if key[1] is not None else key[0]
            hosts[key] = Host(name, key[0], key[1], [])
        hosts[key].entries.append(entry)
    return list(hosts.values())


def assign(hosts: list[Host], traces: list[tuple[str, object]]) -> None:
    """Give each host its trace: by the server address in the trace, else by host name."""
    free = list(traces)
    for host in hosts:
        exact = [(p, t) for p, t in free if (host.hostname, host.port) in _addresses(t)]
        wildcard = [(p, t) for p, t in free if any(a == "" and port == host.port for a, port in _addresses(t))
                    and str(t.meta.get("host") or "") == host.hostname]
        named = [(p, t) for p, t in free if str(t.meta.get("host") or "") == host.hostname]
        for candidates in (exact, wildcard, named):
            if len(candidates) == 1:
                host.path, host.trace = candidates[0]
                free.remove(candidates[0])
                break
    unmatched = [h.name for h in hosts if h.trace is None]
    if unmatched:
        seen = "; ".join(f"{p}: " + (", ".join(f"{a or '*'}:{port}" for a, port in sorted(_addresses(t)))
                                     or f"host {t.meta.get('host')}") for p, t in traces)
        raise UsageError(f"no trace for fio client host(s) {', '.join(unmatched)} (the traces are of {seen}); "
                         "trace each fio --server with iowitness attach --pid and give every trace")
    if free:
        raise UsageError(f"{', '.join(p for p, _ in free)}: no host of the fio client output is this trace's; "
                         f"the client ran on {', '.join(h.name for h in hosts)}")


def _argv(entries: list) -> list[str]:
    """A fio command line with the jobs as the server ran them (their options as fio reports
    them), so that the host's phases get their job names."""
    argv = ["fio"]
    for entry in entries:
        argv.append(f"--name={entry.get('jobname')}")
        argv += [f"--{k}={v}" for k, v in (entry.get("job options") or {}).items()]
    return argv


def _fio_doc(doc: dict, entries: list) -> str:
    return json.dumps({"fio version": doc.get("fio version"), "global options": doc.get("global options") or {},
                       "jobs": entries})


def judge(doc: dict, traces: list[tuple[str, object]], tolerance: float) -> Cluster:
    hosts = hosts_of(doc)
    assign(hosts, traces)
    for host in hosts:
        # an attached trace's command is the server's; its jobs came over the network
        host.trace.meta["command"], host.trace.meta["benchmark"] = _argv(host.entries), "fio"
    totals = [e for e in doc["client_stats"] if isinstance(e, dict) and e.get("jobname") == ALL_CLIENTS]
    total_claims = fio.parse(_fio_doc(doc, totals)) if totals else []
    all_verdicts = []
    with ExitStack() as stack:
        # each host's report and verdicts in a process of its own, on the machine's cores
        # (analysis/runs/host_workers.py), with the requests the all-clients latency asks of it
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="iowitness-hosts-"))
        results = host_workers.each(len(hosts), lambda k: _judge_host(hosts[k], doc, tolerance, total_claims,
                                                                      folder))
        requests = None
        for host, result in zip(hosts, results):
            if result is not None:   # judged in its own process
                host.verdicts = result["verdicts"]
                host_workers.with_report(host.trace, result["report"])
                requests = (requests or []) + [pooled_hosts.saved_requests(result["requests"])]
        base = min(clock_offset_ns(h.trace.meta) or 0 for h in hosts)
        pooled = None
        for claim in total_claims:
            if not _is_latency(claim):
                all_verdicts.append(_judge_total(claim, hosts, base, tolerance))
                continue
            if pooled is None:   # every host's requests on one clock, made once from the hosts'
                # own reports (analysis/runs/pooled_hosts.py); only judged, never shown
                pooled = stack.enter_context(pooled_hosts.open_pooled(
                    [(h.path, h.trace) for h in hosts], POOLED_ARGV, "cluster", requests=requests))
            all_verdicts.append(_judge_total_latency(claim, hosts, pooled, tolerance))
    return Cluster(hosts, all_verdicts, timeline(hosts, base), doc)


def _judge_host(host: Host, doc: dict, tolerance: float, total_claims: list, folder: str) -> dict | None:
    """The host's own claims judged against its own trace; in a host's own process, also its
    report's parts and the requests the all-clients latency claims will ask of it (saved in
    `folder`), handed back (None in the command's own process: nothing to hand back)."""
    try:
        claims = fio.parse(_fio_doc(doc, host.entries))
    except UnparsableOutput:   # a host whose jobs moved no data: nothing it claims
        claims = []
    argv = host.trace.meta["command"]
    if any(_is_latency(claim) for claim in total_claims):
        # what the all-clients latency pools of this host's requests, in the pass of its own
        host.trace.report().evidence.pooled_with = pooled_hosts.POOLED_WITH
    host.verdicts = matching.match(host.trace.report(), claims, "fio", argv, tolerance, host.trace.missing,
                                   trace=host.trace)
    if not host_workers.in_child():
        return None
    asked = {(tuple(sorted({int(p) for v in _same_figure(host, claim) for p in v.phases})), claim.direction)
             for claim in total_claims if _is_latency(claim)}
    requests = pooled_hosts.save_requests(host.trace.report(), [(list(p), d) for p, d in sorted(
        asked, key=repr) if p], folder)
    result = {"verdicts": host.verdicts, "report": host_workers.report_parts(host.trace), "requests": requests}
    stream_full.release(host.trace)
    return result


def _aligned_rows(host: Host, phases: list[int], base: int) -> pd.DataFrame:
    table = host.trace.report().phases
    rows = table[table["phase"].isin(phases)].copy()
    shift = (clock_offset_ns(host.trace.meta) or 0) - base
    for column in TIME_COLUMNS:
        rows[column] = rows[column] + shift
    rows["host"] = host.name
    return rows


def _is_latency(claim) -> bool:
    """fio's clat/lat figures of a job (issue 21): judged per host, never added into a rate."""
    return "fio_latency" in claim.extra


def _same_figure(host: Host, claim) -> list:
    """The host's own verdicts on the figure an all-clients claim sums: the same group and
    direction, a rate for a rate, a latency for a latency."""
    return [v for v in host.verdicts if _is_latency(v.claim) == _is_latency(claim)
            and v.claim.direction == claim.direction and v.claim.extra.get("groupid") == claim.extra.get("groupid")]


def _judge_total(claim, hosts: list[Host], base: int, tolerance: float):
    """One all-clients claim against the phases each host's own claims of that group and
    direction were matched to, on the common clock."""
    parts = [_aligned_rows(host, v.phases, base) for host in hosts for v in _same_figure(host, claim)]
    rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if rows.empty:
        return verdict_rules.judge(claim, pd.DataFrame({"phase": []}), "calls", tolerance)
    verdict = verdict_rules.judge(claim, rows, "calls", tolerance, combine="span",
                                  notes=(_timeline_note(rows, claim.direction, claim), _phases_by_host(rows)))
    return verdict


def _phases_by_host(rows: pd.DataFrame) -> str:
    """Which host each phase number of an all-clients verdict is of: each is numbered in its
    own host's trace, so "phase 1, 1, 1" alone would not say."""
    named = rows.groupby("host", sort=False)["phase"].apply(lambda p: ", ".join(str(int(x)) for x in p))
    return "phases by host (each numbered in its own host's trace): " + "; ".join(
        f"{host} phase {phases}" for host, phases in named.items())


def _judge_total_latency(claim, hosts: list[Host], pooled, tolerance: float):
    """An all-clients latency figure (fio's statistics over every host's requests) against the
    same statistics over every host's requests of that group and direction, pooled on one
    clock (analysis/runs/pooled_hosts.py): the phases each host's own latency claim was matched to."""
    parts, engines, counted = [], [], set()
    for k, host in enumerate(hosts):
        for v in _same_figure(host, claim):
            table = host.trace.report().phases
            parts.append(pooled.rows_of(k, table[table["phase"].isin(v.phases)]))
            engines.append(v.claim.extra.get("ioengine"))
            counted.add(host.name)
    rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame({"phase": []})
    if "ioengine" not in claim.extra and engines and len(set(engines)) == 1 and engines[0]:
        claim.extra["ioengine"] = engines[0]   # "All clients" carries no job options
    verdict = fio_latency.judge(claim, rows, pooled.trace, pooled.report, tolerance, pooled.trace.missing)
    verdict.reasons.append(f"over every host's requests of the group pooled on one clock ({len(rows)} phases of "
                           f"{len(counted)} hosts; phase numbers of that pooled trace, not of each host's)")
    return verdict


def _timeline_note(rows: pd.DataFrame, direction, claim) -> str:
    from iowitness.analysis.measure.figures import figures_of, fmt

    starts = rows.groupby("host")["data_first_ns"].min()
    ends = rows.groupby("host")["data_last_ns"].max()
    skew = (starts.max() - starts.min()) / 1e6
    union = figures_of(rows, direction, "bytes", combine="wall")["calls"]
    return (f"on one clock (each trace's wall-clock offset), the {len(starts)} hosts started within {skew:.1f} ms "
            f"of each other and ended within {(ends.max() - ends.min()) / 1e6:.1f} ms; all their bytes over the "
            f"union of their windows, first call on any host to last on any: {fmt(union, 'bytes')} (fio's figure "
            f"is over the longest host's own time)")
