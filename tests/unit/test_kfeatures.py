"""The choice between the fast and the compatible probe object, from what the kernel lacks.

The kernel's answers are replaced here (kfeatures._probe) so every kind of kernel can be
played; tests/kernel/test_compat_path.py asks the real one.
"""

from __future__ import annotations

import pytest

from iowitness import probes
from iowitness.collector import kfeatures
from iowitness.errors import CannotTrace, UsageError


def _kernel_without(monkeypatch, *lacking):
    """A kernel that has every probed feature except those whose probe names one of `lacking`."""
    monkeypatch.delenv(kfeatures.ENV, raising=False)
    monkeypatch.setattr(kfeatures, "_probe", lambda what: not any(x in what for x in lacking))


def test_a_kernel_with_everything_gets_the_fast_object(monkeypatch):
    # GIVEN a kernel that has every feature
    _kernel_without(monkeypatch)
    # WHEN the object is chosen
    choice = kfeatures.choose()
    # THEN it is the fast one, with nothing missing
    assert (choice.path, choice.object, choice.missing) == ("fast", probes.OBJECT, [])


def test_a_5_15_like_kernel_gets_the_compatible_object_and_says_why(monkeypatch):
    # GIVEN a kernel without the kfunc, bpf_loop's successors and sched_switch's prev_state
    # (what Ubuntu 22.04's 5.15 lacks), helper numbers as in include/uapi/linux/bpf.h
    _kernel_without(monkeypatch, "bpf_rdonly_cast", 181, 195, "sched_switch")
    # WHEN the object is chosen
    choice = kfeatures.choose()
    # THEN the compatible one, naming each missing feature with the release that brought it
    assert choice.path == "compat" and choice.object == probes.COMPAT_OBJECT
    assert choice.missing == ["the bpf_rdonly_cast kfunc (Linux 6.2)", "bpf_loop (Linux 5.17)",
                              "bpf_map_lookup_percpu_elem (Linux 5.19)",
                              "sched_switch's prev_state argument (Linux 5.18)"]
    assert "bpf_loop (Linux 5.17)" in choice.why


def test_the_fast_object_forced_where_it_cannot_load_is_one_clear_line(monkeypatch):
    # GIVEN a kernel without task storage
    _kernel_without(monkeypatch, 29)
    # WHEN the fast object is asked for
    with pytest.raises(CannotTrace) as err:
        kfeatures.choose("fast")
    # THEN one line says what is missing and what to do
    assert "task storage maps (Linux 5.11)" in str(err.value) and "\n" not in str(err.value)
    assert "leave out --probe fast" in str(err.value)


def test_the_compatible_object_can_be_forced_by_option_or_environment(monkeypatch):
    # GIVEN a kernel with everything
    _kernel_without(monkeypatch)
    # WHEN compat is asked for by the option, or by IOWITNESS_PROBE
    # THEN it is loaded, and the option wins over the environment
    assert kfeatures.choose("compat").path == "compat"
    monkeypatch.setenv(kfeatures.ENV, "compat")
    assert kfeatures.choose().path == "compat"
    assert kfeatures.choose("fast").path == "fast"


def test_a_wrong_probe_path_is_a_usage_error(monkeypatch):
    # GIVEN a misspelt path in the environment
    monkeypatch.setenv(kfeatures.ENV, "compatible")
    # THEN it is refused, naming where it came from
    with pytest.raises(UsageError, match=r"one of auto, fast, compat, not 'compatible' \(from IOWITNESS_PROBE\)"):
        kfeatures.choose()
