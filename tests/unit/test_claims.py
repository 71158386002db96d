"""Claims: the numbers IOzone, fio, dd and a home-made benchmark printed about themselves.

Every output here is a real run, stored with the command that made it
(tests/data/claims/README.md). Every expected number was copied by hand from those files,
never from the parser. Outputs that are cut or edited are made from the real ones inside
the test that needs them, which says what it changed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iowitness.analysis.benchmarks import UNKNOWN, claims_from, dd, fio, iozone, iozone_groups, spec
from iowitness.analysis.judge.claim import UnparsableOutput

DATA = Path(__file__).resolve().parents[1] / "data" / "claims"
RECORDED_IN = "/tmp/iowitness-claims"
KiB = 1024


def recorded(name: str) -> str:
    # bytes, not text mode: dd's progress lines start with a carriage return, which text mode makes a newline
    return (DATA / name).read_bytes().decode()


def table(claims) -> dict:
    return {(c.test, c.file_size, c.record_size): c.value for c in claims}


def one_line_error(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message and message
    return message


# --- IOzone: the main table ----------------------------------------------------------------

def test_iozone_single_run_table():
    # GIVEN `iozone -i0 -i1 -i2 -s 1m -r 4k`
    claims = iozone.parse(recorded("iozone/single.txt"))

    # THEN one claim per filled column, named as IOzone's header names it, in kB/s of 1024 bytes
    assert [(c.test, c.value) for c in claims] == [
        ("write", 1286378), ("rewrite", 1988589), ("read", 3029305), ("reread", 3984917),
        ("random read", 3738636), ("random write", 1977602)]
    write = claims[0]
    assert write.unit == "kB/s" and write.bytes_per_s == 1286378 * KiB
    assert write.ops_per_s is None and write.seconds_per_op is None
    assert (write.file_size, write.record_size) == (1024 * KiB, 4 * KiB)
    assert [c.direction for c in claims] == ["write", "write", "read", "read", "read", "write"]
    assert [c.index for c in claims] == list(range(6))
    assert write.scope == "phase" and write.source == "iozone"
    assert write.extra["version"] == "3.489" and write.extra["from"] == "table"
    assert write.printed.startswith("1024       4  1286378  1988589")


def test_iozone_blank_columns_between_values_are_placed_by_position():
    # GIVEN `iozone -i0 -i2`: the read and reread columns are blank, random read/write are not
    claims = iozone.parse(recorded("iozone/gap.txt"))

    # THEN the random numbers are not taken for read and reread
    assert [(c.test, c.value) for c in claims] == [
        ("write", 1242467), ("rewrite", 1875690), ("random read", 2619192), ("random write", 2326879)]


def test_iozone_all_thirteen_columns():
    claims = iozone.parse(recorded("iozone/all_tests.txt"))
    assert [(c.test, c.value) for c in claims] == [
        ("write", 1278338), ("rewrite", 2454539), ("read", 4531485), ("reread", 4396951),
        ("random read", 3751699), ("random write", 2443368), ("bkwd read", 3160839),
        ("record rewrite", 2365323), ("stride read", 1882266), ("fwrite", 4018473),
        ("frewrite", 1825466), ("fread", 2835325), ("freread", 3764854)]
    assert [c.direction for c in claims] == ["write", "write", "read", "read", "read", "write", "read",
                                             "write", "read", "write", "write", "read", "read"]


def test_iozone_extended_columns_after_eleven_blank_ones():
    # GIVEN `iozone -E -i0 -i9 -i10`: pwrite..repread come after eleven blank columns
    claims = iozone.parse(recorded("iozone/extended.txt"))
    assert [(c.test, c.value, c.direction) for c in claims] == [
        ("write", 1151834, "write"), ("rewrite", 1837965, "write"), ("pwrite", 2027069, "write"),
        ("repwrite", 2043465, "write"), ("pread", 2598591, "read"), ("repread", 3709575, "read")]


def test_iozone_ops_mode():
    # GIVEN -O: "OPS Mode. Output is in operations per second."
    claims = iozone.parse(recorded("iozone/ops.txt"))
    assert [(c.test, c.value, c.unit, c.ops_per_s, c.bytes_per_s) for c in claims] == [
        ("write", 184974, "ops/s", 184974, None), ("rewrite", 469537, "ops/s", 469537, None),
        ("read", 742146, "ops/s", 742146, None), ("reread", 879535, "ops/s", 879535, None)]


def test_iozone_microseconds_mode():
    # GIVEN -N: "Microseconds/op Mode"; IOzone prints whole microseconds
    claims = iozone.parse(recorded("iozone/usec.txt"))
    assert [(c.test, c.value, c.unit) for c in claims] == [
        ("write", 3, "us/op"), ("rewrite", 2, "us/op"), ("read", 1, "us/op"), ("reread", 1, "us/op")]
    assert [c.seconds_per_op for c in claims] == pytest.approx([3e-6, 2e-6, 1e-6, 1e-6])
    assert claims[0].bytes_per_s is None


def test_iozone_no_retest_zeros_are_tests_that_never_ran():
    # GIVEN -+n ("No retest option selected") with -R: IOzone skips rewrite and reread but still
    # prints their columns and report sections, each with 0
    claims = iozone.parse(recorded("iozone/no_retest.txt"))

    # THEN only the tests that ran are claims, once from the table and once from the report;
    # a 0 there is no rate of zero to judge (it was a CANNOT JUDGE and `check` exited 1)
    assert [(c.test, c.value, c.extra["from"]) for c in claims] == [
        ("write", 881958, "table"), ("read", 2188177, "table"),
        ("write", 881958, "report"), ("read", 2188177, "report")]
    assert all("no_retest" in c.extra["settings"] for c in claims)


def test_iozone_fsync_and_close_in_timing_are_recorded():
    # GIVEN -e -c: IOzone says "Include fsync in write timing" and "Include close in write timing"
    claims = iozone.parse(recorded("iozone/fsync_close.txt"))

    # THEN the table reads as usual and every claim carries both settings
    assert [(c.test, c.value) for c in claims] == [
        ("write", 362971), ("rewrite", 689533), ("read", 2259550), ("reread", 490192)]
    assert all(c.extra["settings"] == ["close_in_timing", "fsync_in_timing"] for c in claims)
    assert iozone.parse(recorded("iozone/single.txt"))[0].extra["settings"] == []


def test_iozone_auto_sweep_one_claim_per_row_and_column():
    # GIVEN `-a -n 64k -g 256k -y 4k -q 16k -i0 -i1`: 3 file sizes × 3 record sizes × 4 tests
    claims = iozone.parse(recorded("iozone/auto.txt"))
    assert len(claims) == 36
    got = table(claims)
    assert got[("write", 64 * KiB, 4 * KiB)] == 1049372
    assert got[("reread", 64 * KiB, 16 * KiB)] == 12902017  # 8 digits fill the column
    assert got[("read", 128 * KiB, 8 * KiB)] == 4407601
    assert got[("reread", 256 * KiB, 16 * KiB)] == 12228612
    assert {(c.file_size, c.record_size) for c in claims} == {
        (f * KiB, r * KiB) for f in (64, 128, 256) for r in (4, 8, 16)}


def test_iozone_excel_report_repeats_the_table_and_is_marked():
    # GIVEN `-a -R`: the table, then "Writer report" ... with the same numbers
    claims = iozone.parse(recorded("iozone/report.txt"))
    from_table = [c for c in claims if c.extra["from"] == "table"]
    from_report = [c for c in claims if c.extra["from"] == "report"]

    # THEN both are claims, the report's marked so they are counted once
    assert len(from_table) == len(from_report) == 16
    assert iozone.without_report(claims) == from_table
    assert table(from_report) == table(from_table)
    # "Writer report", row "128": 1175271 under "4", 1492113 under "8"
    assert table(from_report)[("write", 128 * KiB, 4 * KiB)] == 1175271
    assert table(from_report)[("write", 128 * KiB, 8 * KiB)] == 1492113
    # "Re-Reader report", row "64": 5860307  7940539
    assert table(from_report)[("reread", 64 * KiB, 8 * KiB)] == 7940539
    assert from_report[0].index > from_table[-1].index


def test_iozone_excel_report_cut_short_gives_what_it_printed():
    # GIVEN the -R run cut inside "Reader report", after its "64" row
    text = recorded("iozone/report.txt")
    cut = text[:text.index('"128"   1732927')]
    report = [c for c in iozone.parse(cut) if c.extra["from"] == "report"]

    # THEN writer and re-writer in full, and the reader's first row
    assert len(report) == 4 + 4 + 2
    assert table(report[-2:]) == {("read", 64 * KiB, 4 * KiB): 3057153, ("read", 64 * KiB, 8 * KiB): 4274062}


# --- IOzone: throughput mode -----------------------------------------------------------------

def test_iozone_throughput_mode_processes():
    # GIVEN `iozone -t 2 -i0 -i1 -s 512k -r 4k -F f1 f2`
    claims = iozone.parse(recorded("iozone/throughput.txt"))
    writers = [c for c in claims if c.test == "write"]

    # THEN every line of the "initial writers" block is a claim, in order
    assert [(c.scope, c.value, c.unit) for c in writers] == [
        ("children", 1233614.75, "kB/s"), ("parent", 184178.34, "kB/s"), ("min process", 0.0, "kB/s"),
        ("max process", 1233614.75, "kB/s"), ("avg process", 616807.38, "kB/s"), ("min xfer", 0.0, "kB")]
    children = writers[0]
    assert children.bytes_per_s == pytest.approx(1233614.75 * KiB)
    assert (children.processes, children.file_size, children.record_size) == (2, 512 * KiB, 4 * KiB)
    assert children.direction == "write" and children.extra["from"] == "throughput"
    # min xfer is an amount, not a rate
    assert writers[-1].bytes_per_s is None and writers[-1].extra["bytes"] == 0
    assert writers[2].extra["per"] == "process"
    assert [c.value for c in claims if c.scope == "children"] == [1233614.75, 1505098.88, 5502982.50, 2548017.50]
    assert [c.test for c in claims if c.scope == "children"] == ["write", "rewrite", "read", "reread"]


def test_iozone_throughput_in_operations_per_process_claims_count_operations():
    # GIVEN `iozone -O -t 2 -i0 -s 512k -r 4k -F f1 f2`: every figure in ops/sec, Min xfer in ops
    claims = iozone.parse(recorded("iozone/throughput_ops.txt"))
    writers = [c for c in claims if c.test == "write"]
    # THEN the per-process lines are rates of operations and Min xfer an amount of them, which
    # the group judge sets against the children's operations (they were set against bytes:
    # CANNOT JUDGE "the claim is not a rate or an amount" on every one)
    assert [(c.scope, c.unit) for c in writers] == [
        ("children", "ops/s"), ("parent", "ops/s"), ("min process", "ops/s"), ("max process", "ops/s"),
        ("avg process", "ops/s"), ("min xfer", "ops")]
    assert [iozone_groups._kind_and_value(c) for c in writers[2:]] == [
        ("ops", 271585.94), ("ops", 292923.00), ("ops", 282254.47), ("count", 119.0)]
    assert writers[-1].bytes_per_s is None and "bytes" not in writers[-1].extra


def test_iozone_throughput_strings_of_every_test():
    # GIVEN threads (-T) running tests 0 1 2 3 5 6 7 8 with per-child lines (-C)
    claims = iozone.parse(recorded("iozone/throughput_threads_all.txt"))
    children = [c for c in claims if c.scope == "children"]

    # THEN IOzone's throughput names map to its table names
    assert [(c.test, c.value, c.direction) for c in children] == [
        ("write", 2143906.00, "write"),  # "initial writers"
        ("rewrite", 1789859.62, "write"),  # "rewriters"
        ("read", 5405145.75, "read"),  # "readers"
        ("reread", 2830083.50, "read"),  # "re-readers"
        ("bkwd read", 4466076.62, "read"),  # "reverse readers"
        ("stride read", 5137180.25, "read"),  # "stride readers"
        ("random read", 2089386.88, "read"),  # "random readers"
        ("mixed workload", 3710842.38, "mixed"),  # "mixed workload"
        ("random write", 3493015.50, "write"),  # "random writers"
        ("fwrite", 3225569.38, "write"),  # "fwriters"
        ("fread", 3915900.25, "read"),  # "freaders"
    ]
    # AND the per-child lines: in "rewriters" Child[0] moved nothing, which IOzone's
    # "Min throughput per thread" skips (it equals the max)
    rewrite = {c.scope + str(c.extra.get("child", "")): c for c in claims if c.test == "rewrite"}
    assert rewrite["child0"].value == 0.0 and rewrite["child0"].extra["xfer_bytes"] == 0
    assert rewrite["child1"].value == 1789859.62 and rewrite["child1"].extra["xfer_bytes"] == 512 * KiB
    assert rewrite["min process"].value == rewrite["max process"].value == 1789859.62
    assert rewrite["min process"].extra["per"] == "thread"
    assert len(claims) == 11 * 8


def test_iozone_throughput_pwrite_and_pread_strings():
    claims = iozone.parse(recorded("iozone/throughput_extended.txt"))
    children = {c.test: c.value for c in claims if c.scope == "children"}
    assert children == {"write": 1873971.69, "rewrite": 1537424.75, "pwrite": 2322930.25, "pread": 2926501.75}
    # IOzone's "Timer resolution is poor" note, printed after "iozone test complete."
    assert claims[0].extra["timer_warning"] is True
    assert "timer_warning" not in iozone.parse(recorded("iozone/single.txt"))[0].extra


def test_iozone_throughput_ops_and_its_report():
    # GIVEN -t 2 -T -O -R: rates in ops/sec, "Min xfer" in ops, then a "Throughput report"
    claims = iozone.parse(recorded("iozone/throughput_ops_report.txt"))
    lines = [c for c in claims if c.extra["from"] == "throughput"]
    report = [c for c in claims if c.extra["from"] == "report"]

    assert lines[0].value == 582913.44 and lines[0].unit == "ops/s" and lines[0].ops_per_s == 582913.44
    xfer = [c for c in lines if c.scope == "min xfer"][0]
    assert (xfer.value, xfer.unit, xfer.extra["ops"]) == (109.0, "ops", 109.0)
    # the report repeats the "Children see" numbers, one per process count
    assert [(c.test, c.value, c.scope, c.processes, c.unit) for c in report] == [
        ("write", 582913.44, "children", 2, "ops/s"), ("rewrite", 448961.69, "children", 2, "ops/s"),
        ("read", 621518.12, "children", 2, "ops/s"), ("reread", 1035327.78, "children", 2, "ops/s")]
    assert iozone.without_report(claims) == lines


# --- IOzone: what it refuses -----------------------------------------------------------------

def test_iozone_cut_before_any_result_is_refused():
    # GIVEN the single run cut right after its settings, before the table
    text = recorded("iozone/single.txt")
    cut = text[:text.index("File stride size set to 17 * record size.\n") + 43]
    with pytest.raises(UnparsableOutput) as e:
        iozone.parse(cut)
    assert one_line_error(e) == ("IOzone output ends before any result: "
                                 "no table row, no 'Children see throughput' line; "
                                 "its last line: 'File stride size set to 17 * record size.'")


def test_iozone_refusing_a_run_says_why():
    # IOzone 3.489 with -N -t 2 prints its settings, then this line, and no result
    text = recorded("iozone/single.txt")
    cut = text[:text.index("File stride size set to 17 * record size.\n") + 43]
    with pytest.raises(UnparsableOutput) as e:
        iozone.parse(cut + "\n\tMicrosecond mode not supported in throughput mode.\n")
    assert one_line_error(e).endswith("its last line: 'Microsecond mode not supported in throughput mode.'")


def test_iozone_row_cut_in_the_middle_is_not_read():
    # GIVEN the sweep cut in the middle of its fourth row ("128  4  1294270  21")
    text = recorded("iozone/auto.txt")
    cut = text[:text.index("1294270") + 10]
    claims = iozone.parse(cut)

    # THEN only the three whole rows give claims: "21" is not taken for a rewrite rate
    assert len(claims) == 12
    assert {c.file_size for c in claims} == {64 * KiB}


def test_iozone_cut_before_its_unit_line_is_refused():
    text = recorded("iozone/single.txt")
    with pytest.raises(UnparsableOutput) as e:
        iozone.parse(text[:text.index("Output is in")])
    assert one_line_error(e) == "IOzone output ends before its 'Output is in ...' line"


@pytest.mark.parametrize("name", ["fio/two_jobs.json", "dd/write.txt", "spec/stdio_bench.txt"])
def test_iozone_refuses_another_tools_output(name):
    with pytest.raises(UnparsableOutput) as e:
        iozone.parse(recorded(name))
    assert one_line_error(e) == "not IOzone output: no 'Iozone: Performance Test of File I/O' banner"


def test_iozone_refuses_empty_output():
    with pytest.raises(UnparsableOutput, match="^not IOzone output"):
        iozone.parse("")


def test_iozone_unknown_major_version_is_refused_other_3x_is_read():
    # GIVEN the real single run with its banner edited to another version
    text = recorded("iozone/single.txt")
    assert "Version $Revision: 3.489 $" in text

    # WHEN it claims to be IOzone 4: THEN refused (its layout is unknown)
    with pytest.raises(UnparsableOutput) as e:
        iozone.parse(text.replace("3.489", "4.001"))
    assert one_line_error(e) == "IOzone 4.001 is not a version this parser reads (IOzone 3.x, checked against 3.489)"

    # WHEN it claims another 3.x: THEN read (the table is checked column by column anyway),
    # with the version kept in each claim
    claims = iozone.parse(text.replace("3.489", "3.506"))
    assert claims[0].value == 1286378 and claims[0].extra["version"] == "3.506"


def test_iozone_numbers_run_together_are_refused_not_guessed():
    # GIVEN the single run with its write value edited to fill its 9-character field
    # (123456789 kB/s), so it runs into the record size: "       4123456789"
    text = recorded("iozone/single.txt")
    edited = text.replace("       4  1286378", "       4123456789")
    with pytest.raises(UnparsableOutput) as e:
        iozone.parse(edited)
    assert one_line_error(e).startswith("IOzone table row '1024       4123456789  1988589")


def test_iozone_value_under_no_column_is_refused():
    # GIVEN the gap run with random read moved four characters left, under no header
    text = recorded("iozone/gap.txt")
    edited = text.replace("                    2619192", "                2619192    ")
    with pytest.raises(UnparsableOutput) as e:
        iozone.parse(edited)
    assert one_line_error(e).endswith(": 2619192 does not line up with a column")


def test_iozone_command_line():
    # GIVEN command lines as people type them (flags combined, sizes with suffixes)
    got = iozone.parse_command(["/usr/bin/iozone", "-ecI", "-t", "2", "-T", "-i0", "-i", "1",
                                "-s", "1m", "-r4k", "-F", "f1", "f2", "-O", "-x", "-w", "-C"])
    assert got["fsync_in_timing"] and got["close_in_timing"] and got["o_direct"]
    assert not got["o_sync"]
    assert (got["processes"], got["threads"], got["stonewall"]) == (2, True, False)
    assert got["keep_files"] and got["per_child"]
    assert (got["file_size"], got["record_size"]) == (1024 * KiB, 4 * KiB)
    assert got["files"] == ["f1", "f2"] and got["unit"] == "ops/s" and got["tests"] == [0, 1]

    auto = iozone.parse_command(["iozone", "-a", "-n", "64k", "-g", "256k", "-y", "4k", "-q", "16k", "-N", "-o"])
    assert auto["auto"] and auto["o_sync"] and auto["unit"] == "us/op" and auto["processes"] is None
    assert (auto["min_file_size"], auto["max_file_size"]) == (64 * KiB, 256 * KiB)
    assert (auto["min_record_size"], auto["max_record_size"]) == (4 * KiB, 16 * KiB)
    assert iozone.parse_command(["iozone", "-s", "2048"])["file_size"] == 2048 * KiB  # no suffix: kB


def test_iozone_workbook_is_its_own_file():
    # GIVEN -b: IOzone writes its results as an Excel workbook after its last test
    own = iozone.own_files(["iozone", "-i0", "-s", "1m", "-b", "out/res.xls", "-f", "f"], "/data/run")
    # THEN that file (against the recorded cwd) is output, in no phase; its test file is data
    assert own("/data/run/out/res.xls") and own("out/res.xls")
    assert not own("/data/run/f") and not own("/data/run/res.xls")
    # AND without -b nothing is IOzone's own
    assert not iozone.own_files(["iozone", "-i0", "-f", "f"], "/data/run")("/data/run/f")


def test_iozone_latency_logs_are_its_own_files():
    # GIVEN -Q: IOzone logs each test's offsets and latencies in its working directory
    # (wol.dat, rwol.dat, rol.dat, rrol.dat; Child_N_*.dat in throughput mode)
    own = iozone.own_files(["iozone", "-Q", "-i0", "-i1", "-f", "/data/f"], "/data/run")
    # THEN those files, there, are output; the test file and such names elsewhere are not
    assert all(own(f"/data/run/{name}") for name in ("wol.dat", "rwol.dat", "rol.dat", "rrol.dat",
                                                      "Child_1_randrol.dat", "Child_0_strol.dat"))
    assert own("rol.dat") and not own("/data/f") and not own("/data/wol.dat") and not own("/data/run/xol.dat")
    # AND without -Q a file named so is data
    assert not iozone.own_files(["iozone", "-i0", "-f", "wol.dat"], "/data/run")("/data/run/wol.dat")


# --- fio -------------------------------------------------------------------------------------

def _rates(claims):
    """fio's rate claims; its latency claims come after them (fio_latency.py)."""
    return [c for c in claims if "fio_latency" not in c.extra]


