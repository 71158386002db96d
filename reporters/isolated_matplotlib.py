"""matplotlib with no settings but its own: none from the current directory or the environment.

The charts of `report --html` run as root in directories other users can write to; matplotlib
would read a planted ./matplotlibrc (a style, `text.usetex` running LaTeX, or a backend module
to import). docs/outputs-and-safety.md states the rule; tests/unit/test_output_safety.py plants one.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

# what matplotlib reads at import besides its own files: each could set a style, have text
# typeset by an external LaTeX, or name a backend module to import (`backend: module://x`)
_SETTINGS_FROM_ENVIRONMENT = ("MATPLOTLIBRC", "MPLCONFIGDIR", "MPLBACKEND")


def imported():
    """matplotlib, imported so that it reads no settings but its built-in ones.

    At import it reads ./matplotlibrc, then $MATPLOTLIBRC, then the matplotlibrc of $MPLCONFIGDIR
    or ~/.config/matplotlib, and $MPLBACKEND: for root in another user's directory, anyone's. So
    it is imported with an empty private directory as both the current directory and its
    config directory, and those variables hidden. Its font cache stays where it is when that
    place is ours (else it is rebuilt in the private directory: about 1 s). Every chart is
    then drawn with the built-in defaults plus ours (style), whatever a library user set."""
    if "matplotlib" in sys.modules:
        return sys.modules["matplotlib"]
    from iowitness.extras import require

    require("matplotlib", "html", "the HTML report's charts")   # missing: one line, before any chdir
    private = tempfile.mkdtemp(prefix="iowitness-mpl-")
    saved_env = {k: os.environ.get(k) for k in (*_SETTINGS_FROM_ENVIRONMENT, "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    try:
        here = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        here = None   # an unreadable or removed current directory: nothing to read there either
    try:
        for k in _SETTINGS_FROM_ENVIRONMENT:
            os.environ.pop(k, None)
        os.environ["XDG_CONFIG_HOME"] = private
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        if not _ours(cache):
            os.environ["XDG_CACHE_HOME"] = private
        os.chdir(private)
        import matplotlib
        import matplotlib.backends.backend_svg  # noqa: F401 - config and cache dirs are fixed on first use
        import matplotlib.figure  # noqa: F401
        import matplotlib.font_manager  # noqa: F401
    finally:
        if here is not None:
            os.fchdir(here)
            os.close(here)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(private, ignore_errors=True)
    return matplotlib


def _ours(folder: str) -> bool:
    """True when `folder` is a real directory of this user (not a link someone else planted)."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return os.path.isdir(folder) and not os.path.islink(folder) and st.st_uid == os.geteuid()


def style(ours: dict) -> dict:
    """Settings for rc_context: matplotlib's built-in ones (rcParamsDefault, from its own
    matplotlibrc), then `ours`."""
    defaults = imported().rcParamsDefault
    return {**{k: v for k, v in defaults.items() if k != "backend"}, **ours}
