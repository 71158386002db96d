#!/usr/bin/env bash
# test.sh — set this machine up (scripts/setup.sh) and run the whole test suite.
# As root, the kernel tests run real probes against real IOzone, fio, dd and strace;
# without root they are skipped, each with its reason. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