def test_fio_json_two_jobs():
    # GIVEN a writer job and a reader job, --output-format=json
    claims = _rates(fio.parse(recorded("fio/two_jobs.json")))

    # THEN one claim per job and direction that moved data
    assert [(c.test, c.job, c.direction) for c in claims] == [
        ("writer write", "writer", "write"), ("reader read", "reader", "read")]
    writer, reader = claims
    assert (writer.value, writer.unit) == (682666, "KiB/s")
    assert writer.bytes_per_s == 699050666  # bw_bytes, not bw * 1024 (699049984)
    assert writer.ops_per_s == pytest.approx(170666.666667)
    assert writer.seconds_per_op == pytest.approx(4898.791992e-9)  # lat_ns mean
    assert writer.extra["clat_mean_s"] == pytest.approx(4803.368164e-9)
    assert (writer.extra["io_bytes"], writer.extra["runtime_ms"]) == (8 * 1024 * KiB, 12)
    assert writer.extra["fio_version"] == "fio-3.33"
    assert reader.bytes_per_s == 699050666 and reader.seconds_per_op == pytest.approx(5150.683105e-9)
    assert reader.extra["job_index"] == 1


def test_fio_json_group_reporting_names_the_group_after_its_first_job():
    claims = _rates(fio.parse(recorded("fio/two_jobs_group_reporting.json")))
    assert [(c.test, c.job, c.bytes_per_s) for c in claims] == [
        ("writer read", "writer", 762600727), ("writer write", "writer", 762600727)]
    assert claims[0].seconds_per_op == pytest.approx(4826.604004e-9)
    assert claims[1].seconds_per_op == pytest.approx(3363.795898e-9)
    assert claims[0].extra["total"]["bytes_per_s"] == 762600727 * 2


