"""How the event area's budget is shared out between CPUs (collector/eventarea.py)."""

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
