"""The event area (collector/eventarea.py): how its budget is shared out between CPUs, and how
the collector reads it."""

import numpy as np

from iowitness.collector import eventarea
from iowitness.collector.eventarea import MIN_EVENTS_PER_CPU, events_per_cpu

RECORD = 72


def test_the_budget_is_split_between_cpus_and_rounded_up_to_a_power_of_two():
    # 64 MiB over 2 CPUs is 466,033 records each: rounded up to 2^19
    assert events_per_cpu(64 << 20, 2, RECORD) == 1 << 19
    # over 64 CPUs, 14,563 each: 2^14
    assert events_per_cpu(64 << 20, 64, RECORD) == 1 << 14


def test_a_tiny_budget_still_gets_the_smallest_ring():
    assert events_per_cpu(4096, 2, RECORD) == MIN_EVENTS_PER_CPU
    assert events_per_cpu(0, 1, RECORD) == MIN_EVENTS_PER_CPU
    # a power of two itself: the probe masks positions with it
    assert MIN_EVENTS_PER_CPU & (MIN_EVENTS_PER_CPU - 1) == 0


class _SilentDoorbell:
    def read(self):
        return None

    def close(self):
        pass


def test_records_of_both_cpus_come_out_merged_by_start_time_wrap_included():
    # GIVEN an event area of 2 CPUs x 8 records in plain shared memory, laid out as the probe
    # writes it: CPU 0 has written 11 records (3 of them after wrapping), CPU 1 five, their
    # start times interleaved; the reader has already taken CPU 0's first 4
    import mmap
    import os

    from iowitness.probes.layout import layout
    record, cpus, per_cpu = layout().event, 2, 8
    area_fd, positions_fd = os.memfd_create("area"), os.memfd_create("positions")
    os.ftruncate(area_fd, mmap.PAGESIZE * 4)
    os.ftruncate(positions_fd, mmap.PAGESIZE)
    area = np.frombuffer(mmap.mmap(area_fd, cpus * per_cpu * record.itemsize), record).reshape(cpus, per_cpu)
    positions = np.frombuffer(mmap.mmap(positions_fd, cpus * 16 * 8), np.uint64).reshape(cpus, 16)
    cpu0 = [10 * i for i in range(11)]          # 0, 10, ..., 100
    cpu1 = [10 * i + 5 for i in range(5, 10)]   # 55, 65, ..., 95
    for n, start in enumerate(cpu0):
        area[0, n % per_cpu]["start_ns"] = start
    for n, start in enumerate(cpu1):
        area[1, n]["start_ns"] = start
    positions[0, 0], positions[0, 8] = 11, 4    # head, tail
    positions[1, 0], positions[1, 8] = 5, 0
    reader = eventarea.EventArea(area_fd, positions_fd, _SilentDoorbell(), cpus, per_cpu, record)
    try:
        # WHEN the collector reads
        events = reader.read()
        # THEN it gets CPU 0's 7 unread records and CPU 1's 5, in start-time order
        assert list(events["start_ns"]) == sorted(cpu0[4:] + cpu1)
        # AND it hands the space back: each tail is now its CPU's head, and a second read is empty
        assert list(positions[:, 8]) == [11, 5]
        assert len(reader.read()) == 0
    finally:
        reader.close()
        os.close(area_fd)
        os.close(positions_fd)
