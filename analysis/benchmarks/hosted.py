"""The benchmarks that run over several hosts, one trace per host (analysis/runs/hosts.py): a module
each, in the order their outputs are recognised.

Each module provides `judge_of(text)`: for the output of its benchmark's driver (the IOzone
master, the fio client) a function (traces, tolerance) -> hosts.Cluster, else None. Kept apart
from the registry of benchmarks.__init__ because these judges use the matching, which uses that
registry.

Example: `judge_of(master_text)([("A.iwt", a), ("B.iwt", b)], 0.05)` gives a hosts.Cluster.
"""

from __future__ import annotations

from iowitness.analysis.benchmarks import fio_hosts, iozone_cluster
from iowitness.errors import UsageError

HOSTED = (iozone_cluster, fio_hosts)


def judge_of(text: str):
    """The judge of a run over several hosts whose driver printed `text`; UsageError in one line
    when no benchmark of HOSTED printed it."""
    for module in HOSTED:
        judge = module.judge_of(text)
        if judge is not None:
            return judge
    raise UsageError("the --claims output is neither a fio --client run's JSON nor an IOzone cluster-mode master's "
                     "output: give the output of fio --client ... --output-format=json, or of iozone -+m CLIENTS ...")
