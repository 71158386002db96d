"""The Linux version that introduced each kernel interface a probe object may use.

tests/unit/test_compat_kernel_table.py reads every helper, kfunc, program and attach type,
map type, map flag and instruction class out of the compiled objects and looks each up here:
the compatible object (iowitness_compat.bpf.o) must need nothing after COMPAT_FLOOR, and an
interface missing from this table fails the test until someone adds it with its source.

Sources, cited per row by the commit that added the interface:
  [bcc]   iovisor/bcc docs/kernel-versions.md (2025 version), "Helpers", "Tables (a.k.a. Maps)", "Table
          userspace API" and "Main features" (each row names the kernel commit)
  [doc]   the kernel's Documentation/bpf/: map_hash.rst ("BPF_MAP_TYPE_HASH was introduced in
          kernel version 3.19", PERCPU_HASH 4.6), map_array.rst (ARRAY 3.19, PERCPU_ARRAY 4.6),
          instruction-set.rst (atomic operations, JMP32, the cpu v4 instructions)
  [uapi]  include/uapi/linux/bpf.h: helper numbers are assigned in order (FN(name, id)), so a
          helper's number is checked against the installed header by the test
  [commit] the kernel commit named from memory and not checked against a source here (the
          version of those rows is the one the kernel commit's release carries; verify before
          relying on the hash)
  [recalled] likewise
Versions are the first mainline release (distribution kernels may back-port: that is why the
loader probes features instead of reading versions, collector/kfeatures.py).
"""

COMPAT_FLOOR = (5, 8)

# helper id -> (name in bpf.h, version, source)
HELPERS = {
    1: ("map_lookup_elem", (3, 19), "[bcc] d0003ec01c66"),
    2: ("map_update_elem", (3, 19), "[bcc] d0003ec01c66"),
    3: ("map_delete_elem", (3, 19), "[bcc] d0003ec01c66"),
    5: ("ktime_get_ns", (4, 1), "[bcc] d9847d310ab4"),
    8: ("get_smp_processor_id", (4, 1), "[bcc] c04167ce2ca0"),
    12: ("tail_call", (4, 2), "[bcc] 04fd61ab36ec"),
    14: ("get_current_pid_tgid", (4, 2), "[bcc] ffeedafbf023"),
    16: ("get_current_comm", (4, 2), "[bcc] ffeedafbf023"),
    35: ("get_current_task", (4, 8), "[bcc] 606274c5abd8"),
    112: ("probe_read_user", (5, 5), "[bcc] 6ae08ae3dea2"),
    113: ("probe_read_kernel", (5, 5), "[bcc] 6ae08ae3dea2"),
    114: ("probe_read_user_str", (5, 5), "[bcc] 6ae08ae3dea2"),
    115: ("probe_read_kernel_str", (5, 5), "[bcc] 6ae08ae3dea2"),
    130: ("ringbuf_output", (5, 8), "[bcc] 457f44363a88"),
    131: ("ringbuf_reserve", (5, 8), "[bcc] 457f44363a88"),
    132: ("ringbuf_submit", (5, 8), "[bcc] 457f44363a88"),
    133: ("ringbuf_discard", (5, 8), "[bcc] 457f44363a88"),
    134: ("ringbuf_query", (5, 8), "[bcc] 457f44363a88"),
    # the fast object's own (why it needs a newer kernel)
    156: ("task_storage_get", (5, 11), "[bcc] 4cf1bc1f1045; for tracing programs 5.12, a10787e6d58c "
                                       "[recalled]"),
    158: ("get_current_task_btf", (5, 11), "[bcc] 3ca1032ab7ab"),
    164: ("for_each_map_elem", (5, 13), "[bcc] 69c087ba6225"),
    181: ("loop", (5, 17), "[bcc] e6f2dd0f8067"),
    195: ("map_lookup_percpu_elem", (5, 19), "[bcc] 07343110b293"),
}

# kfunc name -> (version, source)
KFUNCS = {
    "bpf_rdonly_cast": ((6, 2), "[commit] a35b9af4ec2c \"bpf: Add a kfunc for generic type cast\"; "
                                "Documentation/bpf/kfuncs.rst"),
}

# BPF_MAP_TYPE_* number (uapi enum bpf_map_type) -> (name, version, source)
MAP_TYPES = {
    1: ("HASH", (3, 19), "[doc] map_hash.rst; [bcc] 0f8e4bd8a1fc"),
    2: ("ARRAY", (3, 19), "[doc] map_array.rst; [bcc] 28fbcfa08d8e"),
    3: ("PROG_ARRAY", (4, 2), "[bcc] 04fd61ab36ec (tail calls, same commit)"),
    6: ("PERCPU_ARRAY", (4, 6), "[doc] map_array.rst; [bcc] a10423b87a7e"),
    9: ("LRU_HASH", (4, 10), "[doc] map_hash.rst; [bcc] LRU hash 29ba732acbee"),
    27: ("RINGBUF", (5, 8), "[bcc] ring buffer 457f44363a88; Documentation/bpf/ringbuf.rst"),
    29: ("TASK_STORAGE", (5, 11), "[bcc] task_storage helpers 4cf1bc1f1045 (same commit)"),
}