def test_fio_json_plus_randrw_one_claim_per_direction_and_a_total():
    claims = _rates(fio.parse(recorded("fio/randrw.jsonplus")))
    assert [(c.test, c.bytes_per_s, c.value) for c in claims] == [
        ("mixed read", 49083159, 47932), ("mixed write", 21409344, 20907)]
    assert [c.ops_per_s for c in claims] == pytest.approx([11983.193277, 5226.890756])
    assert claims[0].seconds_per_op == pytest.approx(80049.289621e-9)
    assert claims[0].extra["total"] == pytest.approx({"bytes_per_s": 49083159 + 21409344,
                                                      "ops_per_s": 11983.193277 + 5226.890756})


def test_fio_note_printed_before_the_json_is_skipped():
    # GIVEN fio's "note: both iodepth >= 1 and synchronous I/O engine ..." line before the JSON
    text = recorded("fio/note_before_json.json")
    assert text.startswith("note: both iodepth >= 1")
    claims = _rates(fio.parse(text))
    assert [(c.test, c.bytes_per_s, c.ops_per_s) for c in claims] == [("deep read", 838860800, 204800)]


def test_fio_normal_text_output():
    # GIVEN the two jobs without --output-format
    claims = _rates(fio.parse(recorded("fio/two_jobs_normal.txt")))

    # THEN "write: IOPS=146k, BW=571MiB/s (599MB/s)": the first rate, with its own unit
    writer, reader = claims
    assert (writer.test, writer.value, writer.unit) == ("writer write", 571, "MiB/s")
    assert writer.bytes_per_s == 571 * 1024 * 1024
    assert writer.extra["also_printed"] == "599MB/s" and writer.extra["also_bytes_per_s"] == 599e6
    assert writer.ops_per_s == 146000  # "146k": fio's counts use SI prefixes
    assert writer.seconds_per_op == pytest.approx(6.05e-6)  # "lat (usec): ... avg= 6.05"
    assert (reader.test, reader.value, reader.unit) == ("reader read", 615, "MiB/s")
    assert reader.seconds_per_op == pytest.approx(4915.22e-9)  # "lat (nsec): ... avg=4915.22"


