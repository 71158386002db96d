"""The probe's programs stay far from the kernel's verifier limit (1,000,000 instructions walked).

Why: on Linux 6.18.44 the verifier refused on_sys_exit, which earlier 6.18 kernels had loaded:
io_submit's walk of its iocbs, inlined into on_sys_exit's bpf_loop callback, took it past the
limit, and then past 512 bytes of stack. A kernel whose verifier prunes less than the one a
change was tried on must still load the probe, so each program is held to a quarter of the
limit here, where the kernel itself says what it walked (bpf_prog_info.verified_insns).
Ground truth is the kernel's count, not ours."""

from __future__ import annotations

import pytest

from iowitness.collector.libbpf import VERIFIER_LIMIT
from iowitness.collector.probe import TAIL_CALLED, Probe, ProbeConfig
from iowitness.collector.targets import FileSet

pytestmark = pytest.mark.kernel


@pytest.mark.parametrize("which", ["fast", "compat"])
def test_every_program_loads_within_a_quarter_of_the_verifiers_limit(which):
    # GIVEN the probe loaded and attached as a run would
    probe = Probe(ProbeConfig(file_set=FileSet(), ring_bytes=1 << 20, probe_path=which))
    try:
        attached = probe.attach()
        verified = probe.verified_instructions()
    finally:
        probe.close()
    # THEN the kernel says how much each program cost its verifier (Linux 5.16+), and none
    # came near the limit
    assert verified and "on_sys_exit" in verified and "on_sys_enter" in verified, verified
    if not max(verified.values()):
        pytest.skip("this kernel does not count the verifier's instructions (Linux 5.16+)")
    heavy = {name: n for name, n in verified.items() if n > VERIFIER_LIMIT // 4}
    assert not heavy, f"programs within 4x of the verifier's limit: {heavy} (all: {verified})"
    # AND the programs only a tail call reaches are loaded, never attached on their own
    for name in TAIL_CALLED:
        if which == "fast":
            assert name in verified and name not in attached, (name, attached)
