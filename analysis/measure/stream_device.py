"""The device view (analysis/measure/device.py) of a trace read block by block: what it needs of the
events is gathered per phase and per thread as the blocks go by, never kept per event.

    facts = stream_device.DeviceFacts(phases, trace)
    for events, a in assigned.blocks():                # stream_assign's blocks, in time order
        facts.add(events, a)
    table = stream_device.per_phase(trace, phases, facts)   # == device.per_phase(trace, phases, assigned)

The view reads the trace's block and sched_switch records (kept in memory, as a StreamedTrace
has them: one per device request or context switch, far fewer than the calls) and, of the
events, only what device.DeviceFacts gathers: the processes that made them, each phase's first
device number and threads, its calls' time in its window and the call each off-CPU stretch
of its threads fell in. device.per_phase gathers the same facts from its whole events table
as one block, and both finish with device.from_facts: one source of truth, so the streamed
view is the same for any block size (tests/unit/test_stream_device.py). Every figure summed
over calls or stretches is an integer count of nanoseconds, exact in any order of the blocks.

One pass over the blocks, after the phase table: the facts need its windows (the timed fsync
and close are known only at its end).
"""

from __future__ import annotations

import pandas as pd

from iowitness.analysis.measure.device import DeviceFacts, from_facts

__all__ = ["DeviceFacts", "facts", "per_phase"]


def facts(trace, phases: pd.DataFrame, assigned) -> DeviceFacts:
    """The facts of every block of `assigned` (its blocks(): (events, assigned rows) in time order)."""
    gathered = DeviceFacts(phases, trace)
    for events, a in assigned.blocks():
        gathered.add(events, a)
    return gathered


def per_phase(trace, phases: pd.DataFrame, facts: DeviceFacts) -> pd.DataFrame:
    """device.per_phase(trace, phases, assigned), from the facts of all the blocks of `assigned`;
    `trace` may be a StreamedTrace (its events are never read)."""
    return from_facts(trace, phases, facts)
