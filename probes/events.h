/* events.h — the one definition of what the iowitness probe sends to user space.
 *
 * Read by two compilers: clang (probes/iowitness.bpf.c and the .bpf.h files it includes)
 * and iowitness's Python reader (probes/layout.py, installed as iowitness.probes.layout,
 * parses this file; tests/unit/test_layout.py checks the parse against the BTF of the
 * compiled object). Keep the style the reader understands:
 * fixed-width __u64/__s64/__u32/__s32/__u16/__u8 fields, arrays of those with a #define count,
 * explicit padding, one `#define IOW_NAME value` per constant, enums with explicit values,
 * and the kind of each op as one `X(IOW_OP_NAME, IOW_KIND_NAME)` line of IOW_OP_KINDS (the
 * reader refuses an op without exactly one kind, and a kind or op it does not know).
 */
#ifndef IOWITNESS_EVENTS_H
#define IOWITNESS_EVENTS_H

#define IOW_LAYOUT_VERSION 2

/* What a record in the event ring describes: one completed syscall on a target file. */
enum iow_op {
	IOW_OP_OPEN = 1,
	IOW_OP_OPENAT = 2,
	IOW_OP_OPENAT2 = 3,
	IOW_OP_CREAT = 4,
	IOW_OP_READ = 5,
	IOW_OP_WRITE = 6,
	IOW_OP_PREAD64 = 7,
	IOW_OP_PWRITE64 = 8,
	IOW_OP_READV = 9,
	IOW_OP_WRITEV = 10,
	IOW_OP_PREADV = 11,
	IOW_OP_PWRITEV = 12,
	IOW_OP_PREADV2 = 13,
	IOW_OP_PWRITEV2 = 14,
	IOW_OP_LSEEK = 15,
	IOW_OP_FSYNC = 16,
	IOW_OP_FDATASYNC = 17,
	IOW_OP_CLOSE = 18,
	IOW_OP_DUP = 19,
	IOW_OP_DUP2 = 20,
	IOW_OP_DUP3 = 21,
	IOW_OP_FCNTL = 22,
	IOW_OP_FTRUNCATE = 23,
	IOW_OP_FALLOCATE = 24,
	/* asynchronous requests (struct iow_event: start_ns = submission, latency_ns = until the
	 * completion, `ring` = the io_uring or libaio context; flags say more per family) */
	IOW_OP_URING_READ = 25,     /* io_uring READ, READV, READ_FIXED, READV_FIXED */
	IOW_OP_URING_WRITE = 26,    /* io_uring WRITE, WRITEV, WRITE_FIXED, WRITEV_FIXED */
	IOW_OP_URING_FSYNC = 27,    /* io_uring FSYNC (flags: IORING_FSYNC_DATASYNC), SYNC_FILE_RANGE */
	IOW_OP_AIO_READ = 28,       /* libaio IOCB_CMD_PREAD, PREADV (io_submit .. io_getevents) */
	IOW_OP_AIO_WRITE = 29,      /* libaio IOCB_CMD_PWRITE, PWRITEV */
	IOW_OP_AIO_FSYNC = 30,      /* libaio IOCB_CMD_FSYNC, FDSYNC */
	/* calls that move data between two files: one record per target side, each with the
	 * call's bytes and times; `flags` holds the fd of the other side */
	IOW_OP_COPY_FILE_RANGE_FROM = 31,
	IOW_OP_COPY_FILE_RANGE_TO = 32,
	IOW_OP_SENDFILE_FROM = 33,
	IOW_OP_SENDFILE_TO = 34,
	IOW_OP_SPLICE_FROM = 35,
	IOW_OP_SPLICE_TO = 36,
	/* memory-mapped files */
	IOW_OP_MMAP = 37,           /* offset: file offset mapped; requested: length; ret: address; flags: prot | map flags << 8 */
	IOW_OP_MUNMAP = 38,         /* offset: file offset of the range; requested: length */
	IOW_OP_MSYNC = 39,          /* offset, requested: the file range synced; flags: MS_* */
	IOW_OP_MADVISE = 40,        /* offset, requested: the file range; flags: MADV_* */
	IOW_OP_FAULT_READ = 41,     /* a page fault reading a mapped target page: offset, requested = bytes */
	IOW_OP_FAULT_WRITE = 42,    /* a page fault writing one */
	IOW_OP_FADVISE64 = 43,      /* posix_fadvise: offset, requested = len (0: to the end), flags = POSIX_FADV_* */
	IOW_OP_READAHEAD = 44,      /* readahead: offset, requested = count */
};

