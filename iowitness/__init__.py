"""iowitness: watch a file-system benchmark from the kernel and check the numbers it prints.

    >>> import iowitness
    >>> t = iowitness.load("run.iwt")
    >>> t.events            # one row per syscall, a pandas DataFrame
    >>> t.meta["command"]   # what was traced, where, and what it printed
"""

__version__ = "0.1.0"


def load(path):
    """Load a saved trace: events as a pandas DataFrame plus its metadata."""
    from iowitness.collector.trace import load as _load

    return _load(path)
