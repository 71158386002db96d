#!/usr/bin/env bash
# demo.sh — set this machine up (scripts/setup.sh), trace a small IOzone run, show what was
# recorded, then the phases and the verdict on every number IOzone printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
work=$(mktemp -d /tmp/iowitness-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
trace=${TRACE:-iowitness-demo.iwt}
echo "== iowitness run -o $trace -- iozone -i0 -i1 -i2 -s 64m -r 64k -f $work/iozone.tmp"
.venv/bin/iowitness run -o "$trace" -- iozone -i0 -i1 -i2 -s 64m -r 64k -f "$work/iozone.tmp"
echo
echo "== iowitness show $trace"
.venv/bin/iowitness show "$trace"
echo
echo "== iowitness report $trace"
.venv/bin/iowitness report "$trace"