/* What an op does, whatever its arguments: the classes both sides reason with (is this call
 * a read? does it end a phase?), so neither relies on the order of enum iow_op. */
enum iow_kind {
	IOW_KIND_OPEN = 1,      /* gives a new fd on a file: open, openat, openat2, creat */
	IOW_KIND_READ = 2,      /* moves bytes from the file */
	IOW_KIND_WRITE = 3,     /* moves bytes to the file */
	IOW_KIND_SEEK = 4,      /* moves the file position */
	IOW_KIND_SYNC = 5,      /* makes written data durable */
	IOW_KIND_CLOSE = 6,
	IOW_KIND_DUP = 7,       /* a second fd on the same open file */
	IOW_KIND_FCNTL = 8,
	IOW_KIND_RESIZE = 9,    /* changes the file's size or allocation: ftruncate, fallocate */
	IOW_KIND_MAP = 10,      /* maps, unmaps or advises on a mapping of the file: mmap, munmap, madvise */
	IOW_KIND_FAULT = 11,    /* a load or store on a mapped page the kernel had to resolve: no syscall, no latency */
	IOW_KIND_ADVISE = 12,   /* tells the page cache what is coming: posix_fadvise, readahead (moves no bytes to the caller) */
};

/* The kind of every op, one line each. The probe expands it into kind_of_op() (ops.bpf.h);
 * probes/layout.py reads it into Layout.op_kinds. */
#define IOW_OP_KINDS(X) \
	X(IOW_OP_OPEN, IOW_KIND_OPEN) \
	X(IOW_OP_OPENAT, IOW_KIND_OPEN) \
	X(IOW_OP_OPENAT2, IOW_KIND_OPEN) \
	X(IOW_OP_CREAT, IOW_KIND_OPEN) \
	X(IOW_OP_READ, IOW_KIND_READ) \
	X(IOW_OP_WRITE, IOW_KIND_WRITE) \
	X(IOW_OP_PREAD64, IOW_KIND_READ) \
	X(IOW_OP_PWRITE64, IOW_KIND_WRITE) \
	X(IOW_OP_READV, IOW_KIND_READ) \
	X(IOW_OP_WRITEV, IOW_KIND_WRITE) \
	X(IOW_OP_PREADV, IOW_KIND_READ) \
	X(IOW_OP_PWRITEV, IOW_KIND_WRITE) \
	X(IOW_OP_PREADV2, IOW_KIND_READ) \
	X(IOW_OP_PWRITEV2, IOW_KIND_WRITE) \
	X(IOW_OP_LSEEK, IOW_KIND_SEEK) \
	X(IOW_OP_FSYNC, IOW_KIND_SYNC) \
	X(IOW_OP_FDATASYNC, IOW_KIND_SYNC) \
	X(IOW_OP_CLOSE, IOW_KIND_CLOSE) \
	X(IOW_OP_DUP, IOW_KIND_DUP) \
	X(IOW_OP_DUP2, IOW_KIND_DUP) \
	X(IOW_OP_DUP3, IOW_KIND_DUP) \
	X(IOW_OP_FCNTL, IOW_KIND_FCNTL) \
	X(IOW_OP_FTRUNCATE, IOW_KIND_RESIZE) \
	X(IOW_OP_FALLOCATE, IOW_KIND_RESIZE) \
	X(IOW_OP_URING_READ, IOW_KIND_READ) \
	X(IOW_OP_URING_WRITE, IOW_KIND_WRITE) \
	X(IOW_OP_URING_FSYNC, IOW_KIND_SYNC) \
	X(IOW_OP_AIO_READ, IOW_KIND_READ) \
	X(IOW_OP_AIO_WRITE, IOW_KIND_WRITE) \
	X(IOW_OP_AIO_FSYNC, IOW_KIND_SYNC) \
	X(IOW_OP_COPY_FILE_RANGE_FROM, IOW_KIND_READ) \
	X(IOW_OP_COPY_FILE_RANGE_TO, IOW_KIND_WRITE) \
	X(IOW_OP_SENDFILE_FROM, IOW_KIND_READ) \
	X(IOW_OP_SENDFILE_TO, IOW_KIND_WRITE) \
	X(IOW_OP_SPLICE_FROM, IOW_KIND_READ) \
	X(IOW_OP_SPLICE_TO, IOW_KIND_WRITE) \
	X(IOW_OP_MMAP, IOW_KIND_MAP) \
	X(IOW_OP_MUNMAP, IOW_KIND_MAP) \
	X(IOW_OP_MSYNC, IOW_KIND_SYNC) \
	X(IOW_OP_MADVISE, IOW_KIND_MAP) \
	X(IOW_OP_FAULT_READ, IOW_KIND_FAULT) \
	X(IOW_OP_FAULT_WRITE, IOW_KIND_FAULT) \
	X(IOW_OP_FADVISE64, IOW_KIND_ADVISE) \
	X(IOW_OP_READAHEAD, IOW_KIND_ADVISE)

