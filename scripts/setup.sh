#!/usr/bin/env bash
# setup.sh — make this Debian 12 machine ready to build, run and test iowitness.
# Idempotent: a second run only checks and returns in seconds.
#   apt: clang, llvm, libbpf-dev, bpftool, libelf-dev, zlib1g-dev, fio, strace, sysbench, fsmark, ioping, postmark, dbench, stress-ng, hdparm, bonnie++,
#        iozone3 (Debian non-free, added to the apt sources when missing),
#        chromium (the HTML report tests open reports in headless Chromium),
#        btrfs-progs and xfsprogs (tests on btrfs and xfs loop devices), bpftrace (the bpftrace backend),
#        default-jre-headless (Spark local mode reads an exported dataset: tests/kernel/test_dataset_real.py)
#   venv: .venv with iowitness installed (the install builds the BPF probe)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev make gcc fio strace iozone3 sysbench python3-venv chromium btrfs-progs xfsprogs default-jre-headless bpftrace fsmark ioping postmark dbench stress-ng hdparm bonnie++)

need_root() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: installing system packages needs root; run: sudo $0" >&2
        exit 3
    fi
}

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# the package names and the non-free source below are Debian 12's: on any other system, say
# what is missing and stop, instead of adding bookworm's sources to another distribution
os_release=${OS_RELEASE:-/etc/os-release}   # OS_RELEASE: for the test of this refusal
known_system() {
    [ -r "$os_release" ] && . "$os_release" && [ "${ID:-}" = debian ] && [ "${VERSION_ID:-}" = 12 ]
}

if [ "${#missing[@]}" -gt 0 ]; then
    if ! known_system; then
        echo "setup: this script installs packages on Debian 12 only (this is $( (. "$os_release" 2>/dev/null && echo "${PRETTY_NAME:-$ID}") || uname -s)); install by hand: ${missing[*]}" >&2
        exit 4
    fi
    need_root
    # iozone3 lives in Debian's non-free component, which a stock machine does not enable.
    if ! grep -rqsE '^(Components:.*non-free([[:space:]]|$)|deb .* non-free)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        echo "setup: adding Debian non-free component (for iozone3)" >&2
        cat > /etc/apt/sources.list.d/iowitness-non-free.sources <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    fi
    echo "setup: apt-get install ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# bpftrace (the tests' second tracer, and `--backend bpftrace`) attaches syscall tracepoints through
# tracefs, which a freshly booted machine may not have mounted; iowitness itself does not need it
if [ "$(id -u)" -eq 0 ] && [ -d /sys/kernel/tracing ] && [ ! -d /sys/kernel/tracing/events ]; then
    echo "setup: mounting tracefs on /sys/kernel/tracing (for bpftrace)" >&2
    mount -t tracefs nodev /sys/kernel/tracing || echo "setup: could not mount tracefs; bpftrace's tests will fail" >&2
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv" >&2
    "$python" -m venv .venv
fi
stamp=.venv/.iowitness-installed
# reinstall when the package sources or the probe's sources changed since the last install, or the
# built probe is gone. Not for what the build itself writes (probes/build): the kernel tests rewrite
# it (a wheel built in the tree, the sampled-clock bench putting the probe back), and a reinstall
# costs half a minute on a machine already set up
if [ ! -f "$stamp" ] || [ ! -f probes/build/iowitness.bpf.o ] \
    || [ -n "$(find pyproject.toml setup.py probes -path probes/build -prune -o -newer "$stamp" -print -quit 2>/dev/null)" ]; then
    echo "setup: installing iowitness into .venv (builds the BPF probe)" >&2
    log=.venv/install.log
    if ! { .venv/bin/python -m pip install --upgrade pip && IOWITNESS_REQUIRE_PROBE=1 .venv/bin/python -m pip install -e '.[test]'; } >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        echo "setup: installing iowitness failed; the whole log is in $log" >&2
        exit 1
    fi
    touch "$stamp"
fi
