"""A benchmark run over several hosts, one trace per host: what every such run gives, whichever
benchmark it is (the benchmark's own rules are in analysis/benchmarks/: fio --client with a fio
--server per host, fio_hosts.py; IOzone's cluster mode, iozone_cluster.py; the registry of both,
hosted.py).

Each host's trace is recorded on its own clock; the hosts are put on one clock by each trace's
monotonic times plus the wall-clock offset it measured when recording began. On one machine that
clock is exact; across hosts it is as good as their clock synchronisation (NTP: about a
millisecond), which is said.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from iowitness.analysis.runs.dataset import clock_offset_ns


@dataclass
class Host:
    """One host of the run and its trace."""
    name: str                  # as the benchmark named it: "127.0.0.2:8765", "h2:/work/a"
    hostname: str
    port: int | None
    entries: list              # the benchmark's own records of this host (fio: its client_stats)
    trace: Any = None          # its Trace (analysis/read/run.py)
    path: str = ""
    verdicts: list = field(default_factory=list)


@dataclass
class Cluster:
    """The run judged: each host's own verdicts, and the verdicts on figures over every host."""
    hosts: list[Host]
    all_clients: list          # verdicts on the figures over every host (fio's "All clients")
    timeline: pd.DataFrame     # per host: first and last data call on the common clock
    doc: dict
    # what the judge keeps open for the report to be printed (a merged trace's temporary files)
    resources: ExitStack = field(default_factory=ExitStack)

    def close(self) -> None:
        self.resources.close()


def timeline(hosts: list[Host], base: int) -> pd.DataFrame:
    """Per host: its first and last data call on the common clock (ms from the first on any
    host), its phases and bytes; `base` is the earliest wall-clock offset of the traces."""
    rows = []
    for host in hosts:
        phases = host.trace.report().phases
        data = phases[phases["ops"] > 0]
        shift = (clock_offset_ns(host.trace.meta) or 0) - base
        rows.append({"host": host.name, "trace": host.path, "phases": len(phases),
                     "first call ms": (data["data_first_ns"].min() + shift) / 1e6 if len(data) else float("nan"),
                     "last call ms": (data["data_last_ns"].max() + shift) / 1e6 if len(data) else float("nan"),
                     "bytes": int(data["bytes"].sum())})
    frame = pd.DataFrame(rows)
    if len(frame) and frame["first call ms"].notna().any():
        zero = frame["first call ms"].min()
        frame["first call ms"] = (frame["first call ms"] - zero).round(3)
        frame["last call ms"] = (frame["last call ms"] - zero).round(3)
    return frame
