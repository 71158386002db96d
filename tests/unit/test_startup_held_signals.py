"""The start-up window's signals held back while iowitness's modules load (iowitness/cli.py
_loaded_parser): a SIGINT that lands inside a C extension's initialisation (numpy's, seen
beside two CPU hogs on 2026-12-07) came out of the import as an ImportError traceback. Held, it
is delivered once the modules are in, where main() makes it one line."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from iowitness import cli


@pytest.fixture
def another_thread():
    """A second thread that takes signals, as pytest-xdist's worker has (CI of stop 42: a mask on
    the main thread alone let the kernel hand the SIGINT to it, and Python ran the handler in the
    main thread all the same, inside the loading)."""
    done = threading.Event()
    thread = threading.Thread(target=done.wait)
    thread.start()
    yield thread
    done.set()
    thread.join()


def test_a_sigint_while_the_modules_load_arrives_after_them(monkeypatch, another_thread):
    seen = []

    def loading():
        # GIVEN a SIGINT sent to iowitness while its modules load
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)   # long enough for the other thread to take it, were it free to
        seen.append("loaded")   # (a KeyboardInterrupt here would be the C extension's ImportError)
        return "parser"

    monkeypatch.setattr(cli, "build_parser", loading)
    # WHEN the parser is built
    with pytest.raises(KeyboardInterrupt):
        cli._loaded_parser()
    # THEN the loading ran to its end, and the signal came after it, as a KeyboardInterrupt
    assert seen == ["loaded"]
    # AND nothing stays blocked for what iowitness starts later (a benchmark inherits the mask)
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())


def test_a_sigint_while_iowitness_starts_is_one_line_and_130(monkeypatch, capsys):
    def loading():
        os.kill(os.getpid(), signal.SIGINT)
        return None

    monkeypatch.setattr(cli, "build_parser", loading)
    assert cli.main(["report", "x.iwt"]) == 130
    assert capsys.readouterr().err == "iowitness: interrupted\n"
