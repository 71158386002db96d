"""The record codec (collector/format/codec.py): every byte of every record comes back, whatever the
values; a damaged block is refused, never decoded into wrong records."""

import numpy as np
import pytest
import zstandard

from iowitness.collector.format import codec
from iowitness.probes.layout import layout

EVENT, META = layout().event, layout().meta
U64_MAX = np.iinfo(np.uint64).max


def round_trip(records: np.ndarray) -> np.ndarray:
    block = codec.encode(records)
    assert codec.rows_of(block) == len(records)
    return codec.decode(block, records.dtype)


def assert_same_bytes(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and len(got) == len(want)
    assert got.tobytes() == want.tobytes()


def random_bits(rng, rows: int, dtype: np.dtype) -> np.ndarray:
    return np.frombuffer(rng.bytes(rows * dtype.itemsize), dtype).copy()


def event_like(rng, rows: int) -> np.ndarray:
    """Batches shaped like real ones: rising start times, a few files, sequential or random
    offsets, mostly 4 KiB returns with errors mixed in, several threads."""
    ev = np.zeros(rows, EVENT)
    ev["start_ns"] = 10**12 + np.cumsum(rng.integers(100, 5000, rows))
    ev["latency_ns"] = rng.lognormal(7, 1.5, rows).astype(np.uint64)
    ev["ino"] = rng.choice([12, 13, 2**40 + 7], rows)
    ev["offset"] = np.where(rng.random(rows) < 0.5, np.arange(rows) * 4096,
                            rng.integers(-1, 2**30, rows))
    ev["requested"] = rng.choice([4096, 0, 2**64 - 4096], rows).astype(np.uint64)
    ev["ret"] = rng.choice([4096, 0, -4, -28, 3], rows)
    ev["tgid"] = 4000
    ev["tid"] = rng.choice([4000, 4001, 4002], rows)
    ev["dev"] = (259 << 20) | 3
    ev["fd"] = rng.choice([3, 4, -1], rows)
    ev["flags"] = rng.choice([0, 0o100 | 0o2, 0x4000], rows)
    ev["op"] = rng.integers(1, 25, rows)
    return ev


@pytest.mark.parametrize("seed", range(6))
def test_random_bits_in_every_field_round_trip(seed):
    # GIVEN records whose every byte is random, padding included (any value of any field)
    rng = np.random.default_rng(seed)
    for rows in (2, 3, 64, 1000, 4099):
        records = random_bits(rng, rows, EVENT)
        # WHEN encoded and decoded THEN every byte comes back
        assert_same_bytes(round_trip(records), records)


@pytest.mark.parametrize("seed", range(6))
def test_batches_shaped_like_real_ones_round_trip(seed):
    # GIVEN event batches with the regularities the codec exploits, and exceptions to them
    rng = np.random.default_rng(100 + seed)
    records = event_like(rng, int(rng.integers(1, 20000)))
    # WHEN encoded and decoded THEN every byte comes back
    assert_same_bytes(round_trip(records), records)


def test_edge_values_round_trip():
    # GIVEN the extremes: max u64, min and max s64, wrap-around steps, non-monotonic start times
    ev = np.zeros(6, EVENT)
    ev["start_ns"] = [U64_MAX, 0, 5, 3, U64_MAX - 1, 1]
    ev["latency_ns"] = [0, U64_MAX, 0, U64_MAX, 1, 2]
    ev["offset"] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0, -1, 4096]
    ev["ret"] = [-1, -4095, np.iinfo(np.int64).min, 4096, 0, np.iinfo(np.int64).max]
    ev["requested"] = [2**63, 2**63 - 1, 0, U64_MAX, 1, 2]
    ev["fd"] = [-100, -1, 2**31 - 1, -2**31, 0, 3]
    ev["tgid"] = ev["tid"] = ev["dev"] = ev["flags"] = [0, 2**32 - 1, 1, 2**31, 7, 7]
    ev["op"] = ev["ring"] = [65535, 0, 1, 2, 3, 65535]
    for rows in range(len(ev) + 1):
        # WHEN any prefix (0 to 6 records) is encoded and decoded THEN it comes back
        assert_same_bytes(round_trip(ev[:rows]), ev[:rows])


def test_an_empty_and_a_one_record_batch_round_trip():
    # GIVEN no record, then one with large values
    one = np.zeros(1, EVENT)
    one["start_ns"], one["ret"], one["offset"] = U64_MAX, -28, -1
    # WHEN encoded and decoded THEN they come back
    assert_same_bytes(round_trip(one[:0]), one[:0])
    assert_same_bytes(round_trip(one), one)


