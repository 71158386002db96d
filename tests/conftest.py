"""Test tiers: tests/unit needs nothing special; tests/kernel (marker `kernel`) needs root,
BTF and the built probe, and is skipped with the reason when any of them is missing."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from iowitness.collector import preflight

REPO = Path(__file__).resolve().parent.parent

# A suite started in the background of a script (`cmd &` without job control) or under nohup
# inherits SIGINT ignored, and so does every iowitness and benchmark a test starts: iowitness
# passes a user's dispositions through to the benchmark as a shell would, so a Ctrl-C, a
# --on-fault stop or a --duration's SIGINT would reach no one, and the tests of those fail every
# time (they did in two engineers' background runs). The tests are of a terminal's session.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# Kernel tests the compatible probe cannot pass: it does not follow libaio, io_uring or page
# faults (probes/compat.bpf.h), it counts them; tests/kernel/test_compat_path.py checks the counts
FAST_PROBE_ONLY = ("test_aio.py", "test_uring.py", "test_mmap.py", "test_faults.py", "test_async_judged.py",
                   "test_bench_smoke.py::test_interleaved_bench_follows_an_io_uring_workload_through_fio_status")


# Recording tests whose point is not which probe records (the collector's process, the reader, the
# report forms, export): the compat pass (scripts/test.sh, --probe compat) skips them, the fast
# probe's pass runs them; the compat pass keeps the tests of what each probe records
PROBE_INDEPENDENT = (
    "test_phases_real.py::test_report_prints_the_phase_table",
    "test_phases_real.py::test_report_json_has_every_phase",
    "test_phases_real.py::test_report_csv_is_a_header_and_one_line_per_phase",
    "test_phases_real.py::test_report_on_a_truncated_trace_reports_what_is_left",
    "test_phases_real.py::test_report_on_garbage_exits_6_with_one_line",
    "test_known_calls.py::test_export_to_parquet_reads_in_duckdb",
    "test_run.py::test_run_passes_exit_code_and_output_through",
    "test_run.py::test_a_killed_collector_leaves_a_readable_trace",
    "test_run.py::test_the_collector_wakes_when_the_benchmark_exits_not_at_its_next_poll",
    "test_run.py::test_the_benchmark_gets_the_signal_dispositions_it_would_have_had_without_us",
    "test_run.py::test_a_killed_collector_loses_neither_the_benchmark_nor_its_output",
    "test_run.py::test_a_reader_that_closes_our_output_gives_the_benchmark_sigpipe",
)


# Kernel test files run by themselves, after the others (scripts/test.sh: `-m serial`): they measure
# time or cost, or touch what the whole machine shares. Every other kernel file runs beside another
# one (`-n 2 --dist loadfile`): its loop devices, mounts, users and ports carry its own names
SERIAL = (
    "test_bench_smoke.py",          # measures each observer's cost on one workload
    "test_probe_compare_smoke.py",  # builds two probes and measures them against each other
    "test_soak_short.py",           # the collector's CPU time and memory over 20 s
    "test_device_view.py",          # drops the whole page cache; a throttled rate against the device's counters
    # every request on its device against /proc/diskstats: a sync(2) beside it adds an empty flush
    "test_block_views_real.py",
    "test_compare_groups_real.py",  # run times of throttled against unthrottled runs: compare's significance
    "test_latency_claims.py",       # per-request latency printed by the program against the trace's call times
    "test_ioping.py",               # the same, for ioping's requests
    # verdicts on the benchmark's timing under two observers, one run each (the file's other tests,
    # doctor, a loss forced with SIGSTOP, attach by file, time nothing: they run beside another file)
    "test_bpftrace_backend.py::test_iozone_same_calls_phases_and_verdicts",
    "test_bpftrace_backend.py::test_fio_same_phases_bytes_and_verdicts",
    "test_attached_benchmarks.py",  # ioping's per-request latencies, attached
    "test_imported_benchmarks.py",  # ioping's per-request latencies under strace
    "test_stress_ng_hdd.py",        # stress-ng times each call itself: its rates against the calls' busy time
    "test_claims_over_phases.py",   # sysbench's average latency against its calls' (a few µs each)
    # a statistics window of a tenth of a second must fall on the benchmark's calls
    "test_run.py::test_bpf_statistics_are_on_for_a_tenth_of_a_second_of_a_busy_run",
    # sets kernel.bpf_stats_enabled, the machine's: a collector beside it keeps the statistics on
    "test_run.py::test_the_probe_time_in_all_brackets_what_the_kernel_measures_all_run_long",
)


# The kernel files that take longest (30-110 s each beside two CPU hogs in the lead's fresh-clone
# runs of 2026-12-07, docs/performance.md "The test suite's time"), longest first: on two
# processes they are sent first, so that neither process ends on a minute-long file while the
# other waits. pytest-xdist alone sends the files with the most tests first, which put these
# files of two or three tests 39th to 48th of 63. Every other file follows, most tests first as
# xdist would send it (pytest_configure turns xdist's own order off: it would sort by the count
# again). test_packaging and test_install_paths are apart: their wheel builds take turns
# (tests/support/wheel.py)
LONGEST_FIRST = (
    "test_stream_report_real.py", "test_verdicts_real.py", "test_bpftrace_backend.py", "test_dataset_real.py",
    "test_packaging.py", "test_html_real.py", "test_dbench.py", "test_replay_real.py", "test_fs_mark.py",
    "test_report_reading.py", "test_phases_real.py", "test_install_paths.py",
)


def pytest_addoption(parser):
    parser.addoption("--probe", choices=("auto", "fast", "compat"), default=None,
                     help="which compiled probe the kernel tests record with (sets IOWITNESS_PROBE for "
                          "every recording, in process and in the iowitness commands they run)")


def pytest_configure(config):
    if config.getoption("--probe"):
        os.environ["IOWITNESS_PROBE"] = config.getoption("--probe")
    if hasattr(config.option, "loadscopereorder"):   # (pytest-xdist's; the order is _longest_first's)
        config.option.loadscopereorder = False


def _kernel_skip_reason() -> str | None:
    for check in preflight.run_checks():
        if check.blocking and not check.ok:
            return f"kernel tests need {check.name}: {check.detail}"
    return None


def _longest_first(items) -> None:
    """Files in LONGEST_FIRST's order, then the others with the most tests first (ties in collection
    order), each file's tests in their own order: the order pytest-xdist's --dist loadfile sends them."""
    count: dict[str, int] = {}
    for item in items:
        count[str(item.fspath)] = count.get(str(item.fspath), 0) + 1

    def rank(item) -> tuple[int, int]:
        name = Path(str(item.fspath)).name
        if name in LONGEST_FIRST:
            return 0, LONGEST_FIRST.index(name)
        return 1, -count[str(item.fspath)]
    items.sort(key=rank)   # stable: a file's tests stay together and in order


def pytest_collection_modifyitems(config, items):
    _longest_first(items)
    # the checks read the kernel's BTF (0.6-1.5 s a process): only where a kernel test was collected
    kernel = [item for item in items if "tests/kernel" in str(item.fspath).replace(os.sep, "/")]
    reason = _kernel_skip_reason() if kernel else None
    for item in kernel:
        item.add_marker(pytest.mark.kernel)
        if Path(str(item.fspath)).name in SERIAL or f"{Path(str(item.fspath)).name}::{item.name}" in SERIAL:
            item.add_marker(pytest.mark.serial)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
        elif os.environ.get("IOWITNESS_PROBE") == "compat" and (
                Path(str(item.fspath)).name in FAST_PROBE_ONLY
                or f"{Path(str(item.fspath)).name}::{item.name}" in FAST_PROBE_ONLY):
            item.add_marker(pytest.mark.skip(reason="the compatible probe does not follow libaio, io_uring "
                                                    "or page faults (test_compat_path.py checks it counts them)"))
        elif (os.environ.get("IOWITNESS_PROBE") == "compat"
              and f"{Path(str(item.fspath)).name}::{item.name}" in PROBE_INDEPENDENT):
            item.add_marker(pytest.mark.skip(reason="not about which probe records: the fast probe's pass runs it "
                                                    "(tests/conftest.py PROBE_INDEPENDENT)"))


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        pytest.skip(f"{name} is not installed (scripts/setup.sh installs it)")
    return path
