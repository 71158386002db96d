"""A small trace that declares far more events than its size suggests is refused by what it
declares, before any event is decoded (analysis/memory_guard.check_declared, the reader's
`afford`), in one line: never a MemoryError traceback, never gigabytes taken (issue 32).

The crafted trace is made of the real writer's chunks: one EVENTS chunk of identical events
(its columns compress to almost nothing) repeated, as an attacker would repeat it.
"""

from __future__ import annotations

import numpy as np
import pytest

from iowitness import cli
from iowitness.analysis.read import memory_guard
from iowitness.analysis.read.run import load
from iowitness.collector.format import codec
from iowitness.collector.format.traceformat import CHUNK, EVENTS
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.errors import TooLarge
from iowitness.probes.layout import layout
from tests.support import trace_mutants

ROWS = 65536
COPIES = 40          # 2.6 million events declared in a file of a few tens of kB


@pytest.fixture
def crafted(tmp_path):
    path = tmp_path / "small.iwt"
    events = np.zeros(ROWS, layout().event)
    events["start_ns"] = 1_000_000
    with TraceWriter(path, {"command": ["crafted"]}) as writer:
        writer.write_events(events)
        writer.flush()
    data = path.read_bytes()
    at, _, length = next(c for c in trace_mutants.chunks_of(data) if c[1] == EVENTS)
    chunk = data[at:at + CHUNK.size + length]
    path.write_bytes(data[:at] + chunk * COPIES + data[at + CHUNK.size + length:])
    return path


def test_a_trace_declaring_more_events_than_memory_holds_is_refused_before_decoding(crafted, monkeypatch):
    # GIVEN a file of a few tens of kB declaring 2.6 million events (the reader's ratio bound
    # keeps the first ~0.9 million of them: about 220 MB in memory), and 100 MB available
    size = crafted.stat().st_size
    assert size < 200_000
    monkeypatch.delenv(memory_guard.ENV, raising=False)
    monkeypatch.setattr(memory_guard, "available_bytes", lambda *a: 100 << 20)

    def no_decoding(*args, **kwargs):
        raise AssertionError("an event was decoded")

    monkeypatch.setattr(codec, "decode_columns", no_decoding)
    # WHEN it is loaded THEN refused by what it declares, naming the count, before any decoding
    with pytest.raises(TooLarge, match=r"declares [\d,]+ events") as caught:
        load(crafted)
    assert "\n" not in str(caught.value) and "block by block" in str(caught.value)
    declared = int(str(caught.value).split("declares ")[1].split(" ")[0].replace(",", ""))
    assert declared * memory_guard.LOADED_BYTES_PER_EVENT > 100 << 20 and declared % ROWS == 0
    # AND the file-size check alone would have let it through
    memory_guard.check(crafted, available=100 << 20)


def test_report_on_it_reads_it_block_by_block(crafted, monkeypatch, capsys):
    # GIVEN the crafted trace and 100 MB available WHEN `report` reads it (block by block, as
    # every command does) THEN nothing is refused for its size: it is reported as the damaged
    # trace it is, one warning line, no traceback
    monkeypatch.delenv(memory_guard.ENV, raising=False)
    monkeypatch.setattr(memory_guard, "available_bytes", lambda *a: 100 << 20)
    code = cli.main(["report", str(crafted)])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in err and "phases" in out


def test_with_enough_memory_it_is_read(crafted, monkeypatch):
    monkeypatch.setattr(memory_guard, "available_bytes", lambda *a: 64 << 30)
    monkeypatch.delenv(memory_guard.ENV, raising=False)
    trace = load(crafted)
    assert trace.events.shape[0] > ROWS and trace.meta["complete"] is False