def test_fio_status_interval_reports_the_last_json():
    # GIVEN --status-interval=1: three full JSON reports, the last one the run's
    [claim] = _rates(fio.parse(recorded("fio/status_interval.json")))
    assert (claim.test, claim.bytes_per_s, claim.extra["io_bytes"], claim.extra["runtime_ms"]) == (
        "paced write", 1048576, 2097152, 2000)
    assert claim.extra["interim_reports"] == 2


def test_fio_json_latency_one_claim_per_job_and_direction_after_the_rates():
    # GIVEN fio's JSON of two psync jobs, and a randrw job with json+
    two, randrw = fio.parse(recorded("fio/two_jobs.json")), fio.parse(recorded("fio/randrw.jsonplus"))
    # THEN after the rates, one latency claim per job and direction: clat's mean in ns, and
    # every figure of clat_ns (and lat_ns) in seconds, its percentiles as pNN
    latencies = [c for c in two if "fio_latency" in c.extra]
    assert [(c.test, c.unit, c.index) for c in latencies] == [("writer write latency", "ns", 2),
                                                             ("reader read latency", "ns", 3)]
    writer = latencies[0].extra["fio_latency"]
    assert latencies[0].value == pytest.approx(4803.368164)
    assert writer["clat"]["p99.99"] == pytest.approx(2605056e-9) and writer["clat"]["N"] == 2048
    assert writer["clat"]["min"] == pytest.approx(2377e-9) and writer["lat"]["mean"] == pytest.approx(4898.791992e-9)
    # AND a synchronous job's slat (N = 0: fio measures none) is not there at all
    assert "slat" not in writer and latencies[0].extra["ioengine"] == "psync"
    assert [c.test for c in randrw if "fio_latency" in c.extra] == ["mixed read latency", "mixed write latency"]


