"""--summary mode: the probe's per-CPU aggregates read back and added up, one row per key.

The probe keeps one struct iow_summary per (file, process, phase, syscall) and CPU
(probes/events.h): `summary_slots` gives each key a slot number, the per-CPU array `summary`
holds the values at that number. Reading it is one walk of the keys; the collector does it every few seconds and
at the end, and the trace keeps the last snapshot (a SUMMARY chunk), so a summary trace
holds a few rows per phase, whatever the number of calls.
"""

from __future__ import annotations

import numpy as np

from iowitness.probes.layout import layout

# combined across CPUs by max (the rest are sums, except first_start_ns: earliest non-zero)
_MAX_FIELDS = ("latency_max_ns", "last_end_ns")
_DROPPED = ("pad0", "next_offset")   # per-CPU bookkeeping, meaningless once CPUs are added


def record_dtype() -> np.dtype:
    """One summary row: the key's fields, then the value's, without per-CPU bookkeeping."""
    key, value = layout().structs["iow_summary_key"], layout().structs["iow_summary"]
    fields = [(n, key.fields[n][0]) for n in key.names if n not in _DROPPED]
    fields += [(n, value.fields[n][0]) for n in value.names if n not in _DROPPED]
    return np.dtype(fields)


def combine_values(per_cpu: np.ndarray) -> dict:
    """One key's per-CPU values (array of iow_summary) as one set of totals."""
    used = per_cpu[per_cpu["calls"] > 0]
    row = {}
    for name in per_cpu.dtype.names:
        if name in _DROPPED:
            continue
        column = used[name]
        if name in _MAX_FIELDS:
            row[name] = column.max(initial=0)
        elif name == "first_start_ns":
            row[name] = column.min() if len(column) else 0
        else:
            row[name] = column.sum(axis=0)
    return row


def combine(slots_map, values_map, cpus: int) -> np.ndarray:
    key_dtype, value_dtype = layout().structs["iow_summary_key"], layout().structs["iow_summary"]
    stride = (value_dtype.itemsize + 7) & ~7   # the kernel hands per-CPU values 8-byte aligned
    per_cpu_dtype = np.dtype({"names": list(value_dtype.names),
                              "formats": [value_dtype.fields[n][0] for n in value_dtype.names],
                              "offsets": [value_dtype.fields[n][1] for n in value_dtype.names],
                              "itemsize": stride})
    keys = slots_map.keys(key_dtype.itemsize)
    out = np.zeros(len(keys), dtype=record_dtype())
    filled = 0
    for raw_key in keys:
        number = slots_map.lookup(raw_key, 4)
        raw = values_map.lookup(number, stride * cpus) if number is not None else None
        if raw is None:  # removed between the walk and the lookup: nothing removes keys, but be safe
            continue
        key = np.frombuffer(raw_key, dtype=key_dtype)[0]
        row = out[filled]
        for name in out.dtype.names:
            if name in key_dtype.names:
                row[name] = key[name]
        for name, value in combine_values(np.frombuffer(raw, dtype=per_cpu_dtype)).items():
            row[name] = value
        filled += 1
    out = out[:filled]
    return out[np.lexsort((out["op"], out["epoch"], out["tgid"], out["ino"], out["dev"]))]