def test_fact_records_with_text_round_trip():
    # GIVEN facts whose path and comm are NUL-terminated text with garbage after the NUL
    rng = np.random.default_rng(7)
    facts = np.zeros(50, META)
    facts["ts_ns"] = np.sort(rng.integers(0, 2**62, 50))
    facts["kind"], facts["dirfd"] = 1, -100
    for i, fact in enumerate(facts):
        raw = f"/mnt/bench/iozone.DUMMY.{i}".encode()
        fact["path"][:len(raw)] = np.frombuffer(raw, np.uint8)
        fact["path"][len(raw) + 1:len(raw) + 5] = rng.integers(1, 255, 4)
        fact["comm"][:6] = np.frombuffer(b"iozone", np.uint8)
    # WHEN encoded and decoded THEN every byte comes back
    assert_same_bytes(round_trip(facts), facts)


def test_any_structured_dtype_round_trips_holes_and_floats_included():
    # GIVEN a dtype another chunk kind might use: unaligned fields, a hole, a float, a byte array
    odd = np.dtype({"names": ["a", "b", "x", "name", "n"],
                    "formats": ["<u2", "<i8", "<f8", ("u1", (5,)), "<u4"],
                    "offsets": [0, 3, 12, 20, 26], "itemsize": 33})
    rng = np.random.default_rng(3)
    for rows in (0, 1, 2, 777):
        records = random_bits(rng, rows, odd)
        # WHEN encoded and decoded THEN every byte comes back, the hole's bytes too
        assert_same_bytes(round_trip(records), records)


def test_records_given_as_raw_bytes_are_encoded_like_the_array():
    # GIVEN the bytes of some records, as the ring buffer hands them over
    records = event_like(np.random.default_rng(5), 300)
    # WHEN encoded from the bytes THEN the block is the array's
    assert codec.encode(records.tobytes(), EVENT) == codec.encode(records)


def test_regular_batches_shrink_to_a_few_bytes_per_event():
    # GIVEN 32 Ki sequential 4 KiB reads of one thread, as fio makes them
    rng = np.random.default_rng(11)
    ev = np.zeros(32768, EVENT)
    ev["start_ns"] = 10**12 + np.cumsum(rng.integers(2500, 4000, len(ev)))
    ev["latency_ns"] = rng.integers(900, 3000, len(ev))
    ev["offset"] = np.arange(len(ev)) * 4096
    ev["requested"] = ev["ret"] = 4096
    ev["tgid"] = ev["tid"] = 4242
    ev["ino"], ev["dev"], ev["fd"], ev["op"] = 12, (8 << 20) | 1, 3, 7
    # WHEN encoded THEN it takes well under 16 bytes per event (timing jitter is what is left)
    assert len(codec.encode(ev)) / len(ev) < 6


def test_a_block_decoded_with_another_layout_is_refused():
    # GIVEN a block of event records
    block = codec.encode(np.zeros(3, EVENT))
    # WHEN decoded as facts THEN CodecError names the mismatch
    with pytest.raises(codec.CodecError, match="does not match the layout"):
        codec.decode(block, META)


@pytest.mark.parametrize("damage", ["body", "column", "rows", "cut"])
def test_a_damaged_block_is_refused_not_misread(damage):
    # GIVEN a block damaged in its body, its column table, its row count, or cut short
    records = event_like(np.random.default_rng(1), 500)
    block = bytearray(codec.encode(records))
    if damage == "body":
        block[-6:] = b"\xff" * 6
    elif damage == "column":                # no such transform, in a frame that decompresses
        inside = bytearray(zstandard.ZstdDecompressor().decompress(bytes(block[codec.HEAD.size:])))
        inside[0] = 9
        block = block[:codec.HEAD.size] + zstandard.ZstdCompressor().compress(bytes(inside))
    elif damage == "rows":
        block[0] ^= 0x01                    # one record more or less than the body holds
    else:
        block = block[:len(block) // 2]
    # WHEN decoded THEN CodecError, never records that were not written
    with pytest.raises(codec.CodecError):
        codec.decode(bytes(block), EVENT)


@pytest.mark.parametrize("seed", range(4))
def test_blocks_decoded_into_columns_equal_the_records_field_by_field(seed):
    # GIVEN two blocks (random bits, and real-looking batches with constant and delta columns)
    rng = np.random.default_rng(200 + seed)
    first, second = random_bits(rng, 777, EVENT), event_like(rng, 5000)
    wanted = [name for name in EVENT.names if not name.startswith("pad")]
    columns = {name: np.full(len(first) + len(second), 0x5A, EVENT.fields[name][0]) for name in wanted}
    # WHEN both are decoded, one after the other, into one array per field
    at = codec.decode_columns(codec.encode(first), EVENT, columns, 0)
    codec.decode_columns(codec.encode(second), EVENT, columns, at)
    # THEN each column holds exactly that field of the records, in order
    both = np.concatenate([first, second])
    for name in wanted:
        assert columns[name].dtype == both[name].dtype
        assert np.array_equal(columns[name], both[name]), name