# map_flags bit -> (name, version, source)
MAP_FLAGS = {
    0x1: ("BPF_F_NO_PREALLOC", (4, 6), "[bcc] Pre-alloc maps memory 6c9059817432"),
    0x80: ("BPF_F_RDONLY_PROG", (5, 2), "[bcc] Restrict access from BPF side 591fe9888d78"),
    0x400: ("BPF_F_MMAPABLE", (5, 5), "[bcc] mmap() support for array maps fc9702273e2e"),
}

# ELF section prefix of a program -> (program type / attach type, version, source)
PROGRAM_TYPES = {
    "tracepoint/": ("BPF_PROG_TYPE_TRACEPOINT", (4, 7), "[bcc] BPF attached to tracepoints 98b5c2c65c29"),
    "tp_btf/": ("BPF_PROG_TYPE_TRACING + BPF_TRACE_RAW_TP (BTF-typed raw tracepoint)", (5, 5),
                "[bcc] Program types: Tracing (BTF/BPF trampoline) f1b9509c2fb0"),
}

# tracepoints a tp_btf program attaches to -> (version it has the arguments the compatible
# program reads, whether the loader skips the program where it is missing, source)
TRACEPOINTS = {
    "sys_enter": ((4, 17), False, "[bcc] raw tracepoints c4f6699dfcb8; (regs, id) since 2.6.33"),
    "sys_exit": ((4, 17), False, "raw tracepoints c4f6699dfcb8 [bcc]; (regs, ret) since 2.6.33"),
    "sched_process_fork": ((4, 17), False, "(parent, child) since 2.6.28"),
    "sched_process_exit": ((4, 17), False, "(p) until 6.16 added group_dead; the program reads p only"),
    "sched_process_exec": ((4, 17), False, "(p, old_pid, bprm) since 3.4, 4ff16c25e2cc"),
    "sched_switch": ((4, 17), False, "(preempt, prev, next) since 4.4, c73464b1c843; prev_state (5.18, "
                                     "fa2c3254d7cf) is read only by the fast object"),
    "block_rq_issue": ((4, 17), False, "(q, rq) before 5.11, (rq) since a54895fa057c: the compatible object "
                                       "has a program for each, the loader attaches the one that fits"),
    "block_rq_complete": ((4, 17), False, "(rq, error, nr_bytes) since 4.x"),
    "block_io_start": ((6, 5), True, "[commit] 5a80bd075f3b; skipped where missing (collector/probe.py)"),
    # the fast object's only: None, the version is not established here (the loader never
    # attaches them from the compatible object; io_uring ones are skipped where missing)
    "io_uring_submit_req": (None, True, "io_uring's request-based tracepoints, 5.19/6.0 (core_fixes.bpf.h)"),
    "io_uring_complete": (None, True, "arguments changed over time; the program reads the first two"),
    "io_uring_create": (None, True, ""),
    "iomap_dio_complete": ((6, 4), True, "(iocb, error, ret): \"iomap: Add DIO tracepoints\" (Ritesh Harjani, "
                                          "fs/iomap/trace.h, merged for 6.4); skipped where missing "
                                          "(collector/probe.py): libaio requests then have no kernel completion"),
    "page_fault_user": (None, False, "x86 exception tracepoints"),
    "page_fault_kernel": (None, False, "x86 exception tracepoints"),
    "mm_filemap_fault": (None, False, ""),
    "mm_filemap_map_pages": (None, False, ""),
}

# instruction features (Documentation/bpf/standardization/instruction-set.rst) -> version, source
INSTRUCTIONS = {
    "atomic add (XADD)": ((3, 18), "eBPF's first instruction set, bd4cf0ed331a [bcc]"),
    "bpf-to-bpf call": ((4, 16), "[bcc] bpf2bpf function calls cc8b0b92a169"),
    "map value address (global data)": ((5, 2), "[commit] d8eca5bbb2be \"bpf: implement lookup-free direct "
                                                "value access for maps\""),
    "JMP32 class": ((5, 1), "[commit] 092ed0968bb6 \"bpf: verifier support JMP32\""),
    "bounded loop (backward jump)": ((5, 3), "[bcc] BPF bounded loop 2589726d12a1"),
    "atomic fetch/xchg/cmpxchg/and/or/xor": ((5, 12), "[commit] 5ffa25502b5a, 981f94c3e921 (BPF atomics)"),
    "cpu v4 (sign extension, sdiv/smod, bswap, gotol)": ((6, 6), "[commit] 1f9a1ea821ff and the series "
                                                                 "\"Support new insns from cpu v4\""),
}


def version_text(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"
