"""doctor says first when this install has no BPF probe (pip built it without clang: pip shows
that build's message only with -v, so doctor is where the user learns it)."""

from __future__ import annotations

from iowitness import cli
from iowitness.collector import preflight
from iowitness.commands import doctor


def test_a_missing_probe_object_is_the_first_line(monkeypatch, capsys, tmp_path):
    # GIVEN an install whose probe object was never built
    missing = tmp_path / "iowitness.bpf.o"
    monkeypatch.setattr(preflight, "check_probe_object", lambda: preflight.Check(
        "probe object", False, f"{missing} is missing: this iowitness was installed without its BPF probe "
        "(no clang at install time)", "install clang, llvm, libbpf-dev, bpftool and make, then install again"))
    monkeypatch.setattr(preflight, "CHECKS", tuple(c if c.__name__ != "check_probe_object"
                                                   else preflight.check_probe_object for c in preflight.CHECKS))
    # (the fallback it then offers is tests/kernel/test_bpftrace_backend.py's: bpftrace really
    # started and attached there; here it would only add some 15 s of bpftrace compiling its script)
    fallbacks = []
    monkeypatch.setattr(doctor, "bpftrace_line", lambda compiled_loads: fallbacks.append(compiled_loads) or
                        "note bpftrace backend (not tried here)")
    # WHEN doctor runs
    code = cli.main(["doctor"])
    lines = capsys.readouterr().out.splitlines()
    # THEN its first line says so with the fix, once, and the machine cannot trace with it
    assert lines[0].startswith("FAIL probe object") and "installed without its BPF probe" in lines[0]
    assert lines[1].strip().startswith("fix: install clang")
    assert sum("probe object" in line for line in lines) == 1
    assert code == 3
    # AND it offers the fallback for a machine whose compiled probe cannot load
    assert fallbacks == [False]
