"""A START that claims this iowitness's record layout version must describe that layout.

The reader builds its dtypes from START's description (a trace stays readable after the probe's
layout changes), so a START with valid CRCs whose fields were swapped (offset read as bytes) or
whose op names were exchanged (read called write) would be read as a genuine trace, every record
misread. For the layout version this iowitness was built with (probes/events.h
IOW_LAYOUT_VERSION), the description is known: its records' fields must sit where events.h puts
them, and every op and fact kind it names must carry events.h's name. A record kind the trace
does not describe (the device view, in traces made before it) and op numbers it does not name
are not asked for. Another version is read by its own description, as before.
"""

from __future__ import annotations

from iowitness.collector.format.traceformat import describe_layout
from iowitness.probes.layout import layout

_RECORDS = ("event", "meta", "block", "offcpu", "output")
_NAMES = ("ops", "meta_kinds")


def check(described: dict) -> None:
    """ValueError naming the first difference, when `described` (START's "layout") claims the
    known version and differs from it."""
    known = describe_layout(layout())
    if described.get("version") != known["version"]:
        return
    for kind in _RECORDS:
        if kind not in described:
            continue
        theirs, ours = described[kind], known[kind]
        if theirs.get("itemsize") != ours["itemsize"]:
            raise ValueError(f"its {kind} records are {theirs.get('itemsize')} bytes, where layout version "
                             f"{known['version']} makes them {ours['itemsize']}")
        fields = {f[0]: f[1:] for f in theirs.get("fields") or [] if isinstance(f, list) and f}
        for name, *where in ours["fields"]:
            if fields.get(name) != where:
                raise ValueError(f"its {kind} field {name} is described as {fields.get(name)}, where layout "
                                 f"version {known['version']} has {where}")
    for table in _NAMES:
        for number, name in (described.get(table) or {}).items():
            if number in known[table] and known[table][number] != name:
                raise ValueError(f"its {table} name {number} {name!r}, where layout version {known['version']} "
                                 f"names it {known[table][number]!r}")