/* One completed syscall, asynchronous request or page fault. Field meaning per op is in
 * docs/trace-format.md. */
struct iow_event {
	__u64 start_ns;    /* syscall entry, CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 latency_ns;  /* exit - entry */
	__u64 ino;         /* file identity: inode number ... */
	__s64 offset;      /* file offset where the I/O began; -1 when the op has none */
	__u64 requested;   /* bytes asked for; lseek: offset argument; ftruncate/fallocate: length; fcntl: arg */
	__s64 ret;         /* syscall return value: bytes done, new fd, new offset, or -errno */
	__u32 tgid;        /* process id */
	__u32 tid;         /* thread id */
	__u32 dev;         /* ... and its super block's device, kernel encoding (major << 20 | minor) */
	__s32 fd;          /* fd the call used (opens: the fd returned, -1 on failure) */
	__u32 flags;       /* opens: open flags; lseek: whence; fcntl: cmd; fallocate: mode; p*v2: RWF flags */
	__u16 op;          /* enum iow_op */
	__u16 ring;        /* async ops: the io_uring or libaio context, numbered from 1 in order of first use; 0 otherwise */
};

/* What a record in the side ring describes: rare facts that give events their context. */
enum iow_meta_kind {
	IOW_META_FILE = 1,      /* a file became a target when it was opened */
	IOW_META_FORK = 2,      /* a traced process created another process */
	IOW_META_EXEC = 3,      /* a traced process called exec */
};

#define IOW_PATH_MAX 256
#define IOW_COMM_MAX 16

struct iow_meta {
	__u64 ts_ns;       /* CLOCK_MONOTONIC */
	__u64 ino;         /* FILE: inode */
	__u32 kind;        /* enum iow_meta_kind */
	__u32 tgid;        /* process the fact is about (FORK: the child) */
	__u32 parent_tgid; /* FORK: the parent; EXIT: exit code */
	__u32 dev;         /* FILE: super block device, kernel encoding */
	__s32 fd;          /* FILE: fd returned by the open */
	__s32 dirfd;       /* FILE: dirfd the path is relative to (-100 = current directory) */
	__u32 s_magic;     /* FILE: file system magic number */
	__u32 pad0;
	__u8 comm[IOW_COMM_MAX];   /* process name */
	__u8 path[IOW_PATH_MAX];   /* FILE: path as the process passed it; EXEC: file executed */
};

/* What a record in the block ring describes: one block request on a device under a target
 * file, completed. The device is the one the kernel accounts the request to in /proc/diskstats
 * (a partition's own line for a file system on a partition, the whole disk's otherwise). */
