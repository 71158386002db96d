#!/usr/bin/env bash
# test.sh — set this machine up (scripts/setup.sh), lint and type-check (ruff, mypy: a failure fails
# the run), then run the whole test suite.
# As root, the kernel tests run real probes against real IOzone, fio, dd and strace;
# without root they are skipped, each with its reason. Extra arguments go to pytest (and
# then only that pytest run is made).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ $# -gt 0 ]; then
    exec .venv/bin/python -m pytest "$@"
fi
# lint and types first (seconds; configured in pyproject.toml, CONTRIBUTING.md says how to fix)
echo "test.sh: ruff check (lint)" >&2
.venv/bin/ruff check .
echo "test.sh: scripts/typecheck.py (mypy on the installed package's layout)" >&2
.venv/bin/python scripts/typecheck.py
# the unit tier on four processes (pytest-xdist, a test file per process at a time: its module
# fixtures are made once); the kernel tier on two processes, but for the files that measure
# time or cost or touch what the whole machine shares (marked `serial` by tests/conftest.py: they
# run after, one at a time); then the recording tests once more through the compatible probe
# (serial: test_run.py holds a serial test).
# Each lists its slowest tests. A failing part still lets the next ones run; the run fails at the
# end, with the first failure's exit code
failed=0
part() { "$@" || { code=$?; [ "$failed" -ne 0 ] || failed=$code; echo "test.sh: failed (exit $code): $*" >&2; }; }
# the unit tier on four processes on this 2-core machine: it is CPU only, and beside other work (two
# CPU hogs: docs/suite-time.md) four processes take a larger share of the cores than two
echo "test.sh: the unit tier (four processes)" >&2
part .venv/bin/python -m pytest -n 4 --dist loadfile --durations=30 tests/unit
echo "test.sh: the kernel tier (two processes, a file per process at a time)" >&2
part .venv/bin/python -m pytest -n 2 --dist loadfile -m "not serial" --durations=40 tests/kernel
echo "test.sh: the kernel tier's serial files (tests/conftest.py SERIAL), one at a time" >&2
part .venv/bin/python -m pytest -m serial --durations=10 tests/kernel
# the recording tests once more through the compatible probe, the object kernels 5.8 to 6.1
# load (the fast one is what this kernel chooses, so only this run tests the other)
echo "test.sh: the recording tests again through the compatible probe (--probe compat), two processes, then the serial ones" >&2
compat=(tests/kernel/test_known_calls.py tests/kernel/test_phases_real.py tests/kernel/test_run.py)
part .venv/bin/python -m pytest --probe compat -n 2 --dist loadfile -m "not serial" --durations=10 "${compat[@]}"
part .venv/bin/python -m pytest --probe compat -m serial --durations=10 "${compat[@]}"
exit "$failed"
