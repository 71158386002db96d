"""tests/conftest.py's lists of kernel tests (SERIAL, FAST_PROBE_ONLY, PROBE_INDEPENDENT) name tests
that exist: a renamed test must not fall out of its list silently (and, say, run beside others)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import conftest

KERNEL = Path(__file__).resolve().parents[1] / "kernel"


@pytest.mark.parametrize("name", ["SERIAL", "FAST_PROBE_ONLY", "PROBE_INDEPENDENT"])
def test_every_entry_names_a_kernel_test_file_or_function(name):
    # GIVEN a list of tests/conftest.py, WHEN each entry is looked up in tests/kernel
    missing = []
    for entry in getattr(conftest, name):
        file, _, function = entry.partition("::")
        path = KERNEL / file
        if not path.is_file() or (function and not re.search(rf"^def {re.escape(function)}\(", path.read_text(),
                                                             re.MULTILINE)):
            missing.append(entry)
    # THEN every one is there
    assert not missing, f"{name} names tests that do not exist: {missing}"