struct iow_block {
	__u64 start_ns;    /* accounted as started (rq->start_time_ns: what diskstats times from); 0 unknown */
	__u64 issue_ns;    /* handed to the driver (block_rq_issue); 0 unknown */
	__u64 complete_ns; /* completed (block_rq_complete), CLOCK_MONOTONIC */
	__u64 sector;      /* first 512-byte sector, counted from the start of the whole disk */
	__u32 bytes;       /* bytes this completion finished */
	__u32 dev;         /* device, kernel encoding (major << 20 | minor) */
	__u32 tgid;        /* process that submitted the request; 0 unknown */
	__u32 tid;         /* its thread */
	__u32 op;          /* REQ_OP_*: 0 read, 1 write, 2 flush, 3 discard, 5 secure erase, 9 write zeroes;
			    * IOW_BLOCK_AIO_DONE: not a block request (see there) */
	__s32 error;       /* blk_status_t of the completion; 0 = success */
	__u8 comm[IOW_COMM_MAX];   /* the submitter's name (a kworker for write-back) */
};

/* What a record in the off-CPU ring describes: one stretch a traced thread spent off the CPU. */
struct iow_offcpu {
	__u64 off_ns;      /* switched out, CLOCK_MONOTONIC */
	__u64 on_ns;       /* switched back in */
	__u32 tgid;
	__u32 tid;
	__u32 state;       /* at switch-out: 0 preempted (still runnable), 1 sleeping, 2 uninterruptible (D: waiting on I/O) */
	__u32 pad0;
};

/* What a record in the output ring describes: one write or writev a traced process made to
 * its fd 1 or 2 (its standard output or error, whatever they point at: a pipe, a pty, a file,
 * a socket), with the first bytes it wrote (output.bpf.h). The benchmark's output timeline:
 * each line it printed gets the time of the write that ended it. */
#define IOW_OUTPUT_BYTES 4096  /* bytes of a call copied at most; the rest is counted, not kept */
struct iow_output {
	__u64 start_ns;    /* syscall entry, CLOCK_MONOTONIC (the events' clock) */
	__u64 end_ns;      /* syscall exit: when the bytes were written */
	__u64 ino;         /* what the fd points at: inode ... */
	__s64 ret;         /* bytes written, or -errno */
	__u32 tgid;
	__u32 tid;
	__u32 dev;         /* ... and its super block's device (a pipe's or a socket's is an anonymous one) */
	__s32 fd;          /* 1 or 2 */
	__u32 copied;      /* bytes of data that hold the call's first bytes: min(ret, IOW_OUTPUT_BYTES), 0 on error */
	__u16 op;          /* IOW_OP_WRITE or IOW_OP_WRITEV */
	__u16 type;        /* what the fd points at: i_mode >> 12 (1 pipe, 2 character device, 8 regular file, 12 socket); 0 unknown */
	__u8 data[IOW_OUTPUT_BYTES];
};

/* Settings fixed at load time (const volatile in the BPF program). */
#define IOW_MODE_ALL_FILES 0   /* every regular file of the process set, minus exclusions */
#define IOW_MODE_FILE_SET 1    /* only files matched by name at open or by inode */

/* Why an event or fact could not be delivered: slots of the per-CPU `lost` counters. */
#define IOW_LOST_EVENTS 0
#define IOW_LOST_META 1
#define IOW_LOST_BLOCK 2
#define IOW_LOST_OFFCPU 3
#define IOW_LOST_SUMMARY 4     /* --summary: a call whose aggregate had no room in the map */
/* What the probe could not follow at all: each miss hides an unknown number of calls */
#define IOW_LOST_FILES 5       /* an open of a target file the file set (`files`) had no room for */
#define IOW_LOST_PROCESSES 6   /* a process forked in the set that the set (`procs`) had no room for */
#define IOW_LOST_THREADS 7     /* a thread of the set the kernel gave no task storage: its calls unseen */
#define IOW_LOST_DEVICES 8     /* a block device under a target file the device filter had no room for */
#define IOW_LOST_REQUESTS 9    /* an async request on a target the in-flight map had no room for: its completion unseen */
#define IOW_LOST_UNDECODED 10  /* a transfer on a target file made in a way the probe does not decode */
#define IOW_LOST_COMPAT 11     /* libaio, io_uring or mmap the compatible probe does not follow (compat.bpf.h) */
#define IOW_LOST_OUTPUT 12     /* a write to fd 1 or 2 the output ring had no room for: its line has no time */
#define IOW_LOST_SLOTS 13

