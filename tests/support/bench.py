"""The benchmark scripts' trace builders (scripts/bench/*.py), loaded as the modules they are:
scripts/ is no package."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "scripts" / "bench"


def script(name: str):
    """scripts/bench/NAME.py as a module (its siblings importable, as when it runs)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
