"""The habits of strace, perf and man users: short flags, shell completion, a man page, and
fio's own files (job file, output, logs) told apart from its jobs' data."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from iowitness.cli import build_parser, main
from iowitness.completion import bash, man


def _parse(*argv):
    return build_parser().parse_args(list(argv))


def test_short_flags_strace_and_perf_users_type():
    # GIVEN attach as strace/perf users spell it: -p PID (and perf's list), -P PATH, -c
    args = _parse("attach", "-p", "4242,4243", "-p", "7", "-P", "/mnt/t/f", "-c", "-o", "x.iwt")
    # THEN they are --pid, --file and --summary
    assert args.pid_lists == [[4242, 4243], [7]]
    assert args.files == ["/mnt/t/f"] and args.summary
    # AND run takes -P and -c too, with the command after --
    args = _parse("run", "-c", "-P", "/mnt/t/f", "--", "dd", "if=/dev/zero")
    assert args.summary and args.files == ["/mnt/t/f"] and args.command[-2:] == ["dd", "if=/dev/zero"]
    # AND show --events takes strace's "-e trace=" and perf's -p
    args = _parse("show", "--events", "-e", "trace=read,pwrite64", "-p", "12", "t.iwt")
    assert args.syscalls == [["read", "pwrite64"]] and args.pids == [[12]]


def test_a_bad_pid_list_is_one_line(capsys):
    # WHEN -p gets something that is not a PID
    with pytest.raises(SystemExit) as exited:
        main(["attach", "-p", "12,x"])
    # THEN one line on stderr, exit 2
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.count("\n") == 1 and "'12,x' is not a PID" in err


def test_show_filters_without_events_are_refused(tmp_path, capsys):
    # GIVEN a filter of --events given alone, THEN one line says to add --events (before any load)
    assert main(["show", "--phase", "3", str(tmp_path / "none.iwt")]) == 2
    assert capsys.readouterr().err == "iowitness: --phase filters the lines of --events; add --events\n"


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_completion_completes_commands_options_and_choices(tmp_path):
    # GIVEN the completion script generated from the parser, loaded in a real bash
    script = tmp_path / "c.bash"
    script.write_text(bash(build_parser()))

    def complete(*words):
        probe = (f'source {script}; COMP_WORDS=({" ".join(repr(w) for w in words)}); '
                 'COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _iowitness; echo "${COMPREPLY[*]}"')
        return subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.split()

    # THEN commands, each command's options (short ones too) and an option's choices complete
    assert "attach" in complete("iowitness", "at")
    assert {"-p", "--pid", "-P", "--file", "-c", "--summary"} <= set(complete("iowitness", "attach", "-"))
    assert complete("iowitness", "run", "--on-fault", "") == ["stop", "continue"]
    assert "--events" in complete("iowitness", "show", "--ev")


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_man_page_renders_every_command_and_option(tmp_path):
    # GIVEN the man page generated from the parser
    page = tmp_path / "iowitness.1"
    page.write_text(man(build_parser(), "0"))
    # WHEN man renders it
    text = subprocess.run(["man", "-l", str(page)], capture_output=True, text=True, check=True,
                          env={"MANWIDTH": "120", "PATH": "/usr/bin:/bin"}).stdout
    # THEN every command is a section and the short flags are there, with no roff left unread
    for name in ("run", "attach", "show", "report", "check", "doctor"):
        assert f"iowitness {name}" in text
    assert "-p PID, --pid PID" in text and "-e CALL, --syscall CALL" in text
    assert "\\f" not in text and "\\-" not in text


def test_fio_own_files_are_its_job_file_output_and_logs(tmp_path):
    # GIVEN a fio command line with a job file that asks for a bandwidth log, and --output
    from iowitness.analysis.benchmarks import fio

    job = tmp_path / "two.fio"
    job.write_text("[global]\nsize=1m\n\n[writer]\nrw=write\nwrite_bw_log=wlog\n\n[reader]\nrw=read\n")
    is_own = fio.own_files(["fio", "--output=out.json", "--output-format=json", "two.fio"], str(tmp_path))
    # THEN the job file, the output and the logs are fio's own, the jobs' data files are not
    assert is_own(str(job)) and is_own(str(tmp_path / "out.json"))
    assert is_own(str(tmp_path / "wlog_bw.1.log"))
    assert not is_own(str(tmp_path / "writer.0.0")) and not is_own(str(tmp_path / "reader.0.0"))


def test_status_line_waits_for_the_benchmarks_line_and_stays_off_its_progress_line():
    # GIVEN the page the collector and the output capture share (collector/statusline.py)
    from iowitness.collector.statusline import Shared

    shared = Shared()
    assert shared.drawable
    # WHEN the benchmark has written half a line, THEN no status line until it ends it
    shared.wrote(b"Writing the file... ")
    assert not shared.drawable
    shared.wrote(b"done\n")
    assert shared.drawable
    # AND \r\n is a plain line end (a pseudo-terminal's), not a progress line
    shared.wrote(b"line\r\n")
    assert shared.drawable and not shared.benchmark_progress
    # WHEN it rewrites its own line with \r (dd status=progress), THEN off for the rest of the run
    shared.wrote(b"\r1048576 bytes (1.0 MB, 1.0 MiB) copied, 1 s, 1.0 MB/s")
    shared.wrote(b"\n")
    assert shared.benchmark_progress and not shared.drawable
