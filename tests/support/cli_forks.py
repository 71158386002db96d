"""The iowitness command line run from a warm process: each call a fork of it, not a new Python.

A fresh `python -m iowitness.cli` spends about 0.6 s of CPU (1.2-1.4 s of wall time on the loaded
development machine) importing pandas, numpy and the command modules before it parses a word,
and the suite makes hundreds of such calls. Here one server per test process imports all that
once; every call is a child forked from it that runs `iowitness.cli` as `__main__`, exactly as
`python -m iowitness.cli` does, in its own process: its own exit code, file descriptors 0, 1 and
2 on files, the caller's environment and working directory, atexit handlers and non-daemon
threads finished as at interpreter exit, an uncaught exception printed as Python prints it.

What a fork cannot give falls back to a real start-up (tests/support/cli.py): another working
directory (which iowitness a `-m` run imports depends on it), a command that launches or follows
other processes (run, attach, replay: its output pipes stay open while they live; but for one the
caller expects refused for its words, `refused=True`, which starts nothing), an environment that changes how the
interpreter or the loader starts (PYTHON*, LD_*), a call while another one is under way (a
thread of the same test), and IOWITNESS_TEST_FORKS=0 (every call a real start-up). Tests whose
point is the process itself (signals, start-up time, another venv) start it themselves.
"""

from __future__ import annotations

import atexit
import json
import locale
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

_SERVER_IMPORTS = ("iowitness.cli",)
# commands that launch or follow other processes: a real start-up, on pipes, so that the call
# returns when the last holder of its output does (a benchmark left running untraced by
# --on-fault continue prints to the end), as a user's shell sees it; the seconds they record
# dwarf the start-up anyway
LAUNCHERS = frozenset({"run", "attach", "replay"})


def _serve() -> None:
    """Read one JSON request a line on stdin, answer `pid N` then `exit STATUS` on stdout."""
    requests, replies = os.fdopen(os.dup(0), "rb", buffering=0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)   # a child has only 0, 1 and 2 of the server's (and what the preloaded modules opened)
    sys.path[0] = os.getcwd()   # as `python -m` has it, not this file's directory
    import iowitness.cli as cli

    cli.build_parser()   # imports every command module, and what they import (pandas, numpy)
    # the command runs as a fresh __main__, so it must not be in sys.modules (runpy warns then)
    del sys.modules["iowitness.cli"]
    import iowitness
    del iowitness.cli
    line = b""
    while True:
        chunk = requests.read(65536)
        if not chunk:
            return
        line += chunk
        while b"\n" in line:
            request, line = line.split(b"\n", 1)
            pid = os.fork()
            if pid == 0:
                _child(json.loads(request), requests, replies)
            os.write(replies, f"pid {pid}\n".encode())
            _, status = os.waitpid(pid, 0)
            os.write(replies, f"exit {os.waitstatus_to_exitcode(status)}\n".encode())


def _child(request: dict, requests, replies: int) -> None:
    """Be `python -m iowitness.cli ARGS`, and never return to the server's loop."""
    code = 1
    try:
        requests.close()
        os.close(replies)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, (path, flags) in enumerate(((request["stdin"], os.O_RDONLY),
                                            (request["stdout"], os.O_WRONLY), (request["stderr"], os.O_WRONLY))):
            opened = os.open(path, flags)
            os.dup2(opened, fd)
            os.close(opened)
        # new stdio objects: the server's own may hold buffered bytes of its requests
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False, errors="backslashreplace", buffering=1)
        sys.argv = ["-m", *request["argv"]]
        code = _run_main()
        threading._shutdown()   # type: ignore[attr-defined]   # what interpreter exit does, in its order
        atexit._run_exitfuncs()
    except BaseException:   # noqa: BLE001 - whatever happens, the child must not return to the loop
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:   # noqa: BLE001, S110 - a closed pipe: nothing more to say
                pass
        os._exit(code)


def _run_main() -> int:
    import runpy
    import traceback

    try:
        runpy.run_module("iowitness.cli", run_name="__main__", alter_sys=True)
        return 0
    except SystemExit as done:
        if done.code is None:
            return 0
        if isinstance(done.code, int):
            return done.code
        print(done.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        traceback.print_exc()
        return 128 + signal.SIGINT
    except BaseException:   # noqa: BLE001 - printed as the interpreter prints it
        traceback.print_exc()
        return 1


class _Server:
    def __init__(self) -> None:
        self.cwd = os.path.realpath(os.getcwd())   # the server's imports are the ones a run from here makes
        # in a session of its own: a signal a test sends its own process group (a Ctrl-C) must not end it
        self.proc = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     start_new_session=True)
        self.lock = threading.Lock()
        self.buffer = b""
        atexit.register(self.close)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def _line(self, deadline: float | None) -> str | None:
        while b"\n" not in self.buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self.proc.stdout], [], [], wait)[0]:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                raise RuntimeError("the iowitness fork server of the tests exited")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def run(self, args: list[str], env: dict[str, str], input: str | None,
            timeout: float | None) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory(prefix="iowitness-fork-") as tmp:
            paths = {name: os.path.join(tmp, name) for name in ("stdin", "stdout", "stderr")}
            for name, path in paths.items():
                with open(path, "w") as f:
                    f.write(input if name == "stdin" and input is not None else "")
            request = {"argv": args, "cwd": os.getcwd(), "env": env, **paths}
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
            pid = int(self._line(None).split()[1])
            deadline = None if timeout is None else time.monotonic() + timeout
            reply = self._line(deadline)
            timed_out = reply is None
            if timed_out:   # as subprocess.run: kill it, then say so
                os.kill(pid, signal.SIGKILL)
                reply = self._line(None)
            out, err = (_text(paths[name]) for name in ("stdout", "stderr"))
        argv = [sys.executable, "-m", "iowitness.cli", *args]
        if timed_out:
            raise subprocess.TimeoutExpired(argv, timeout, out, err)
        return subprocess.CompletedProcess(argv, int(reply.split()[1]), out, err)


def _text(path: str) -> str:
    """The bytes as subprocess.run(text=True) gives them: the locale's encoding, universal newlines."""
    with open(path, "rb") as f:
        data = f.read().decode(locale.getpreferredencoding(False))
    return data.replace("\r\n", "\n").replace("\r", "\n")


_server: _Server | None = None
_made = threading.Lock()


def forked(args: list[str], *, timeout: float | None = None, env: dict[str, str] | None = None,
           cwd=None, input: str | None = None, refused: bool = False,
           **kwargs) -> subprocess.CompletedProcess | None:
    """The command's result from a fork of the warm server; None when only a real start-up will do.
    refused: a launcher the caller expects refused before it starts anything (a bad option), whose
    output no benchmark holds open."""
    global _server
    env = dict(os.environ if env is None else env)
    if (kwargs or os.environ.get("IOWITNESS_TEST_FORKS") == "0" or (args and str(args[0]) in LAUNCHERS and not refused)
            or any(key.startswith(("PYTHON", "LD_")) and env.get(key) != os.environ.get(key)
                   for key in {*env, *os.environ})):
        return None
    with _made:
        if _server is None or _server.proc.poll() is not None:
            _server = _Server()
        server = _server
    if os.path.realpath(os.getcwd() if cwd is None else cwd) != server.cwd:
        return None
    if not server.lock.acquire(blocking=False):   # another thread's call is under way
        return None
    try:
        return server.run([str(a) for a in args], env, input, timeout)
    finally:
        server.lock.release()


if __name__ == "__main__":
    _serve()
