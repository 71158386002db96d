"""iowitness: watch a file-system benchmark from the kernel and check the numbers it prints.

    >>> import iowitness
    >>> t = iowitness.load("run.iwt")
    >>> t.events            # one row per syscall, a pandas DataFrame
    >>> t.meta["command"]   # what was traced, where, and what it printed
"""

from iowitness.version import __version__

__all__ = ["__version__", "load"]


def load(path):
    """Load a saved trace: events as a pandas DataFrame plus its metadata."""
    from iowitness.analysis.read.run import load as _load

    return _load(path)
