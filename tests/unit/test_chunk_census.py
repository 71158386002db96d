"""Whole chunks cut out, repeated or moved, of every kind, with their framing and CRCs intact:
END's census (collector/format/tracecensus.py) and counters make each read as damaged, and every
reading command stays within its documented exits with no traceback (issue 32).

Base traces and the judge are tests/support/trace_mutants.py's (the real writer; show, report
--json, check and export run in this process on each mutant).
"""

from __future__ import annotations

import pytest

from iowitness import cli
from iowitness.collector.format.traceformat import CHUNK, COUNTERS, END, KIND_NAMES, START, SUMMARY
from iowitness.collector.format.tracereader import read
from tests.support import trace_mutants


def _cut(data, chunks, k):
    at, _, length = chunks[k]
    return data[:at] + data[at + CHUNK.size + length:]


def _repeated(data, chunks, k):
    at, _, length = chunks[k]
    whole = data[at:at + CHUNK.size + length]
    return data[:at] + whole + data[at:]


def _swapped(data, chunks, k):
    """Chunk k and the one after it, in each other's place (None when they are the same bytes)."""
    (at, _, a), (bt, _, b) = chunks[k], chunks[k + 1]
    first, second = data[at:at + CHUNK.size + a], data[bt:bt + CHUNK.size + b]
    return None if first == second else data[:at] + second + first + data[bt + CHUNK.size + b:]


OPERATIONS = {"cut": _cut, "repeated": _repeated, "swapped": _swapped}


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bases")
    data = trace_mutants.write_bases(folder)
    return folder, data, trace_mutants.originals(folder, data)


def _mutants(data: dict):
    """(base, kind name, operation, bytes) for every chunk but START and END, every operation."""
    for base, whole in sorted(data.items()):
        chunks = trace_mutants.chunks_of(whole)
        for k, (_, kind, _) in enumerate(chunks):
            if kind in (START, END):
                continue
            for how, make in OPERATIONS.items():
                if how == "swapped" and chunks[k + 1][1] == END:
                    continue   # moving END's place is cutting what follows it: the truncation tests' case
                mutant = make(whole, chunks, k)
                if mutant is not None:
                    yield base, KIND_NAMES[kind], how, mutant


def test_every_whole_chunk_cut_repeated_or_moved_reads_as_damaged(bases, tmp_path):
    folder, data, _ = bases
    seen, undetected = set(), []
    for n, (base, kind, how, mutant) in enumerate(_mutants(data)):
        path = tmp_path / f"m{n}.iwt"
        path.write_bytes(mutant)
        # WHEN the mutant is read THEN it reads as incomplete, saying what is missing
        meta = read(path).meta
        if meta["complete"] or not meta["records_missing"]:
            undetected.append((base, kind, how))
        seen.add((kind, how))
    assert undetected == []
    # AND every kind a trace holds was cut, repeated and moved
    kinds = {kind for kind, _ in seen}
    assert kinds >= {"events", "facts", "output", "counters", "block", "offcpu", "samples", "summary"}, kinds
    assert all((kind, how) in seen for kind in kinds for how in ("cut", "repeated"))


def test_every_reading_command_takes_each_kind_of_mutant_in_its_stride(bases, tmp_path):
    folder, data, original = bases
    done = set()
    for n, (base, kind, how, mutant) in enumerate(_mutants(data)):
        if (kind, how) in done:
            continue   # one mutant of each kind and operation through the commands: enough, and fast
        done.add((kind, how))
        path = tmp_path / f"m{n}.iwt"
        path.write_bytes(mutant)
        # WHEN show, report --json, check and export read it
        verdict = trace_mutants.judge(path, base, f"{how} {kind}", original[base], tmp_path)
        # THEN no traceback, no hang, a documented exit, and never a silent loss
        assert verdict.problems == [] and verdict.outcome == "damaged", (base, kind, how, verdict.problems)


def test_a_summary_trace_without_its_summary_chunks_is_not_a_complete_trace_of_nothing(bases, tmp_path, capsys):
    folder, data, _ = bases
    whole = data["summary"]
    chunks = trace_mutants.chunks_of(whole)
    # GIVEN the --summary trace with every SUMMARY chunk taken out
    kept = b"".join(whole[at:at + CHUNK.size + length] for at, kind, length in chunks if kind != SUMMARY)
    path = tmp_path / "no-summary.iwt"
    path.write_bytes(whole[:chunks[0][0]] + kept)
    # WHEN it is read and checked
    meta = read(path).meta
    code = cli.main(["show", str(path)])
    # THEN it reads as incomplete, naming the summary chunks written and not held
    assert meta["complete"] is False and "2 summary chunk(s) written, 0 held" in meta["records_missing"]
    assert code == 0 and "INCOMPLETE (records counted at the end are missing" in capsys.readouterr().out


def test_the_loss_shown_is_end_s_when_the_last_counters_chunk_is_cut(bases, tmp_path):
    folder, data, _ = bases
    whole = data["dd"]
    chunks = trace_mutants.chunks_of(whole)
    last = max(k for k, c in enumerate(chunks) if c[1] == COUNTERS)
    path = tmp_path / "no-counters.iwt"
    path.write_bytes(_cut(whole, chunks, last))
    trace = read(path)
    assert trace.meta["complete"] is False and "1 counters chunk(s) written, 0 held" in trace.meta["records_missing"]
    assert trace.counters == read(folder / "dd.iwt").counters


# ---- a START that lies about the records ---------------------------------------------------------

def _with_start(path, data, change) -> None:
    import json

    from iowitness.collector.format.tracewriter import chunk_head

    at, _, length = trace_mutants.chunks_of(data)[0]
    start = json.loads(data[at + CHUNK.size:at + CHUNK.size + length])
    change(start["layout"])
    payload = json.dumps(start).encode()
    path.write_bytes(data[:at] + chunk_head(START, payload) + payload + data[at + CHUNK.size + length:])


def _swap_fields(lay):
    fields = {f[0]: f for f in lay["event"]["fields"]}
    fields["offset"][2], fields["requested"][2] = fields["requested"][2], fields["offset"][2]


def _swap_ops(lay):
    number = {name: k for k, name in lay["ops"].items()}
    lay["ops"][number["read"]], lay["ops"][number["write"]] = "write", "read"


@pytest.mark.parametrize("change, why", [(_swap_fields, "event field offset"), (_swap_ops, "ops name")],
                         ids=["fields swapped", "read and write renamed"])
def test_a_start_that_describes_this_layout_version_otherwise_is_refused(bases, tmp_path, change, why):
    from iowitness.errors import BadTrace

    folder, data, _ = bases
    # GIVEN dd's trace whose START, its CRC good, swaps two fields' offsets or renames read and write
    path = tmp_path / "forged.iwt"
    _with_start(path, data["dd"], change)
    # WHEN read THEN refused in one line naming what differs from the layout version it claims
    with pytest.raises(BadTrace, match=f"broken START chunk .*{why}") as caught:
        read(path)
    assert "\n" not in str(caught.value)
    # AND through the command line: exit 6, one line
    assert cli.main(["show", str(path)]) == 6
