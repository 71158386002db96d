"""Test tiers: tests/unit needs nothing special; tests/kernel (marker `kernel`) needs root,
BTF and the built probe, and is skipped with the reason when any of them is missing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from iowitness.collector import preflight

REPO = Path(__file__).resolve().parent.parent


def _kernel_skip_reason() -> str | None:
    for check in preflight.run_checks():
        if check.blocking and not check.ok:
            return f"kernel tests need {check.name}: {check.detail}"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _kernel_skip_reason()
    for item in items:
        if "tests/kernel" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.kernel)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        pytest.skip(f"{name} is not installed (scripts/setup.sh installs it)")
    return path
