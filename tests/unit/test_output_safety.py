"""Outputs safe for root to write, and names from a trace safe in every format
(iowitness/outputfile.py, iowitness/escape.py, reporters/isolated_matplotlib.py).

Ground truth is independent of the code under test: the file system (lstat, st_mode, the
bytes of a symlink's target), Python's html.parser, csv and json modules, and matplotlib
itself proving that a planted setting is live before checking that the report ignores it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from iowitness import escape
from iowitness.errors import OutputError, UsageError
from iowitness.outputfile import Output, parse_mode
from tests.support.cli import iowitness
from tests.support.doc_tables import markdown_tables
from tests.support.hostile import (
    HOSTILE,
    HOSTILE_ARG,
    no_raw_controls,
    write_hostile_trace,
)

TARGET_TEXT = "the victim file, which must stay as it is\n"


@pytest.fixture
def hostile_trace(tmp_path):
    path = tmp_path / "hostile.iwt"
    write_hostile_trace(path, output=b"claimed 12 MB/s \x1b[2J\x1b]0;title\x07 <i>done</i> | `x`\n")
    return path


@pytest.fixture
def victim(tmp_path):
    """A file a planted link points at: after any command it must hold exactly what it held."""
    path = tmp_path / "victim" / "passwd"
    path.parent.mkdir()
    path.write_text(TARGET_TEXT)
    os.chmod(path, 0o644)
    return path


def untouched(victim) -> bool:
    return victim.read_text() == TARGET_TEXT and stat.S_IMODE(victim.stat().st_mode) == 0o644


# ---- escaping, one format at a time ------------------------------------------------------------

def test_terminal_text_shows_every_control_character_and_keeps_the_rest():
    # GIVEN the hostile name as the trace keeps it and as argv holds it (undecodable bytes)
    # WHEN shown for a terminal
    shown, arg = escape.terminal(HOSTILE), escape.terminal(HOSTILE_ARG)
    # THEN nothing in it acts on a terminal, not even a newline, and what was there is readable
    assert no_raw_controls(shown, newlines_allowed=False) == [] == no_raw_controls(arg, newlines_allowed=False)
    assert "\\x1b[31mRED" in shown and "\\nFAKE LINE\\r" in shown and "\\u202e\\x9b2J\\x7f" in shown
    assert arg.endswith("\\xff\\xfe.dat")   # the raw bytes, by value
    # AND a whole report keeps its own line breaks only
    assert escape.terminal("a\x1bb\nc", keep_newlines=True) == "a\\x1bb\nc"


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self.attrs = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [v for _, v in attrs]

    def handle_data(self, data):
        self.text.append(data)


def test_html_escaping_holds_in_text_and_in_attributes():
    # GIVEN the hostile name in an element and in a double- and a single-quoted attribute
    value = escape.html(HOSTILE)
    page = _Page()
    page.feed(f'<p title="{value}" data-x=\'{value}\'>{value}</p>')
    # THEN a parser sees one element, and the name, shown, as its text and both attributes
    assert page.tags == ["p"]
    assert page.text == [escape.visible(HOSTILE)] and page.attrs == [escape.visible(HOSTILE)] * 2


def test_markdown_has_no_raw_html_no_code_span_and_one_cell_per_value():
    # GIVEN the hostile name in a table row between two other cells
    row = f"| a | {escape.markdown(HOSTILE)} | b |"
    # THEN no '<' or backtick is left unescaped, and the row still has three cells
    assert not re.search(r"(?<!\\)[<`]", row)
    assert markdown_tables(f"| 1 | 2 | 3 |\n|---|---|---|\n{row}") == [
        [["1", "2", "3"], ["a", escape.visible(HOSTILE), "b"]]]
    # AND a value that looks like a list item or a heading is text
    assert escape.markdown("- x") == "\\- x" and escape.markdown("12. x") == "12\\. x"
    assert escape.markdown("# x") == "\\# x"
    # AND a number is left as it is: "8.0 MiB" opens no list
    assert escape.markdown("8.0 MiB") == "8.0 MiB" and escape.markdown("-5") == "-5"


def test_csv_reads_back_one_row_per_phase_with_the_name_shown():
    import pandas as pd

    # GIVEN a table whose text cell is the hostile name, next to numbers
    frame = pd.DataFrame({"path": [HOSTILE, "plain,comma"], "ops": [16, 2]})
    text = escape.csv(frame)
    # THEN the csv module reads back the header and two rows, the name shown, the numbers kept
    rows = list(csv.reader(io.StringIO(text)))
    assert rows == [["path", "ops"], [escape.visible(HOSTILE), "16"], ["plain,comma", "2"]]
    assert no_raw_controls(text) == []


# ---- the reports of a trace full of hostile names ----------------------------------------------

def test_every_report_format_shows_hostile_names_and_obeys_none(hostile_trace, tmp_path):
    # GIVEN a trace whose file, process, command line, host and output are hostile
    # WHEN every text format is asked for
    show = iowitness("show", str(hostile_trace)).stdout
    text = iowitness("report", str(hostile_trace)).stdout
    markdown = iowitness("report", str(hostile_trace), "--markdown").stdout
    table = iowitness("report", str(hostile_trace), "--csv").stdout
    doc = iowitness("report", str(hostile_trace), "--json").stdout
    page_path = tmp_path / "r.html"
    iowitness("report", str(hostile_trace), "--html", str(page_path))
    page = page_path.read_text()
    # THEN none emits a raw control character, and the text forms show the name's escapes
    for out in (show, text, markdown, table, doc, page):
        assert no_raw_controls(out) == []
    assert "\\x1b[31mRED" in show and "\\nFAKE LINE" in show and "\\xff\\xfe.dat" in show
    assert "FAKE LINE" not in "\n".join(line[:9] for line in show.splitlines())   # no line of its own
    # AND Markdown holds no raw HTML tag, JSON gives back the exact strings, CSV one row per phase
    assert not re.search(r"(?<!\\)<(script|b|i)\b", markdown)
    assert json.loads(doc)["command"] == ["bench", HOSTILE_ARG]
    assert json.loads(doc)["phases"][0]["path"] == "/data/" + HOSTILE
    assert len(list(csv.reader(io.StringIO(table)))) == 2
    # AND the page has no element the trace named, and says the name in text
    parser = _Page()
    parser.feed(page)
    assert not {"script", "b", "i"} & set(parser.tags)
    assert escape.visible(HOSTILE) in "".join(parser.text)


def test_an_error_line_naming_a_hostile_path_stays_one_line(tmp_path):
    # GIVEN a path with a newline and an escape, that is not a trace
    bad = tmp_path / "not\n\x1b[31ma trace"
    bad.write_text("hello")
    # WHEN it is shown THEN the error is one line, with the characters shown
    proc = iowitness("show", str(bad), check=False)
    assert proc.returncode == 6
    assert len(proc.stderr.strip().splitlines()) == 1 and "not\\n\\x1b[31ma trace" in proc.stderr


# ---- files: created fresh, never through a link, private by default ----------------------------

def test_a_symlink_destination_is_refused_for_every_file_kind(hostile_trace, tmp_path, victim):
    # GIVEN a symlink planted at each output's name, pointing to a file that must not change
    for name, command in (("r.html", ["report", str(hostile_trace), "--html"]),
                          ("c.html", ["compare", str(hostile_trace), str(hostile_trace), "--html"]),
                          ("e.parquet", ["export", str(hostile_trace), "--parquet"])):
        link = tmp_path / name
        link.symlink_to(victim)
        # WHEN the command writes there THEN it refuses in one line with exit 5
        proc = iowitness(*command, str(link), check=False)
        assert proc.returncode == 5, proc.stderr
        assert proc.stderr.count("\n") == 1 and "symbolic link" in proc.stderr
        # AND the link and its target are as they were
        assert link.is_symlink() and os.readlink(link) == str(victim) and untouched(victim)


def test_a_trace_is_never_written_through_a_symlink(tmp_path, victim):
    # GIVEN a symlink at the trace's name
    link = tmp_path / "run.iwt"
    link.symlink_to(victim)
    # WHEN a trace is written there THEN it is refused and the target is untouched
    from iowitness.collector.format.tracewriter import TraceWriter

    with pytest.raises(OutputError, match="symbolic link.*choose another place with -o$"):
        TraceWriter(link, {})
    assert untouched(victim) and not list(tmp_path.glob(".run.iwt.*"))


def test_a_link_planted_at_the_old_temporary_name_is_left_alone(hostile_trace, tmp_path, victim):
    # GIVEN links at the names a temporary could be guessed to have (the old fixed ".part")
    out = tmp_path / "r.html"
    for guess in (tmp_path / "r.html.part", tmp_path / ".r.html.part"):
        guess.symlink_to(victim)
    # WHEN the report is written
    iowitness("report", str(hostile_trace), "--html", str(out))
    # THEN the report is a new regular file, the links and their target are as they were
    assert stat.S_ISREG(os.lstat(out).st_mode) and "<html" in out.read_text()
    assert untouched(victim) and (tmp_path / "r.html.part").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r.html.part", "hostile.iwt", "r.html",
                                                          "r.html.part", "victim"]


def test_outputs_are_0600_by_default_and_mode_gives_exactly_the_mode(hostile_trace, tmp_path):
    # GIVEN a umask that would take the group and other bits away
    old = os.umask(0o077)
    try:
        # WHEN a report and an export are written without and with --mode 0644
        iowitness("report", str(hostile_trace), "--html", str(tmp_path / "private.html"))
        iowitness("export", str(hostile_trace), "--parquet", str(tmp_path / "private.parquet"))
        iowitness("report", str(hostile_trace), "--html", str(tmp_path / "shared.html"), "--mode", "0644")
        iowitness("export", str(hostile_trace), "--parquet", str(tmp_path / "shared.parquet"), "--mode", "644")
    finally:
        os.umask(old)

    def mode(name):
        return stat.S_IMODE(os.lstat(tmp_path / name).st_mode)
    # THEN the defaults are 0600 (a trace too) and --mode is applied as given, umask or not
    assert mode("private.html") == mode("private.parquet") == mode("hostile.iwt") == 0o600
    assert mode("shared.html") == mode("shared.parquet") == 0o644


def test_an_existing_file_is_replaced_by_a_new_one_not_rewritten(hostile_trace, tmp_path, victim):
    # GIVEN a hard link to the victim at the report's name (a rewrite in place would change it)
    out = tmp_path / "r.html"
    os.link(victim, out)
    # WHEN the report is written THEN it is a new file, and the victim keeps its content
    iowitness("report", str(hostile_trace), "--html", str(out))
    assert os.lstat(out).st_ino != os.lstat(victim).st_ino and untouched(victim)


@pytest.mark.parametrize("bad", ["999", "0x1ff", "rw-r--r--", "", "04755", "77777"])
def test_a_bad_mode_is_one_line_and_exit_2(hostile_trace, tmp_path, bad):
    # WHEN --mode is not octal permission bits THEN exit 2, one line, nothing written
    proc = iowitness("report", str(hostile_trace), "--html", str(tmp_path / "r.html"), "--mode", bad, check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--mode" in proc.stderr
    assert not (tmp_path / "r.html").exists()
    with pytest.raises(UsageError):
        parse_mode(bad)


def test_default_names_are_numbered_and_never_shared(tmp_path, victim):
    # GIVEN a default name already taken by a file and its "-2" by a planted link
    (tmp_path / "iowitness-dd-1.iwt").write_text("an older trace")
    (tmp_path / "iowitness-dd-1-2.iwt").symlink_to(victim)
    # WHEN two recordings take a name each
    taken = [Output(tmp_path / "iowitness-dd-1.iwt").open_numbered() for _ in range(2)]
    for fd, _ in taken:
        os.close(fd)
    # THEN each got a new name, the link and the older trace are left alone
    assert [os.path.basename(p) for _, p in taken] == ["iowitness-dd-1-3.iwt", "iowitness-dd-1-4.iwt"]
    assert (tmp_path / "iowitness-dd-1.iwt").read_text() == "an older trace" and untouched(victim)


# ---- matplotlib reads no settings it was not given ---------------------------------------------

MARKER_BACKEND = """
import pathlib
pathlib.Path({marker!r}).write_text("imported")
from matplotlib.backends.backend_agg import *  # noqa
"""


def test_matplotlib_settings_planted_in_the_directory_or_environment_are_not_read(hostile_trace, tmp_path):
    # GIVEN a matplotlibrc in the current directory, in $MATPLOTLIBRC and in the user's config
    # dir, each setting a backend module that writes a marker when imported and a face colour
    here, elsewhere, config = tmp_path / "here", tmp_path / "elsewhere", tmp_path / "config"
    for folder, colour in ((here, "123456"), (elsewhere, "654321"), (config / "matplotlib", "abcdef")):
        folder.mkdir(parents=True)
        (folder / "matplotlibrc").write_text(f"backend: module://iowmarker\naxes.facecolor: {colour}\n"
                                             f"text.usetex: True\n")
    marker = tmp_path / "marker"
    (here / "iowmarker.py").write_text(MARKER_BACKEND.format(marker=str(marker)))
    env = {**os.environ, "MATPLOTLIBRC": str(elsewhere / "matplotlibrc"), "XDG_CONFIG_HOME": str(config),
           "PYTHONPATH": f"{here}:{os.environ.get('PYTHONPATH', '')}"}
    env.pop("MPLCONFIGDIR", None)
    # (the plant is live: matplotlib used plainly there imports the module and takes the colour)
    control = subprocess.run([sys.executable, "-c", "import matplotlib, matplotlib.pyplot as p; p.figure(); "
                              "print(matplotlib.rcParams['axes.facecolor'])"],
                             cwd=here, env=env, capture_output=True, text=True, timeout=120)
    assert marker.read_text() == "imported" and control.stdout.strip() == "#123456", control.stderr
    marker.unlink()
    # WHEN the HTML report is made there
    out = tmp_path / "r.html"
    iowitness("report", str(hostile_trace), "--html", str(out), cwd=here, env=env)
    # THEN no backend module was imported, no planted colour is drawn, and the charts are there
    page = out.read_text()
    assert not marker.exists()
    assert not re.search(r"#(123456|654321|abcdef)", page, re.IGNORECASE)
    assert page.count("<svg") >= 2


def test_the_default_trace_name_takes_only_plain_characters_of_the_command():
    from argparse import Namespace

    from iowitness.commands._recording import output_path

    # GIVEN a benchmark whose file name holds an escape, a newline and a space
    name = output_path(Namespace(output=None, mode=None), "/opt/bench/\x1b[31mmy bench\nv2")
    # THEN the default trace name keeps its letters, digits, dots and dashes only
    assert re.fullmatch(r"iowitness-__31mmy_bench_v2-\d{8}-\d{6}\.iwt", name), name