def test_fio_normal_text_latency_after_the_rates():
    # GIVEN the two jobs' normal text output
    latencies = [c for c in fio.parse(recorded("fio/two_jobs_normal.txt")) if "fio_latency" in c.extra]
    # THEN one latency claim per job and direction: "clat (usec): min=2, max=3107, avg= 5.95",
    # its percentiles ("99.99th=[ 3097]"), fio's count from "issued rwts", its engine
    writer, reader = latencies
    assert (writer.test, writer.value, writer.extra["ioengine"]) == ("writer write latency", pytest.approx(5950), "psync")
    clat = writer.extra["fio_latency"]["clat"]
    assert clat["max"] == pytest.approx(3107e-6) and clat["p99.99"] == pytest.approx(3097e-6) and clat["N"] == 2048
    # AND figures printed in whole µs are held to half a µs more, those in ns to half a ns
    assert writer.extra["resolution_s"] == pytest.approx(0.5e-6) and reader.extra["resolution_s"] == pytest.approx(0.5e-9)
    assert reader.extra["fio_latency"]["clat"]["max"] == pytest.approx(5007.4e-6)   # "max=5007.4k" ns


def test_fio_json_cut_in_half_is_refused():
    text = recorded("fio/two_jobs.json")
    with pytest.raises(UnparsableOutput) as e:
        fio.parse(text[:len(text) // 2])
    assert one_line_error(e).startswith("fio JSON output is cut short or broken: ")


@pytest.mark.parametrize("name", ["iozone/single.txt", "dd/write.txt"])
def test_fio_refuses_another_tools_output(name):
    with pytest.raises(UnparsableOutput) as e:
        fio.parse(recorded(name))
    assert one_line_error(e) == ('not fio output: no JSON object with "fio version", no "<job>: (groupid=N, '
                                 'jobs=N)" line and no terse line ("3;fio-3.33;job;0;0;...")')


def test_fio_refuses_json_that_is_not_fios_and_empty_output():
    with pytest.raises(UnparsableOutput, match='^not fio output: the JSON object has no "fio version"$'):
        fio.parse('{"jobs": []}\n')
    with pytest.raises(UnparsableOutput, match="^not fio output"):
        fio.parse("")


# --- dd --------------------------------------------------------------------------------------

def test_dd_summary():
    # GIVEN "2097152 bytes (2.1 MB, 2.0 MiB) copied, 0.000852835 s, 2.5 GB/s"
    [claim] = dd.parse(recorded("dd/write.txt"))

    # THEN the printed rate is the value; bytes over seconds is the rate
    assert (claim.value, claim.unit) == (2.5, "GB/s")
    assert claim.bytes_per_s == pytest.approx(2097152 / 0.000852835)
    assert claim.extra["printed_bytes_per_s"] == 2.5e9  # dd's GB = 10^9
    assert (claim.extra["bytes"], claim.extra["seconds"]) == (2097152, 0.000852835)
    assert (claim.extra["records_in"], claim.extra["records_out"]) == ("32+0", "32+0")
    assert (claim.test, claim.direction) == ("dd copy", None)  # the output alone does not say
    assert claim.printed == "2097152 bytes (2.1 MB, 2.0 MiB) copied, 0.000852835 s, 2.5 GB/s"


def test_dd_fdatasync_with_its_command():
    # GIVEN conv=fdatasync and the command that ran
    command = ["dd", "if=/dev/zero", f"of={RECORDED_IN}/dd.dat", "bs=64k", "count=32", "conv=fdatasync"]
    source, [claim] = claims_from(recorded("dd/write_fdatasync.txt"), command)

    # THEN a write, with the sync inside dd's time
    assert source == "dd"
    assert (claim.value, claim.unit) == (807, "MB/s")
    assert claim.bytes_per_s == pytest.approx(2097152 / 0.00259966)
    assert (claim.test, claim.direction) == ("dd write", "write")
    assert claim.extra["command"]["sync_in_timing"] is True


def test_dd_read_to_dev_null():
    command = ["dd", f"if={RECORDED_IN}/dd.dat", "of=/dev/null", "bs=64k"]
    _, [claim] = claims_from(recorded("dd/read.txt"), command)
    assert (claim.value, claim.unit, claim.test, claim.direction) == (4.0, "GB/s", "dd read", "read")
    assert claim.bytes_per_s == pytest.approx(2097152 / 0.000523433)


def test_dd_under_1000_bytes_and_exponent_seconds():
    # GIVEN "500 bytes copied, 4.6505e-05 s, 10.8 MB/s" (no size in parentheses)
    [claim] = dd.parse(recorded("dd/small.txt"))
    assert (claim.value, claim.unit, claim.extra["bytes"], claim.extra["seconds"]) == (10.8, "MB/s", 500, 4.6505e-05)
    assert claim.bytes_per_s == pytest.approx(500 / 4.6505e-05)


def test_dd_progress_lines_are_not_claims():
    # GIVEN status=progress: "\r2162688 bytes ... copied, 2 s, 1.3 MB/s", then the final summary
    raw = recorded("dd/progress.txt")
    assert raw.startswith("\r2162688 bytes")
    for text in (raw, raw.replace("\r", "\n")):  # as dd wrote it, and as text mode reads it
        [claim] = dd.parse(text)
        assert (claim.value, claim.extra["bytes"], claim.extra["seconds"]) == (1.3, 3145728, 2.41601)
        assert claim.extra["progress_lines"] == 1


def test_dd_slow_copy_prints_zero_and_the_bytes_say_more():
    # GIVEN "1 byte copied, 1.19936 s, 0.0 kB/s"
    [claim] = dd.parse(recorded("dd/slow.txt"))
    assert (claim.value, claim.unit) == (0.0, "kB/s")
    assert claim.bytes_per_s == pytest.approx(1 / 1.19936)


def test_dd_decimal_comma():
    # GIVEN LC_NUMERIC=de_DE: "2097152 bytes (2,1 MB, 2,0 MiB) copied, 0,000965296 s, 2,2 GB/s"
    [claim] = dd.parse(recorded("dd/decimal_comma.txt"))
    assert (claim.value, claim.unit, claim.extra["seconds"]) == (2.2, "GB/s", 0.000965296)
    assert claim.bytes_per_s == pytest.approx(2097152 / 0.000965296)


def test_dd_translated_messages_are_refused():
    # GIVEN LC_ALL=de_DE: "2097152 Bytes (2,1 MB, 2,0 MiB) kopiert, ..."
    with pytest.raises(UnparsableOutput) as e:
        dd.parse(recorded("dd/german.txt"))
    assert one_line_error(e) == ("not GNU dd output: no 'N+M records out' line followed by "
                                 "'<bytes> bytes ... copied, <seconds> s, <rate>/s' (English messages: LC_MESSAGES=C)")


def test_dd_cut_after_progress_is_refused():
    # GIVEN the progress run cut before dd's final summary
    text = recorded("dd/progress.txt")
    with pytest.raises(UnparsableOutput) as e:
        dd.parse(text[:text.index("48+0 records in")])
    assert one_line_error(e) == "dd output has progress lines but no final summary after 'records out': cut short?"


@pytest.mark.parametrize("name", ["iozone/single.txt", "fio/two_jobs_normal.txt"])
def test_dd_refuses_another_tools_output(name):
    with pytest.raises(UnparsableOutput, match="^not GNU dd output"):
        dd.parse(recorded(name))


def test_dd_command_directions():
    got = dd.parse_command(["dd", "if=/dev/urandom", "of=out.bin", "oflag=direct,dsync"])
    assert (got["direction"], got["test"], got["o_direct"], got["sync_writes"]) == ("write", "dd write", True, True)
    assert dd.parse_command(["dd", "of=out.bin"])["direction"] == "write"  # standard input
    assert dd.parse_command(["dd", "if=a", "of=b"])["direction"] is None  # a copy: both at once
    assert dd.parse_command(["dd", "if=a", "of=/dev/null"])["test"] == "dd read"


# --- specs -----------------------------------------------------------------------------------

# the smallest valid spec, for the tests of what each key accepts
VALID = "[[claim]]\npattern = '^W: (?P<value>[\\d.]+)$'\ntest = \"w\"\nunit = \"MB/s\"\n"


def test_spec_worked_example():
    # GIVEN stdio_bench's real output and its spec (docs/claims-spec.md, worked example)
    claims = spec.parse(recorded("spec/stdio_bench.txt"), DATA / "spec" / "stdio_bench.toml")

    # THEN the five numbers, in the order of the lines
    assert [(c.test, c.value, c.unit, c.direction) for c in claims] == [
        ("sequential write", 889.6, "MB/s", "write"), ("sequential read", 6733.5, "MB/s", "read"),
        ("random read", 896764, "ops/s", "read"), ("random read", 1.12, "us/op", "read"),
        ("total", 0.013, "s", None)]
    assert claims[0].bytes_per_s == pytest.approx(889.6e6)  # MB = 10^6 bytes
    assert claims[2].ops_per_s == 896764 and claims[3].seconds_per_op == pytest.approx(1.12e-6)
    assert claims[4].extra["seconds"] == 0.013 and claims[4].bytes_per_s is None
    assert [c.extra["match"] for c in claims] == ["name", "name", "operation", "operation", "order"]
    assert claims[1].extra["phase"] == "sequential read"
    assert (claims[2].extra["operation"], claims[2].extra["pattern"]) == ("read", "random")
    assert all(c.source == "spec" and c.extra["benchmark"] == "stdio_bench" for c in claims)


def test_spec_loaded_from_a_path_string_as_the_cli_does():
    # GIVEN the spec's path as a string (what --spec passes)
    checked = spec.load(str(DATA / "spec" / "stdio_bench.toml"))
    assert checked.name == "stdio_bench" and len(checked.rules) == 4
    assert len(spec.parse(recorded("spec/stdio_bench.txt"), checked)) == 5
    with pytest.raises(spec.SpecError) as e:
        spec.load(str(DATA / "spec" / "missing.toml"))
    assert one_line_error(e).endswith("missing.toml: No such file or directory")


def test_spec_defaults_phase_to_test_and_operation_to_direction():
    # GIVEN match = "name" without a phase, and match = "operation" without an operation
    checked = spec.loads(VALID.replace('test = "w"', 'test = "w"\nmatch = "name"'))
    assert spec.parse("W: 1.5\n", checked)[0].extra["phase"] == "w"
    checked = spec.loads(VALID + 'direction = "write"\nmatch = "operation"\n')
    [claim] = spec.parse("W: 1.5\n", checked)
    assert (claim.direction, claim.extra["operation"], claim.extra["pattern"]) == ("write", "write", None)


def test_spec_in_the_docs_is_the_tested_one():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "claims-spec.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", doc, re.DOTALL)
    assert (DATA / "spec" / "stdio_bench.toml").read_text() in blocks


def test_the_specs_shipped_in_docs_load():
    # GIVEN every spec under docs/specs/ WHEN loaded THEN each is a valid spec
    from iowitness.analysis.benchmarks import spec
    specs = sorted((Path(__file__).resolve().parents[2] / "docs" / "specs").glob("*.toml"))
    assert specs and all(spec.load(s).rules for s in specs)


@pytest.mark.parametrize("toml, message", [
    (VALID.replace('"MB/s"', '"MB"'),
     "spec [[claim]] 1 'unit': 'MB' is not one of B/s, kB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s, ops/s, ns/op, us/op, "
     "µs/op, ms/op, s/op, ns, us, µs, ms, s (did you mean 'MB/s'?)"),
    (VALID.replace("?P<value>", ""), "spec [[claim]] 1 'pattern': has no (?P<value>...) group for the number"),
    (VALID + 'paterrn = "x"\n', "spec [[claim]] 1 'paterrn': unknown key; did you mean 'pattern'? (known: pattern, "
                               "test, direction, unit, match, phase, operation, access, required, scope, key, "
                               "statistic, timed, skip, requests, record_size, rank, columns, timing_line, "
                               "timing_end_line, warmup_seconds, window, sum_of, count_line)"),
    (VALID.replace('"w"', '"sequential {op}"'),
     "spec [[claim]] 1 'test': uses {op} but the pattern has no (?P<op>...) group"),
    ("version = 2\n" + VALID, "spec 'version' is 2; this iowitness reads version 1"),
    (VALID + 'match = "operation"\n', "spec [[claim]] 1 'operation': match = \"operation\" needs the phase "
                                     "operation (read, write, mixed), here or as a fixed direction"),
    (VALID + 'phase = "x"\n', "spec [[claim]] 1 'phase': goes only with match = \"name\""),
    (VALID + 'scope = "threads"\n', "spec [[claim]] 1 'scope': 'threads' is not one of auto, phase, concurrent, run, "
     "window"),
    (VALID + 'key = "{size}"\n', "spec [[claim]] 1 'key': uses {size} but the pattern has no (?P<size>...) group"),
    ('[benchmark]\nmb = 1000\n' + VALID, "spec [benchmark] 'mb' is 1000; give one of 1000000, 1048576, 1024000"),
    (VALID + 'direction = "writes"\n', "spec [[claim]] 1 'direction': 'writes' is not one of read, write, mixed"),
    (VALID.replace(")$'", "$'"), "spec [[claim]] 1 'pattern': not a regular expression: "
                                 "missing ), unterminated subpattern at position 4"),
    (VALID + '[claim.columns]\nw = { tset = "a" }\n', "spec [[claim]] 1 'columns.w.tset': unknown key (known: test, "
     "direction, unit, match, phase, operation, access, scope, key, statistic, timed, skip, record_size, rank, "
     "timing_line, timing_end_line, warmup_seconds, window, sum_of)"),
    (VALID.replace("?P<value>", "?P<w>") + '[claim.columns]\nlat = { test = "a" }\n',
     "spec [[claim]] 1 'pattern': has no (?P<lat>...) group for the number of this column"),
    (VALID.replace('"MB/s"', '"us"') + 'statistic = "p999"\n', "spec [[claim]] 1 'statistic': 'p999' is not one "
     "of mean, min, max, stddev, mdev, median, pNN (p99, p99.9, ...), avg"),
    (VALID + 'statistic = "p99"\n', "spec [[claim]] 1 'statistic': goes with a time per operation (ns/op, us/op, "
     "ms/op, s/op, ns, us, ms), not 'MB/s'"),
    (VALID.replace('"MB/s"', '"us"') + 'timed = "call+fsync"\n',
     "spec [[claim]] 1 'timed': 'call+fsync' is not one of call, call+sync, open..close, calls+sync, call or sync, "
     'sync, "N calls", "N calls+sync"'),
    (VALID + 'skip = "1"\n', "spec [[claim]] 1 'skip': must be a whole number"),
    (VALID + 'rank = 0\n', "spec [[claim]] 1 'rank': must be 1 or more"),
    (VALID + 'requests = true\n', "spec [[claim]] 1 'requests': per-request lines are latencies: give a time per "
     "operation as the unit, not 'MB/s'"),
    (VALID + 'record_size = "big"\n', "spec [[claim]] 1 'record_size': 'big' is not a size (4096, 4k, 64KiB) nor "
     "a template such as \"{size}\""),
    ('[benchmark]\nmultipliers = "si"\n' + VALID, "spec [benchmark] 'multipliers' is 'si'; give \"decimal\" "
     "(k = 1000) or \"binary\" (k = 1024)"),
    ("claim = [", "spec is not valid TOML: "),  # then tomllib's own words, which vary with Python
    ("", "spec has no [[claim]] table"),
])
def test_spec_errors_name_the_key(toml, message):
    # GIVEN a spec with one thing wrong WHEN loaded THEN one line names the key and the problem
    with pytest.raises(spec.SpecError) as e:
        spec.loads(toml)
    got = one_line_error(e)
    assert got.startswith(message) if message.endswith(": ") else got == message


PLAIN = "write {name} for a group of the pattern, and {{ or }} for a brace"
GROUPED = VALID.replace("'^W: ", "'^(?P<op>W)(?: (?P<size>\\d+k))?: ")


@pytest.mark.parametrize("template, message", [
    ("{op!z}", f"{{op!z}} is not a plain group name; {PLAIN}"),               # str.format: ValueError
    ("{op:99999999999}", f"{{op:99999999999}} is not a plain group name; {PLAIN}"),   # allocates, or raises
    ("{op.__class__}", f"{{op.__class__}} is not a plain group name; {PLAIN}"),      # reaches into Python
    ("{op[0]}", f"{{op[0]}} is not a plain group name; {PLAIN}"),
    ("{0}", f"{{0}} is not a plain group name; {PLAIN}"),
    ("{op", f"is not a template (expected '}}' before end of string); {PLAIN}"),
    ("op}", f"is not a template (Single '}}' encountered in format string); {PLAIN}"),
])
@pytest.mark.parametrize("key", ["test", "direction", "phase", "key"])
def test_spec_templates_are_plain_group_names(template, message, key):
    # GIVEN a template Python's str.format would run as more than a substitution
    toml = GROUPED.replace('test = "w"', f'test = "w"\n{key} = "{template}"' if key != "test" else f'test = "{template}"')
    toml += 'match = "name"\n' if key == "phase" else ""
    # WHEN the spec is loaded, THEN one line names the key and says what a template may hold
    with pytest.raises(spec.SpecError) as e:
        spec.loads(toml)
    assert one_line_error(e) == f"spec [[claim]] 1 '{key}': {message}"


def test_spec_template_of_a_group_a_line_leaves_unmatched():
    # GIVEN a test named after an optional group, and two lines: one with it, one without
    rules = spec.loads(GROUPED.replace('test = "w"', 'test = "w {size}"'))
    assert [c.test for c in spec.parse("W 4k: 10", rules)] == ["w 4k"]
    # WHEN the line without it is read, THEN one line names the rule, the key and the group
    with pytest.raises(UnparsableOutput) as e:
        spec.parse("W: 10", rules)
    assert one_line_error(e) == "[[claim]] 1 on line 'W: 10': 'test' uses {size}, which this line leaves unmatched"


def test_a_spec_file_that_is_not_utf8(tmp_path):
    # GIVEN a spec saved as Latin-1 (TOML is UTF-8), WHEN it is loaded, THEN one line says where
    path = tmp_path / "latin1.toml"
    path.write_bytes(('[benchmark]\nname = "d\xe9bit"\n' + VALID).encode("latin-1"))
    with pytest.raises(spec.SpecError) as e:
        spec.load(path)
    assert one_line_error(e) == f"spec {path} is not UTF-8 text (byte 0xe9 at offset 21); save it as UTF-8"


def test_spec_output_that_does_not_fit():
    # GIVEN the worked example's spec and dd's output: nothing matches
    with pytest.raises(UnparsableOutput) as e:
        spec.parse(recorded("dd/write.txt"), DATA / "spec" / "stdio_bench.toml")
    assert one_line_error(e) == "output does not fit the spec: no line matches any [[claim]] pattern"

    # GIVEN stdio_bench's output without its random-read line: a required claim is missing
    text = "".join(line for line in recorded("spec/stdio_bench.txt").splitlines(True) if not line.startswith("Random"))
    with pytest.raises(UnparsableOutput) as e:
        spec.parse(text, DATA / "spec" / "stdio_bench.toml")
    assert one_line_error(e) == ("output does not fit the spec: [[claim]] 2 ('random read') matches no line "
                                 "(set required = false if it may be absent)")


# --- which benchmark -------------------------------------------------------------------------

@pytest.mark.parametrize("name, source", [
    ("iozone/single.txt", "iozone"), ("iozone/throughput.txt", "iozone"), ("fio/two_jobs.json", "fio"),
    ("fio/note_before_json.json", "fio"), ("fio/two_jobs_normal.txt", "fio"), ("dd/write.txt", "dd"),
    ("dd/progress.txt", "dd"),
])
def test_detect_from_the_output_alone(name, source):
    got, claims = claims_from(recorded(name), None)
    assert got == source and claims


def test_detect_from_the_command_and_what_it_adds():
    command = ["/usr/bin/iozone", "-e", "-c", "-i0", "-i1", "-s", "1m", "-r", "4k", "-f", f"{RECORDED_IN}/f"]
    source, claims = claims_from(recorded("iozone/fsync_close.txt"), command)
    assert source == "iozone"
    assert claims[0].extra["command"]["fsync_in_timing"] and claims[0].extra["command"]["close_in_timing"]

    # a wrapper's command says nothing: the output decides
    source, _ = claims_from(recorded("fio/two_jobs.json"), ["bash", "run.sh"])
    assert source == "fio"


def test_detect_hint_overrides_and_does_not_fall_back():
    # GIVEN fio's JSON with --format dd: dd's parser says why, nothing else is tried
    with pytest.raises(UnparsableOutput, match="^not GNU dd output"):
        claims_from(recorded("fio/two_jobs.json"), ["fio"], hint="dd")
    with pytest.raises(UnparsableOutput) as e:
        claims_from(recorded("fio/two_jobs.json"), None, hint="bonnie")
    assert one_line_error(e) == "unknown --format 'bonnie': give iozone, fio or dd, or a --spec"


@pytest.mark.parametrize("text", ["", "hello\n", recorded("spec/stdio_bench.txt")])
def test_detect_unknown_output(text):
    with pytest.raises(UnparsableOutput) as e:
        claims_from(text, None)
    assert one_line_error(e) == UNKNOWN == ("cannot tell which benchmark printed this; "
                                            "give --format iozone|fio|dd or a --spec")


def test_detect_command_recognised_but_output_of_another_tool():
    # GIVEN the command says iozone but the output is dd's: IOzone's parser refuses it
    with pytest.raises(UnparsableOutput, match="^not IOzone output"):
        claims_from(recorded("dd/write.txt"), ["iozone", "-i0"])


def test_an_unreadable_number_names_the_line_and_what_a_number_is():
    # GIVEN a number with a thousands separator (docs/claims-spec.md, Errors)
    checked = spec.loads(VALID.replace("[\\d.]+", "[\\d.,]+"))
    with pytest.raises(UnparsableOutput) as e:
        spec.parse("W: 1,234.5\n", checked)
    assert one_line_error(e) == ("[[claim]] 1 on line 'W: 1,234.5': value '1,234.5' is not a number (digits, a "
                                 "point, an exponent, and one of k, K, m, M, g, G after it)")
