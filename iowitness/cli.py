"""The `iowitness` command: one module per subcommand in iowitness/commands/.

Each command module has a docstring (its help, ending with an example), `add_arguments(parser)`
and `execute(args) -> int`. Errors are IowitnessError subclasses, turned into one line on
stderr and an exit code here and nowhere else; so are argparse's own complaints.
"""

from __future__ import annotations

# the modules are imported inside main(): a Ctrl-C while they load is then one line too
import signal
import sys

from iowitness.errors import EXIT_USAGE, IowitnessError, UsageError
from iowitness.escape import terminal
from iowitness.version import __version__

COMMANDS = ["run", "attach", "import", "show", "report", "compare", "check", "export", "replay", "doctor"]
# a command whose name is a Python keyword lives in a module with a trailing underscore
MODULES = {"import": "import_"}


def build_parser():
    import argparse
    import importlib

    class Parser(argparse.ArgumentParser):
        """argparse's usage errors as one line, like every other error (its default is the
        usage text, then the error)."""

        def error(self, message: str):
            self.exit(EXIT_USAGE, f"{self.prog}: {message}; see {self.prog} --help\n")

    parser = Parser(
        prog="iowitness",
        description="Watch a file-system benchmark from the kernel and check the numbers it prints.",
        epilog="Example: sudo iowitness run -- iozone -i0 -i1 -s 64m -r 4k -f /tmp/w/iozone.tmp",
    )
    parser.add_argument("--version", action="version", version=f"iowitness {__version__}")
    parser.add_argument("--completion", choices=["bash"],
                        help="print the shell completion script (eval \"$(iowitness --completion bash)\"; zsh: "
                             "after autoload bashcompinit && bashcompinit)")
    parser.add_argument("--print-schema", metavar="NAME",
                        help="print the JSON schema of an output (report, compare, compare-groups, hosts) and exit")
    parser.add_argument("--list-specs", action="store_true",
                        help="list the claim specs shipped with iowitness (for check/report --spec NAME or FILE; "
                             "chosen by the recorded command) and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"iowitness.commands.{MODULES.get(name, name)}")
        doc = (module.__doc__ or "").strip()
        summary = doc.splitlines()[0] if doc else name
        command = sub.add_parser(
            name, help=summary, description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(command)
        command.set_defaults(execute=module.execute)
    return parser


def _reuse_freed_memory() -> None:
    """Keep freed memory in the process for the next array instead of handing it back.

    Analysing a big trace makes hundreds of short-lived arrays of tens of MiB. By default glibc
    maps each one afresh and unmaps it when freed, so every page of every array is faulted in
    again: a third of `report`'s time on 10 million events went to the kernel doing that. A
    command is one short process, so it keeps what it freed (the peak is unchanged)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):   # not glibc: keep its defaults
        return
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
    mallopt(M_MMAP_MAX, 0)
    mallopt(M_TRIM_THRESHOLD, 2**30)


class _Terminated(BaseException):
    """SIGTERM while iowitness starts (its modules load in seconds), before a command handles it."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def _catch_sigterm():
    """SIGTERM raised as _Terminated from now on, as SIGINT raises KeyboardInterrupt: one line and
    exit 143 instead of a silent death (a recording command's own latch takes over once it runs;
    a SIGTERM the caller ignored, nohup's, stays ignored). The handler it replaced, to restore."""
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            return signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:   # not the main thread (an embedding program's): leave signals alone
        pass
    return None


def main(argv: list[str] | None = None) -> int:
    previous = _catch_sigterm()
    try:
        return _main(argv)
    except _Terminated:
        print("iowitness: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _shipped(args) -> int:
    """--print-schema NAME, --list-specs: files the install carries (iowitness/shipped.py)."""
    from iowitness import shipped

    if args.print_schema:
        found = shipped.schemas()
        if args.print_schema not in found:
            names = ", ".join(found) or "none (not shipped)"
            raise UsageError(f"no schema {args.print_schema!r}; the schemas are {names}")
        print(found[args.print_schema].read_text(), end="")
        return 0
    for name, path in shipped.specs().items():
        print(f"{name}\t{path}\t{shipped.spec_summary(path)}")
    return 0


def _group_separator(argv: list[str]) -> list[str]:
    """`compare A1 A2 -- B1 B2`: argparse drops a `--` between positionals, so compare's
    separator of two groups becomes its option --vs (only for compare; `run -- CMD` keeps it)."""
    command = next((i for i, a in enumerate(argv) if not a.startswith("-")), None)
    if command is None or argv[command] != "compare" or "--" not in argv[command:]:
        return argv
    at = argv.index("--", command)
    return [*argv[:at], "--vs", *argv[at + 1:]]


def _loaded_parser():
    """build_parser() with SIGINT and SIGTERM held back while the modules load: a signal that
    lands inside a C extension's initialisation (numpy's, under load) comes out of the import
    as an ImportError and a traceback, not as the signal. Held, it is delivered as soon as the
    modules are in, where it is one line and its exit code. Held by a handler that only notes
    it, not by the thread's signal mask: a process-directed signal goes to any thread that does
    not block it, and Python runs its handler in the main thread whichever thread took it."""
    held = (signal.SIGINT, signal.SIGTERM)
    arrived: list[int] = []
    try:
        previous = {signum: signal.signal(signum, lambda signum, _frame: arrived.append(signum))
                    for signum in held}
    except ValueError:   # not the main thread: no handler can be set, and none is needed
        return build_parser()
    try:
        return build_parser()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        for signum in dict.fromkeys(arrived):
            signal.raise_signal(signum)


def _main(argv: list[str] | None) -> int:
    try:
        _reuse_freed_memory()
        parser = _loaded_parser()
        args = parser.parse_args(_group_separator(sys.argv[1:] if argv is None else list(argv)))
        if args.completion:
            from iowitness.completion import bash

            print(bash(parser), end="")
            return 0
        if args.print_schema or args.list_specs:
            return _shipped(args)
        if not getattr(args, "execute", None):
            print(f"iowitness: say which command to run ({', '.join(COMMANDS)}); see iowitness --help",
                  file=sys.stderr)
            return EXIT_USAGE
        return args.execute(args)
    except IowitnessError as exc:
        print(f"iowitness: {terminal(exc)}", file=sys.stderr)   # one line, whatever the names in it
        return exc.exit_code
    except KeyboardInterrupt:
        print("iowitness: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