/* Calls that drive asynchronous I/O without moving file data themselves: counted per CPU in
 * `async_calls` (calls and time inside them), never recorded one by one. */
#define IOW_ASYNC_URING_ENTER 0
#define IOW_ASYNC_IO_SUBMIT 1
#define IOW_ASYNC_IO_GETEVENTS 2   /* io_getevents and io_pgetevents */
#define IOW_ASYNC_SLOTS 3
struct iow_async_count {
	__u64 calls;
	__u64 ns;          /* time inside them, entry to exit */
};

/* A name rule: a file called `name` in the directory (dev, ino); empty name = any file in it. */
#define IOW_NAME_MAX 128
struct iow_name_key {
	__u64 dir_ino;
	__u32 dir_dev;
	__u32 pad0;
	__u8 name[IOW_NAME_MAX];
};

/* A file already known to be a target. */
struct iow_file_key {
	__u64 ino;
	__u32 dev;
	__u32 pad0;
};

/* Settings fixed between open and load (`const volatile` in section .rodata.settings). */
/* The event area: where the probe leaves one struct iow_event per traced call. One ring per
 * CPU inside a memory-mapped array map (`event_area`: CPU c owns entries [c * area_events,
 * (c + 1) * area_events)), with that CPU's positions in `event_positions`. The probe on CPU c
 * writes entry head % area_events, then advances head; user space copies [tail, head) and
 * then advances tail. Programs run with preemption off, so each ring has one writer: no
 * lock, no atomic, no record header (a BPF ring buffer costs ~35 ns per record for those). */
struct iow_area_position {
	__u64 head;      /* written by the probe: records this CPU has ever written */
	__u64 pad0[7];   /* head and tail on cache lines of their own */
	__u64 tail;      /* written by user space: records it has copied out */
	__u64 pad1[7];
};

struct iow_settings {
	__u32 area_events;     /* records per CPU in the event area (a power of two) */
	__u32 doorbell_events; /* wake the reader each time a CPU has written this many more (power of two) */
	__u32 mode;            /* IOW_MODE_* */
	__u32 all_processes;   /* 1: any process (attach --file); 0: the process set only */
	__u32 collector_tgid;  /* never traced: the collector itself */
	__u32 summary;         /* 1: aggregate in the kernel (struct iow_summary), no per-call record */
};

/* What the probe remembers of a target file. The generation tells a file from a later one
 * that got the same inode number after the first was deleted (ext4 reuses numbers at once). */
struct iow_file_state {
	__u32 generation;
	__u32 generation_known;  /* 0: registered from user space without it; any generation matches */
	__u32 epoch;             /* --summary: phase number of the file, bumped at open, close, fsync */
	__u32 pad0;
};

/* Path prefixes that keep a file out of the target set in IOW_MODE_ALL_FILES. */
#define IOW_EXCLUDE_MAX 12
#define IOW_EXCLUDE_LEN 24
struct iow_exclude {
	__u8 prefix[IOW_EXCLUDE_LEN];
};

/* --summary mode: per (file, process, phase, syscall) aggregates kept in the kernel instead of
 * one record per call (`summary_slots` numbers the keys, the per-CPU array `summary` holds the
 * values; user space adds the CPUs up). A phase ends at
 * each close, fsync or fdatasync of the file and a new one starts at each open: the
 * boundaries the probe sees anyway, at no cost per data call. */
#define IOW_HIST_BUCKETS 40    /* bucket k counts calls of latency [2^k, 2^(k+1)) ns; the last one more */
#define IOW_SUMMARY_MAX 16384  /* distinct keys the map holds */

struct iow_summary_key {
	__u64 ino;
	__u32 dev;
	__u32 tgid;
	__u32 epoch;       /* iow_file_state.epoch when the call ended */
	__u16 op;          /* enum iow_op */
	__u16 pad0;
};

