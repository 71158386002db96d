// SPDX-License-Identifier: GPL-2.0
/* timing_floor_async.bpf.c — the timing floor, and empty programs on the tracepoints iowitness
 * follows an asynchronous request through.
 *
 * Purpose: scripts/bench/probe_compare.py (observer "timing-floor-async") attaches these to
 * tell how much of iowitness's cost on io_uring and libaio requests is the price of being on
 * those tracepoints at all: the two timing programs of timing_floor.bpf.c (two clock reads per
 * syscall), and one empty program on io_uring_submit_req and io_uring_complete (one call per
 * request submitted, one per CQE posted) and on iomap_dio_complete (a libaio or io_uring
 * O_DIRECT request's kernel completion on an iomap file system). libaio has no tracepoint of
 * its own: iowitness follows it inside io_submit's and io_getevents' sys_exit, which the
 * timing floor already runs on. The programs whose tracepoint the kernel lacks are not loaded
 * (probe_compare.py, as collector/probe.py does).
 *
 * Example (probe_compare.py --parts throughput --observers timing-floor,timing-floor-async,tree
 * --workloads fio-iouring-rand-read): "tree minus timing-floor-async" is iowitness's own work
 * on a request, past the tracepoints' dispatch.
 */
#include "timing_floor.bpf.c"

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(floor_async_uring_submit, void *req)
{
	return 0;
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(floor_async_uring_complete, void *ring, void *req, void *cqe)
{
	return 0;
}

SEC("tp_btf/iomap_dio_complete")
int BPF_PROG(floor_async_dio_complete, void *iocb, int error, long ret)
{
	return 0;
}
