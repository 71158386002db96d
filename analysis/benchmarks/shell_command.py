"""A benchmark started by a shell: `sh -c "dd if=... of=... bs=1M count=64"` runs dd.

The benchmark is chosen from the traced command line's program (benchmarks.recognise), and its
module reads its options from the same argv (dd's of=, bs=, count=; IOzone's -F). A shell
given one simple command to run (`sh -c`, `bash -c`, `dash -c`, with other short options
before it: `sh -ec`) runs that command, as `exec CMD` does: its words are the benchmark's
command line. What the unwrapping takes away, as the shell would: `exec`, variable assignments
before the command (`LC_ALL=C dd ...`), and redirections (`2>&1`, `>out.txt`: the benchmark's
output goes where they say, and the trace's output timeline records it wherever that is).

A command line of several commands (a pipeline `dd ... 2>&1 | cat`, a list `a; b`, `&&`, a
subshell, a command substitution: which of them is the benchmark is not for iowitness to
guess), or one whose words the shell expands (`of=$F`: the value is not recorded), is not
unwrapped. It stays as recorded, and `note` says so in one line; the output may still be
recognised by its own look (benchmarks.sniff), without what its command line says.

    argv, note = unwrapped(["sh", "-c", "exec dd if=/dev/zero of=f bs=1M count=8 2>&1"])
    # (["dd", "if=/dev/zero", "of=f", "bs=1M", "count=8"], None)

Reading the command line rather than the processes the trace saw: the trace records a child's
name (comm, 15 characters), not its argv, and the benchmark's module needs its options.
"""

from __future__ import annotations

import os
import re
import shlex

SHELLS = ("sh", "bash", "dash", "ash", "ksh", "mksh", "zsh", "busybox sh")
# a redirection: [fd]op target ("2>&1", ">out", ">> log", "<in", "&>all"); the target may be
# separated by blanks, and is a word or &fd / &-
REDIRECT = re.compile(r"(?<![^\s])(?:\d+|&)?(?:>>|>&|<&|>\||<>|>|<)\s*(?:&?-|&?\d+(?![^\s])|[^\s<>|;&()]+)")
# what makes a command line more than one simple command
COMPOUND = re.compile(r"[|;&()`\n]|\$\(")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
MOST_NESTED = 4


def _masked(text: str) -> str | None:
    """`text` with every quoted or escaped character replaced by "x" (same length), so that
    operators inside quotes are not seen; None when a quote is left open."""
    out, quote, i = [], "", 0
    while i < len(text):
        c = text[i]
        if quote == "'":
            out.append("'" if c == "'" else "x")
            quote = "" if c == "'" else quote
        elif c == "\\" and i + 1 < len(text):
            out.append("xx")
            i += 1
        elif quote == '"':
            out.append('"' if c == '"' else "x")
            quote = "" if c == '"' else quote
        elif c in "'\"":
            out.append(c)
            quote = c
        else:
            out.append(c)
        i += 1
    return None if quote else "".join(out)


def _script(argv: list[str]) -> str | None:
    """The command text a shell's argv runs with -c, or None when it is no shell -c."""
    program = os.path.basename(argv[0]) if argv else ""
    rest = argv[1:]
    if program == "busybox" and rest[:1] in (["sh"], ["ash"]):
        program, rest = "sh", rest[1:]
    if program not in SHELLS:
        return None
    with_c = False
    for i, word in enumerate(rest):
        if word == "--":
            return rest[i + 1] if with_c and i + 1 < len(rest) else None
        if re.fullmatch(r"-[A-Za-z]+", word) or re.fullmatch(r"\+[A-Za-z]+", word):
            with_c = with_c or "c" in word[1:]
            continue
        if word in ("-o", "+o"):
            continue            # `set -o OPTION`: its argument is the next word, never the command
        if i > 0 and rest[i - 1] in ("-o", "+o"):
            continue
        return word if with_c else None
    return None


def unwrapped(command: list[str] | None) -> tuple[list[str], str | None]:
    """(the argv a command runs, a one-line note or None): a shell's -c simple command as its
    own argv; anything else as it is (module doc)."""
    argv = list(command or [])
    for _ in range(MOST_NESTED):
        text = _script(argv)
        if text is None:
            return argv, None
        masked = _masked(text)
        if masked is None:
            return argv, f"the shell's command line {text!r} has a quote left open: read as recorded"
        # cut the redirections out (positions of the masked text are those of the text)
        kept, at = [], 0
        for m in REDIRECT.finditer(masked):
            kept.append(text[at:m.start()])
            at = m.end()
        kept.append(text[at:])
        plain = "".join(kept)
        if COMPOUND.search(REDIRECT.sub(" ", masked)):
            return argv, (f"the command runs {os.path.basename(argv[0])} -c {text!r}, more than one command (a "
                          "pipeline, a list or a subshell): the benchmark is not read from it; give "
                          "the benchmark's own command line to `run`, or --format / --spec")
        if "$" in masked:
            return argv, (f"the command runs {os.path.basename(argv[0])} -c {text!r}, whose words the shell expands "
                          "($...): the benchmark is not read from it; give the benchmark's own command line to "
                          "`run`, or --format / --spec")
        try:
            words = shlex.split(plain)
        except ValueError:
            return argv, f"the shell's command line {text!r} cannot be split into words: read as recorded"
        while words and (words[0] == "exec" or ASSIGNMENT.match(words[0])):
            words = words[1:]
        if not words:
            return argv, None
        argv = words
    return argv, None


def command_of(command: list[str] | None) -> list[str]:
    """The argv a traced command runs (unwrapped's, without the note)."""
    return unwrapped(command)[0]