struct iow_summary {
	__u64 calls;
	__u64 errors;          /* ret < 0 */
	__u64 short_calls;     /* reads and writes that did less than asked */
	__u64 bytes;           /* reads and writes: bytes done */
	__u64 requested;       /* reads and writes: bytes asked for */
	__u64 latency_ns;      /* sum over the calls */
	__u64 latency_max_ns;
	__u64 first_start_ns;  /* entry of the first call */
	__u64 last_end_ns;     /* exit of the last call */
	__u64 sequential;      /* calls that began where the previous one of the key (same CPU) ended */
	__s64 next_offset;     /* where the last call ended: what `sequential` compares with */
	__u64 hist[IOW_HIST_BUCKETS];
};

/* io_uring requests (IOW_OP_URING_*, probes/uring.bpf.h): struct iow_event.flags holds the
 * request's IORING_OP_* opcode in bits 0-7 and these bits above it. */
#define IOW_URING_OPCODE_MASK 0xff
#define IOW_URING_FIXED_FILE 0x100   /* fd is an index into the ring's registered files, not an fd */
#define IOW_URING_SQPOLL 0x200       /* submitted by the ring's SQPOLL kernel thread (iou-sqp-PID, a thread of the process) */
#define IOW_URING_FIXED_BUF 0x400    /* into or out of a registered buffer (READ_FIXED, WRITE_FIXED, READV_FIXED, WRITEV_FIXED) */
#define IOW_URING_DATASYNC 0x800     /* FSYNC with IORING_FSYNC_DATASYNC: fdatasync */
#define IOW_URING_FILE_POS 0x1000    /* sqe offset -1: at the file position (offset is where it was, found at completion) */
#define IOW_URING_IOPOLL 0x2000      /* the ring polls for completions (IORING_SETUP_IOPOLL) */
#define IOW_URING_ASYNC 0x4000       /* sent to an io-wq worker without an inline try: IOSQE_ASYNC, or the op always is (FSYNC, SYNC_FILE_RANGE) */
#define IOW_URING_LINKED 0x8000      /* part of a chain (IOSQE_IO_LINK or IOSQE_IO_HARDLINK) */
/* libaio records (aio.bpf.h): bits of `flags` above the iocb's own RWF_* flags */
#define IOW_AIO_VECTORED 0x10000   /* IOCB_CMD_PREADV or PWRITEV: requested sums the iovecs */
#define IOW_AIO_DATASYNC 0x20000   /* IOCB_CMD_FDSYNC (an IOW_OP_AIO_FSYNC without it: FSYNC) */
/* A BLOCK record with this op is no block request: it is a libaio request's completion as the
 * kernel made it (aio.bpf.h: iomap's direct-I/O completion, which posts the io_event), sent
 * beside the request's own record when it is reaped. start_ns: the request's submission (its
 * record's start_ns), complete_ns: the kernel's completion, sector: the request's file offset,
 * bytes: its length, dev/tgid/tid: its record's; issue_ns 0; error: 0 or the negative errno. */
#define IOW_BLOCK_AIO_DONE 0x10000
/* Memory-mapped target files (mapping.bpf.h). IOW_OP_MMAP's flags: prot in the low 8 bits,
 * the MAP_* flags shifted left by 8 (their low 24 bits: every flag a file mapping can take;
 * MAP_UNINITIALIZED and the MAP_HUGE_* size bits, 26 and up, are dropped). */
#define IOW_MMAP_PROT_MASK 0xff
#define IOW_MMAP_FLAGS_SHIFT 8
/* IOW_OP_FAULT_READ / IOW_OP_FAULT_WRITE flags */
#define IOW_FAULT_MAJOR 1            /* the page was not ready in the page cache as the fault began (absent, or its read in flight): the fault waited for a read of the file */
#define IOW_FAULT_LATENCY_UNKNOWN 2  /* latency_ns is 0: the kernel marks a fault's entry only */
#define IOW_FAULT_IN_KERNEL 4        /* taken in kernel mode: a syscall copying to or from the mapping */
#define IOW_FAULT_AROUND 8           /* a read fault: the kernel may also map cached neighbours (fault-around) */
#define IOW_FAULT_AROUND_COUNTED 16  /* ... it did, and requested counts them: offset is then the start of the window they came from */

#endif
