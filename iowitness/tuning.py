"""Settings read from the environment (IOWITNESS_*): one reader, so a bad value is one line
and exit 2 wherever it is read, never a traceback or a silently odd figure."""

from __future__ import annotations

import os

from iowitness.errors import UsageError


def count_from_env(name: str, default: int, least: int = 1) -> int:
    """The whole number the environment variable `name` gives (default when unset or empty);
    UsageError when it is not a whole number of at least `least`."""
    given = os.environ.get(name, "").strip()
    if not given:
        return default
    try:
        value = int(given.replace("_", ""), 0)
    except ValueError:
        value = None
    if value is None or value < least:
        raise UsageError(f"{name}={given!r} is not a whole number of at least {least:,}; "
                         f"unset it to use the default, {default:,}")
    return value
