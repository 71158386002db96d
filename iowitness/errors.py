"""The one error family of iowitness. Only `main()` turns these into a message and an exit code.

Exit codes (documented in docs/exit-codes.md):
  0  success (`run`: the benchmark's own exit code is passed on instead)
  1  `check`-style commands: a finding, not a failure
  2  usage error (bad flags or arguments)
  3  this machine cannot trace: not root, no BTF, probe load or attach refused
  4  a target does not exist: PID, command, file or directory
  5  cannot write the output (trace, export)
  6  a trace file cannot be read: not a regular file, not a trace, unknown version, damaged start
  130, 143  interrupted (SIGINT, SIGTERM) before the benchmark started, or with `run
            --on-fault continue` (128 + the signal's number, as shells report it)
"""

EXIT_USAGE = 2
EXIT_CANNOT_TRACE = 3
EXIT_NOT_FOUND = 4
EXIT_OUTPUT = 5
EXIT_BAD_TRACE = 6
EXIT_TOO_LARGE = 7


class IowitnessError(Exception):
    """A problem the user can act on: the message says what happened and what to do."""

    exit_code = 1


class UsageError(IowitnessError):
    exit_code = EXIT_USAGE


class CannotTrace(IowitnessError):
    exit_code = EXIT_CANNOT_TRACE


class NotFound(IowitnessError):
    exit_code = EXIT_NOT_FOUND


class OutputError(IowitnessError):
    exit_code = EXIT_OUTPUT


class BadTrace(IowitnessError):
    exit_code = EXIT_BAD_TRACE


class TooLarge(IowitnessError):
    """The trace cannot be analysed in this machine's memory (analysis/read/memory_guard.py)."""
    exit_code = EXIT_TOO_LARGE


class Interrupted(IowitnessError):
    """SIGINT or SIGTERM ended iowitness before it could pass on a benchmark's exit code."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.exit_code = 128 + signum
