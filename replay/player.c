/* player.c — iowitness's native replay player: issues a replay plan's calls again, as fast as
 * the original made them.
 *
 * Usage: iowitness-player PLAN DIR SPEED [--follow]
 *   PLAN   the plan as replay/plan.py's Plan.save_native writes it (layout below)
 *   DIR    where the plan's files are (replay/paths.py made them; every directory is walked
 *          again here from DIR's fd with O_NOFOLLOW, and every open is an openat2 of the file's
 *          absolute path with RESOLVE_NO_SYMLINKS: see open_file)
 *   SPEED  1 keeps the recorded think time, N > 1 divides it by N, 0 drops it
 *   --follow  the plan is still being written (replay/stream_plan.py follow_apart): its threads,
 *          directories, files and notes are read from PLAN.head, each thread's calls from PLAN
 *          once PLAN.ready says they are written, its waits from PLAN.waitsT as they come
 *          (stream_plan.follow_paths); a thread that catches up with the build sleeps 50 us
 *
 * One process per recorded process (its own fd table), one thread per recorded thread, each
 * call the syscall the original made (opens as openat2; dup2/dup3/F_DUPFD as dup). On a shared
 * file a call first waits until other threads have issued the calls the plan says (progress
 * counters in memory all the replay's processes share). Example output (stdout, its last lines):
 *
 *   iowitness replay: 65,567 calls in 1 thread(s), 0.081 s; 0 failed, 0 moved other byte counts
 *     than the original; 0 implicit open(s)          (one line)
 *   iowitness replay:   read: 24,578 issued, 0 failed, 0 other bytes
 *
 * "other bytes": a read or write that moved another count than the original's. Exit code 1
 * when a call failed that had succeeded in the original, 2 when the plan cannot be used.
 *
 * Plan layout (little-endian, packed, written by Plan.save_native):
 *   "IOWPLAN2", u32 threads, u32 files, u64 calls, u64 waits, u32 dirs, u32 notes bytes,
 *   u32 root tgid (the recorded process the benchmark was launched as, replayed by this
 *   process itself; every other recorded process by a forked one; 0 unknown)
 *   threads x {u32 tgid, u32 tid, i64 first, i64 count}
 *   calls   x {u8 op, i32 file, u32 tgid, i32 fd, i64 ret, u32 flags, i64 offset, i64 size, u64 gap_ns, u64 start_ns,
 *              u16 ring, i32 depth}
 *   waits   x {i64 call, u32 thread, i64 count}
 *   dirs    x {u32 length, bytes}      (relative to DIR; "" is DIR)
 *   files   x {u32 dir, u32 length, bytes}
 *   notes   bytes printed after the summary (what the plan left out)
 *
 * Overhead: about 0.1 to 0.3 us of the player's own per call (docs/replay.md has the figures).
 * Build: cc -O2 -pthread -Wall -o iowitness-player player.c   (setup.py builds it with the probe)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/aio_abi.h>
#include <linux/futex.h>
#include <linux/io_uring.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "uring_setup.h"

/* the plan's op codes: replay/plan.py OPS, in that order */
enum { OP_OPEN, OP_CLOSE, OP_READ, OP_WRITE, OP_PREAD64, OP_PWRITE64, OP_READV, OP_WRITEV, OP_PREADV,
       OP_PWRITEV, OP_PREADV2, OP_PWRITEV2, OP_LSEEK, OP_FSYNC, OP_FDATASYNC, OP_FTRUNCATE, OP_FALLOCATE,
       OP_DUP, OP_FADVISE64, OP_READAHEAD, OP_AIO_READ, OP_AIO_WRITE, OP_AIO_FSYNC, OP_URING_READ, OP_URING_WRITE, OP_URING_FSYNC, OP_COUNT };
static const char *op_names[OP_COUNT] = {"open", "close", "read", "write", "pread64", "pwrite64", "readv",
	"writev", "preadv", "pwritev", "preadv2", "pwritev2", "lseek", "fsync", "fdatasync", "ftruncate",
	"fallocate", "dup", "fadvise64", "readahead", "aio_read", "aio_write", "aio_fsync", "uring_read", "uring_write", "uring_fsync"};
#define IS_ASYNC(op) ((op) >= OP_AIO_READ)
#define IS_DATA(op) (((op) >= OP_READ && (op) <= OP_PWRITEV2) || (op) == OP_AIO_READ || (op) == OP_AIO_WRITE || \
		     (op) == OP_URING_READ || (op) == OP_URING_WRITE)
#define IS_READ(op) ((op) == OP_READ || (op) == OP_PREAD64 || (op) == OP_READV || (op) == OP_PREADV || \
		     (op) == OP_PREADV2 || (op) == OP_AIO_READ || (op) == OP_URING_READ)
/* the trace's flags of asynchronous requests (probes/events.h IOW_URING_*, IOW_AIO_*) */
#define URING_OPCODE_MASK 0xff
#define URING_DATASYNC 0x800
#define AIO_VECTORED 0x10000
#define AIO_DATASYNC 0x20000
#define AIO_RWF_KEPT (RWF_DSYNC | RWF_SYNC | RWF_APPEND)
/* the plan's own flag of a request (replay/plan_layout.py WAITED_BEFORE): the original waited
 * for a completion before it */
#define WAITED_BEFORE (1u << 30)

struct __attribute__((packed)) plan_thread { uint32_t tgid, tid; int64_t first, count; };
struct __attribute__((packed)) plan_call {
	uint8_t op; int32_t file; uint32_t tgid; int32_t fd; int64_t ret; uint32_t flags;
	int64_t offset, size; uint64_t gap_ns, start_ns; uint16_t ring; int32_t depth;
};
struct __attribute__((packed)) plan_wait { int64_t call; uint32_t thread; int64_t count; };

#define MAX_FD (1 << 20)       /* recorded fds the tables hold; the plan refuses larger ones */
#define SPIN_NS 200000LL       /* a wait shorter than this is spun, not slept */
#define WAIT_LIMIT_NS 1000000L /* a call waiting for another thread looks again at least this often */
#define PATH_RECORDED 256     /* the probe keeps a path of up to 255 bytes (events.h IOW_PATH_MAX) */
#define KEPT_FLAGS (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_NONBLOCK | O_DSYNC | O_SYNC | \
		    O_DIRECT | O_NOATIME | O_NOCTTY)

static const char *into_path;
static uint32_t n_threads, n_files, n_dirs, notes_len, root_tgid;
static uint64_t n_calls, n_waits;
static struct plan_thread *threads;
static const struct plan_call *calls;
static const struct plan_wait *waits;
static int *dir_fd_of_file;
static char **file_names;
static char **file_abs;        /* DIR's real path + the file's place; NULL when the probe could not keep it */
static char *notes;
static double speed;
static int64_t t0, call_cost, wake_cost, uring_cost;
static volatile int64_t *progress;    /* shared by every replay process */
static volatile int64_t *wake_at;     /* per thread: the lowest count another thread waits for on its
					* progress (NO_WAITER: none), shared too */
#define NO_WAITER INT64_MAX
static char *write_buf;
/* --follow: per thread its calls written so far, then the build's state (0 building, 1 done,
 * 2 failed), the largest buffer a call needs, and per thread its waits written
 * (stream_plan.follow_paths) */
static int follow;
static const volatile int64_t *ready;
static const char *plan_path;
#define FOLLOW_DONE 1
#define FOLLOW_FAILED 2
/* this process's fd table: recorded fd -> ours + 1 (0: none open), and whether ours was opened
 * O_DIRECT. Kept as ours + 1 so that the table is calloc'd, its pages untouched until a call
 * uses them: filled with -1, its 4 MiB cost each replay process 1,024 page faults after the
 * replay's clock had started, while the 5 processes of a fio replay shared 2 CPUs */
static int *fd_map;
static unsigned char *fd_direct;

static inline int ours(int recorded) { return fd_map[recorded] - 1; }
static inline void set_ours(int recorded, int fd) { fd_map[recorded] = fd + 1; }

struct stats { uint64_t issued[OP_COUNT], failed[OP_COUNT], other[OP_COUNT], implicit; char error[200]; };

static void die(const char *what)
{
	fprintf(stderr, "iowitness replay: %s\n", what);
	exit(2);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* the plan's pages in [from, to) (whole pages inside it) handed back: the calls and waits are
 * the mapped file itself, not a copy, and a thread walks its calls once, so the player's resident
 * size stays a few pages per thread, not the plan's length (the mapping is private and read-only:
 * a page touched again is read again from the file, which lies in replay's own 0700 directory) */
#define RELEASE_EVERY 65536
static void release(const void *from, const void *to)
{
	uintptr_t page = 4096, a = ((uintptr_t)from + page - 1) & ~(page - 1), b = (uintptr_t)to & ~(page - 1);

	if (b > a)
		(void)madvise((void *)a, b - a, MADV_DONTNEED);
}

/* the next `bytes` of the plan where they are in the mapping (the calls and waits: not copied) */
static const void *view(const unsigned char **at, const unsigned char *end, size_t bytes)
{
	const void *out = *at;

	if ((size_t)(end - *at) < bytes)
		die("the plan is cut short");
	*at += bytes;
	return out;
}

static void *take(const unsigned char **at, const unsigned char *end, size_t bytes)
{
	void *out;

	if ((size_t)(end - *at) < bytes)
		die("the plan is cut short");
	out = malloc(bytes ? bytes : 1);
	if (!out)
		die("out of memory reading the plan");
	memcpy(out, *at, bytes);
	*at += bytes;
	return out;
}

static uint32_t take_u32(const unsigned char **at, const unsigned char *end)
{
	uint32_t v;

	if (end - *at < 4)
		die("the plan is cut short");
	memcpy(&v, *at, 4);
	*at += 4;
	return v;
}

static char *take_text(const unsigned char **at, const unsigned char *end)
{
	uint32_t len = take_u32(at, end);
	char *text;

	if (len > 4096)
		die("a name in the plan is too long");
	if ((size_t)(end - *at) < len)
		die("the plan is cut short");
	text = malloc(len + 1);
	if (!text)
		die("out of memory reading the plan");
	memcpy(text, *at, len);
	text[len] = 0;
	*at += len;
	return text;
}

static void read_plan(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	const unsigned char *base, *at, *end;
	char **dirs, *real;

	if (fd < 0 || fstat(fd, &st) < 0)
		die("cannot open the plan");
	base = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (base == MAP_FAILED)
		die("cannot map the plan");
	close(fd);
	at = base;
	end = base + st.st_size;
	if (st.st_size < 44 || memcmp(at, "IOWPLAN2", 8))
		die("not a replay plan");
	at += 8;
	memcpy(&n_threads, at, 4); memcpy(&n_files, at + 4, 4); memcpy(&n_calls, at + 8, 8);
	memcpy(&n_waits, at + 16, 8); memcpy(&n_dirs, at + 24, 4); memcpy(&notes_len, at + 28, 4);
	memcpy(&root_tgid, at + 32, 4);
	at += 36;
	if (n_calls > ((uint64_t)1 << 40) || n_waits > ((uint64_t)1 << 40))
		die("the plan is too large");
	threads = take(&at, end, (size_t)n_threads * sizeof(*threads));
	calls = view(&at, end, (size_t)n_calls * sizeof(*calls));
	waits = view(&at, end, (size_t)n_waits * sizeof(*waits));
	dirs = calloc(n_dirs + 1, sizeof(*dirs));
	for (uint32_t k = 0; k < n_dirs; k++)
		dirs[k] = take_text(&at, end);
	dir_fd_of_file = calloc(n_files + 1, sizeof(int));
	file_names = calloc(n_files + 1, sizeof(char *));
	for (uint32_t k = 0; k < n_files; k++) {
		uint32_t d = take_u32(&at, end);

		if (d >= n_dirs)
			die("a file of the plan names no directory");
		dir_fd_of_file[k] = (int)d;   /* an index until the directories are opened */
		file_names[k] = take_text(&at, end);
	}
	if ((size_t)(end - at) != notes_len)
		die("the plan's notes do not end it");
	notes = calloc(notes_len + 1, 1);
	if (!notes)
		die("out of memory reading the plan");
	memcpy(notes, at, notes_len);
	for (uint64_t i = 0; i < n_calls; i++) {
		if (i && i % RELEASE_EVERY == 0)   /* checked once: not kept resident (nor in ru_maxrss) */
			release(calls + i - RELEASE_EVERY, calls + i);
		if (calls[i].op >= OP_COUNT || calls[i].file < 0 || (uint32_t)calls[i].file >= n_files)
			die("a call of the plan is not one the player knows");
		if (calls[i].fd < 0 || calls[i].fd >= MAX_FD ||
		    (calls[i].op == OP_DUP && (calls[i].ret < 0 || calls[i].ret >= MAX_FD)))
			die("a call of the plan names an fd beyond the player's table");
	}
	release(calls, calls + n_calls);
	/* DIR's directories, reached one component at a time, never through a symlink */
	{
		int *opened = calloc(n_dirs + 1, sizeof(int));
		int into = open(into_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (into < 0)
			die("cannot open DIR");
		for (uint32_t k = 0; k < n_dirs; k++) {
			int cur = dup(into);
			char *copy = strdup(dirs[k]), *save = NULL;

			for (char *part = strtok_r(copy, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
				int next = openat(cur, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

				close(cur);
				if (next < 0)
					die("a directory under DIR is missing, or is a symlink: refused");
				cur = next;
			}
			opened[k] = cur;
			free(copy);
		}
		real = realpath(into_path, NULL);
		file_abs = calloc(n_files + 1, sizeof(char *));
		if (!real || !file_abs)
			die("cannot resolve DIR");
		for (uint32_t k = 0; k < n_files; k++) {
			const char *d = dirs[dir_fd_of_file[k]];
			char *full = NULL;

			if (asprintf(&full, "%s%s%s/%s", real, *d ? "/" : "", d, file_names[k]) < 0)
				die("out of memory reading the plan");
			if (strlen(full) < PATH_RECORDED)
				file_abs[k] = full;
			else
				free(full);
			dir_fd_of_file[k] = opened[dir_fd_of_file[k]];
		}
		free(real);
		close(into);
	}
}

/* --follow: PLAN's calls mapped as the build writes them (shared: its later writes are seen), and
 * PLAN.ready, which says how far they are written. PLAN.head (read by read_plan) has no calls. */
static void follow_plan(void)
{
	char *name = NULL;
	int fd;
	int64_t total = 0;
	size_t head = 44 + (size_t)n_threads * sizeof(struct plan_thread), bytes;
	const unsigned char *base;

	for (uint32_t t = 0; t < n_threads; t++) {
		if (threads[t].first != total || threads[t].count < 0 || threads[t].count > ((int64_t)1 << 40))
			die("the plan's threads do not follow each other");
		total += threads[t].count;
	}
	n_calls = (uint64_t)total;
	bytes = head + (size_t)total * sizeof(struct plan_call);
	fd = open(plan_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("cannot open the plan");
	base = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		die("cannot map the plan");
	close(fd);
	calls = (const struct plan_call *)(base + head);
	if (asprintf(&name, "%s.ready", plan_path) < 0)
		die("out of memory reading the plan");
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("cannot open the plan's progress");
	ready = mmap(NULL, (2 * (size_t)n_threads + 2) * sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
	if (ready == MAP_FAILED)
		die("cannot map the plan's progress");
	close(fd);
	free(name);
}

static int build_alive(void)
{
	char *name = NULL;
	int fd, alive;

	if (asprintf(&name, "%s.ready", plan_path) < 0)
		die("out of memory reading the plan");
	fd = open(name, O_RDONLY | O_CLOEXEC);
	free(name);
	if (fd < 0)
		return 0;
	alive = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return alive;
}

/* --follow: the build failed, or ended before the plan was whole: this replay process stops */
static void build_gone(void)
{
	int64_t state = __atomic_load_n(&ready[n_threads], __ATOMIC_ACQUIRE);

	if (state == FOLLOW_FAILED)
		die("the plan's build failed");
	if (state != FOLLOW_DONE && !build_alive() && __atomic_load_n(&ready[n_threads], __ATOMIC_ACQUIRE) != FOLLOW_DONE)
		die("the plan's build ended before the plan was written");
}

/* --follow: wait until call i of thread t is written, and check it as read_plan checks calls */
static void ready_for(uint32_t t, int64_t i)
{
	const struct plan_call *c = calls + threads[t].first + i;

	if (!follow)
		return;
	for (unsigned naps = 1; __atomic_load_n(&ready[t], __ATOMIC_ACQUIRE) <= i; naps++) {
		struct timespec nap = { 0, 50000 };

		if (__atomic_load_n(&ready[n_threads], __ATOMIC_ACQUIRE) == FOLLOW_FAILED)
			die("the plan's build failed");
		/* every 20 ms of waiting: is the build still there? It holds PLAN.ready locked while it
		 * writes (a lock its end releases, however it ends) */
		if (naps % 400 == 0 && !build_alive() && __atomic_load_n(&ready[t], __ATOMIC_ACQUIRE) <= i)
			die("the plan's build ended before the plan was written");
		nanosleep(&nap, NULL);
	}
	if (c->op >= OP_COUNT || c->file < 0 || (uint32_t)c->file >= n_files)
		die("a call of the plan is not one the player knows");
	if (c->fd < 0 || c->fd >= MAX_FD || (c->op == OP_DUP && (c->ret < 0 || c->ret >= MAX_FD)))
		die("a call of the plan names an fd beyond the player's table");
}

/* --follow: a thread's waits, read from PLAN.waitsT as the build appends them (in call order), no
 * further than PLAN.ready's count of them, which the build writes before the calls' (so the
 * waits of every call said to be written are there) */
struct wait_stream { int fd; struct plan_wait buf[256]; int n, at; int64_t taken; };

static const struct plan_wait *next_wait(struct wait_stream *ws, uint32_t t)
{
	if (ws->at == ws->n) {
		int64_t there = __atomic_load_n(&ready[n_threads + 2 + t], __ATOMIC_ACQUIRE) - ws->taken;
		size_t want;
		ssize_t got;

		if (there <= 0)
			return NULL;
		if (there > (int64_t)(sizeof(ws->buf) / sizeof(ws->buf[0])))
			there = (int64_t)(sizeof(ws->buf) / sizeof(ws->buf[0]));
		want = (size_t)there * sizeof(struct plan_wait);
		got = pread(ws->fd, ws->buf, want, ws->taken * (int64_t)sizeof(struct plan_wait));
		if (got != (ssize_t)want)
			die("cannot read the plan's waits");
		ws->n = (int)there;
		ws->at = 0;
		ws->taken += there;
	}
	return &ws->buf[ws->at];
}

/* Open the plan's file k. The path passed is absolute, so the replay's trace names the file
 * from the call itself: a path relative to a directory fd is made absolute by the collector
 * through /proc/PID/fd while the process lives, and a replay process that has ended by then
 * (a short-lived forked one, on a busy machine) would leave the file named "f1" in the replay's
 * trace, not DIR/f1. RESOLVE_NO_SYMLINKS refuses a symlink at any component, as the walk from
 * DIR's fd does. A path too long for the probe, or a kernel without openat2 (before 5.6): an
 * openat relative to the file's directory fd with O_NOFOLLOW. */
static int open_file(uint32_t k, int flags)
{
	if (file_abs[k]) {
		struct open_how how = { .flags = (uint64_t)(unsigned)flags, .mode = (flags & O_CREAT) ? 0644 : 0,
					.resolve = RESOLVE_NO_SYMLINKS };
		long fd = syscall(SYS_openat2, AT_FDCWD, file_abs[k], &how, sizeof(how));

		if (fd >= 0 || errno != ENOSYS)
			return (int)fd;
	}
	return openat(dir_fd_of_file[k], file_names[k], flags | O_NOFOLLOW, 0644);
}

static int implicit_open(struct stats *s, const struct plan_call *c)
{
	int fd = open_file((uint32_t)c->file, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		fd = open_file((uint32_t)c->file, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		set_ours(c->fd, fd);
		s->implicit++;
	}
	return fd;
}

/* One libaio context or io_uring ring of a replay thread: the recorded ring it stands for, its
 * requests in flight, and, for io_uring, the mapped queues. Each replay thread has its own (a
 * recorded ring is one thread's in the benchmarks replayed here: fio's job threads). */
struct ring {
	uint16_t id;
	int uring;
	int64_t inflight, most;   /* most: the deepest the plan goes on this ring */
	unsigned entries;
	aio_context_t ctx;
	struct iocb *iocbs;      /* libaio: one per request in flight (the kernel, and the probe, */
	unsigned *free_iocbs;    /* know a request by its iocb's address), and the free ones */
	unsigned n_free;
	struct uring_queues q;   /* io_uring: the ring's fd and mapped queues */
};

/* the thread's ring for request c (made at its first request: as deep as the deepest of the
 * `left` calls from c on needs) */
static struct ring *ring_of(struct ring **rings, int *n_rings, const struct plan_call *c, int64_t left)
{
	struct ring *r;
	int64_t entries = 1;
	const char *failed = "";

	for (int k = 0; k < *n_rings; k++)
		if ((*rings)[k].id == c->ring && (*rings)[k].uring == (c->op >= OP_URING_READ))
			return &(*rings)[k];
	*rings = realloc(*rings, (size_t)(*n_rings + 1) * sizeof(**rings));
	if (!*rings)
		die("out of memory for a ring");
	for (int64_t k = 0; k < left; k++)
		if (IS_ASYNC(c[k].op) && c[k].ring == c->ring && (c[k].op >= OP_URING_READ) == (c->op >= OP_URING_READ) &&
		    c[k].depth >= entries)
			entries = c[k].depth + 1;
	r = &(*rings)[(*n_rings)++];
	memset(r, 0, sizeof(*r));
	r->id = c->ring;
	r->uring = c->op >= OP_URING_READ;
	r->most = entries - 1;
	r->entries = 1;
	while (r->entries < entries)
		r->entries <<= 1;
	if (!r->uring) {
		if (syscall(SYS_io_setup, r->entries, &r->ctx) < 0)
			die("cannot set up a libaio context (io_setup)");
		r->iocbs = calloc(r->entries, sizeof(struct iocb));
		r->free_iocbs = calloc(r->entries, sizeof(unsigned));
		if (!r->iocbs || !r->free_iocbs)
			die("out of memory for a libaio context");
		for (unsigned k = 0; k < r->entries; k++)
			r->free_iocbs[k] = k;
		r->n_free = r->entries;
		return r;
	}
	if (uring_queues_setup(&r->q, r->entries, &failed) < 0)
		die(strcmp(failed, "mmap") ? "cannot set up an io_uring ring (io_uring_setup)" : "cannot map an io_uring ring");
	return r;
}

/* a request completed: counted against what the original's did */
static void completed(struct stats *s, const struct plan_call *c, int64_t res)
{
	if (res < 0)
		s->failed[c->op]++;
	else if (IS_DATA(c->op) && res != c->ret)
		s->other[c->op]++;
}

/* wait for completions until at most `keep` requests of the ring are in flight. In flight
 * means what the trace means: a libaio request until the io_getevents that reaps it (so no
 * more are reaped than wanted), an io_uring request until its completion is posted (so every
 * completion already posted is taken first, without a syscall). Returns REAP_NONE when it
 * made no waiting syscall, REAP_WAITED when it did, REAP_SLEPT when one of them was longer than
 * SLEPT_NS (it slept: the way back from it is paid in the original's gap too, wake_cost) */
enum { REAP_NONE, REAP_WAITED, REAP_SLEPT };
#define SLEPT_NS 10000LL   /* a call longer than this slept: a cached 4 KiB read takes about 1 us
			    * here, a sleep and wake-up on this VM 10 us and more */

static void note_wait(int *waited, int64_t since)
{
	if (now_ns() - since > SLEPT_NS)
		*waited = REAP_SLEPT;
	else if (*waited == REAP_NONE)
		*waited = REAP_WAITED;
}

static int reap(struct stats *s, struct ring *r, int64_t keep)
{
	int waited = REAP_NONE;

	if (r->uring && r->inflight) {
		unsigned head = *r->q.cq_head, tail = __atomic_load_n(r->q.cq_tail, __ATOMIC_ACQUIRE);

		for (; head != tail; head++, r->inflight--)
			completed(s, (const struct plan_call *)(uintptr_t)r->q.cqes[head & *r->q.cq_mask].user_data,
				  r->q.cqes[head & *r->q.cq_mask].res);
		__atomic_store_n(r->q.cq_head, head, __ATOMIC_RELEASE);
	}
	while (r->inflight > keep) {
		if (!r->uring) {
			struct io_event ev[64];
			long want = r->inflight - keep, got;

			/* no more than are wanted: a libaio request's recorded end is the io_getevents
			 * that reaped it, so one reaped early would end early */
			if (want > 64)
				want = 64;
			int64_t since = now_ns();

			got = syscall(SYS_io_getevents, r->ctx, want, want, ev, NULL);
			note_wait(&waited, since);
			if (got < 0) {
				if (errno == EINTR)
					continue;
				die("io_getevents failed");
			}
			for (long k = 0; k < got; k++) {
				completed(s, (const struct plan_call *)(uintptr_t)ev[k].data, ev[k].res);
				r->free_iocbs[r->n_free++] = (unsigned)((struct iocb *)(uintptr_t)ev[k].obj - r->iocbs);
			}
			r->inflight -= got;
		} else {
			unsigned head = *r->q.cq_head, tail = __atomic_load_n(r->q.cq_tail, __ATOMIC_ACQUIRE);

			if (head == tail) {
				int64_t since = now_ns();

				if (syscall(SYS_io_uring_enter, r->q.fd, 0, (unsigned)(r->inflight - keep),
					    IORING_ENTER_GETEVENTS, NULL, 0) < 0 && errno != EINTR)
					die("io_uring_enter failed waiting for completions");
				note_wait(&waited, since);
				continue;
			}
			for (; head != tail; head++, r->inflight--) {
				struct io_uring_cqe *cqe = &r->q.cqes[head & *r->q.cq_mask];

				completed(s, (const struct plan_call *)(uintptr_t)cqe->user_data, cqe->res);
			}
			__atomic_store_n(r->q.cq_head, head, __ATOMIC_RELEASE);
		}
	}
	return waited;
}

/* submit one recorded request on its ring, as the original did (libaio: io_submit; io_uring:
 * an SQE and io_uring_enter); -errno when the submission itself failed */
static int64_t submit(struct ring *r, const struct plan_call *c, int fd, char *read_buf, struct iovec *iov)
{
	char *buf = IS_READ(c->op) ? read_buf : write_buf;
	unsigned opcode = c->flags & URING_OPCODE_MASK;

	iov->iov_base = buf;
	iov->iov_len = (size_t)c->size;
	if (!r->uring) {
		struct iocb *list[1];
		unsigned slot;

		if (!r->n_free)
			die("a libaio context has no free iocb (the plan's depth is wrong)");
		slot = r->free_iocbs[--r->n_free];
		struct iocb cb;

		memset(&cb, 0, sizeof(cb));
		cb.aio_data = (uint64_t)(uintptr_t)c;
		cb.aio_fildes = (uint32_t)fd;
		cb.aio_offset = c->offset;
		cb.aio_rw_flags = (int)(c->flags & AIO_RWF_KEPT);
		if (c->op == OP_AIO_FSYNC) {
			cb.aio_lio_opcode = c->flags & AIO_DATASYNC ? IOCB_CMD_FDSYNC : IOCB_CMD_FSYNC;
			cb.aio_offset = 0;
		} else if (c->flags & AIO_VECTORED) {
			cb.aio_lio_opcode = c->op == OP_AIO_READ ? IOCB_CMD_PREADV : IOCB_CMD_PWRITEV;
			cb.aio_buf = (uint64_t)(uintptr_t)iov;
			cb.aio_nbytes = 1;
		} else {
			cb.aio_lio_opcode = c->op == OP_AIO_READ ? IOCB_CMD_PREAD : IOCB_CMD_PWRITE;
			cb.aio_buf = (uint64_t)(uintptr_t)buf;
			cb.aio_nbytes = (uint64_t)c->size;
		}
		r->iocbs[slot] = cb;
		list[0] = &r->iocbs[slot];
		if (syscall(SYS_io_submit, r->ctx, 1, list) != 1) {
			r->free_iocbs[r->n_free++] = slot;
			return -errno;
		}
	} else {
		unsigned tail = *r->q.sq_tail, slot = tail & *r->q.sq_mask;
		struct io_uring_sqe *sqe = &r->q.sqes[slot];

		memset(sqe, 0, sizeof(*sqe));
		sqe->fd = fd;
		sqe->user_data = (uint64_t)(uintptr_t)c;
		sqe->off = (uint64_t)c->offset;
		if (c->op == OP_URING_FSYNC) {
			if (opcode == IORING_OP_SYNC_FILE_RANGE) {
				sqe->opcode = IORING_OP_SYNC_FILE_RANGE;
				sqe->len = (uint32_t)c->size;
			} else {
				sqe->opcode = IORING_OP_FSYNC;
				sqe->off = 0;
				sqe->fsync_flags = c->flags & URING_DATASYNC ? IORING_FSYNC_DATASYNC : 0;
			}
		} else if (opcode == IORING_OP_READV || opcode == IORING_OP_WRITEV) {
			/* the iovec stays this call's until the request completes */
			sqe->opcode = c->op == OP_URING_READ ? IORING_OP_READV : IORING_OP_WRITEV;
			sqe->addr = (uint64_t)(uintptr_t)iov;
			sqe->len = 1;
		} else {   /* READ, WRITE, and the registered-buffer forms as plain ones */
			sqe->opcode = c->op == OP_URING_READ ? IORING_OP_READ : IORING_OP_WRITE;
			sqe->addr = (uint64_t)(uintptr_t)buf;
			sqe->len = (uint32_t)c->size;
		}
		r->q.sq_array[slot] = slot;
		__atomic_store_n(r->q.sq_tail, tail + 1, __ATOMIC_RELEASE);
		if (syscall(SYS_io_uring_enter, r->q.fd, 1, 0, 0, NULL, 0) != 1)
			return -errno;
	}
	r->inflight++;
	return 0;
}

/* Thread u's progress: how many of its calls it has issued. A call on a shared file waits for
 * another thread's count on a futex (its low 32 bits, in memory every replay process shares:
 * not FUTEX_PRIVATE); a sleep-and-look (the first way) took 60 to 80 us to see it on this
 * machine, a futex wake-up a few. The waiter leaves the count it needs in wake_at[u], and u
 * wakes it only when its progress gets there: woken at every call of u instead, a waiter slept
 * and woke hundreds of times per thread in a sysbench replay (2 threads, 4,000 calls: 500 to
 * 850 sleeps a thread against the plan's 113 waits), each a pair of context switches taken
 * from the calls. (Either the waiter's futex sees the new count or u sees the waiter's mark:
 * both sides store, then load, sequentially consistent.) */
static void build_gone(void);

static void wait_for(uint32_t u, int64_t count)
{
	for (unsigned looks = 1;; looks++) {
		if (follow && looks % 20 == 0)
			build_gone();   /* the awaited thread may be held by a build that has ended */
		int64_t seen = __atomic_load_n(&progress[u], __ATOMIC_SEQ_CST);
		int64_t mark = __atomic_load_n(&wake_at[u], __ATOMIC_SEQ_CST);
		struct timespec limit = { 0, WAIT_LIMIT_NS };

		if (seen >= count)
			return;
		/* the lowest count any waiter needs */
		while (count < mark && !__atomic_compare_exchange_n(&wake_at[u], &mark, count, 0, __ATOMIC_SEQ_CST,
								      __ATOMIC_SEQ_CST))
			;
		syscall(SYS_futex, (int32_t *)&progress[u], FUTEX_WAIT, (int32_t)(uint32_t)seen, &limit, NULL, 0);
	}
}

static void advance(uint32_t t)
{
	int64_t now = progress[t] + 1;

	__atomic_store_n(&progress[t], now, __ATOMIC_SEQ_CST);
	/* every waiter is woken; those that need more mark their count again */
	if (__atomic_load_n(&wake_at[t], __ATOMIC_SEQ_CST) <= now) {
		__atomic_store_n(&wake_at[t], NO_WAITER, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, (int32_t *)&progress[t], FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
	}
}

/* Wait until `target`: a long wait is slept until SPIN_NS before it (a sleep wakes up late by
 * tens of us here, even with the timer slack at 1 ns), the rest spun; after a sleep, spun with a
 * sched_yield between clock reads until YIELD_NS before it. Threads that wake together (fio's 4
 * jobs, whose first calls fio starts within 0.2-2.6 ms of each other) spun their 200 us on 2
 * CPUs two at a time, the others waiting for a CPU: their first calls came 2.1-4.4 ms apart. */
#define YIELD_NS 20000LL
static int64_t wait_until(int64_t target)
{
	int64_t now = now_ns(), delay = target - now;

	if (delay > 2 * SPIN_NS) {
		int64_t wake = target - SPIN_NS;
		struct timespec ts = { .tv_sec = wake / 1000000000LL, .tv_nsec = wake % 1000000000LL };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		for (now = now_ns(); target - now > YIELD_NS; now = now_ns())
			sched_yield();
	}
	while (now < target)
		now = now_ns();
	return now;   /* the call starts here: the caller needs no clock read of its own */
}

/* What a syscall costs outside the span the probe records: from the player's clock read after
 * one call to the next call's entry, and from a call's exit to the return, are not in the
 * recorded gap the way they were in the original's (there, they were part of the gap itself).
 * Measured as the median round trip of a syscall that does nothing (getppid), clock reads
 * included; each think time is shortened by it. */
/* Whether the player waits before call c: only when its think time is longer than the time a
 * call costs outside the recorded span anyway (call_cost); a shorter one is covered by the
 * player's own time between two calls, and the clock is not even read around it (two clock
 * reads cost more than IOzone's whole think time of about 150 ns here). */
static inline int timed(const struct plan_call *c)
{
	return speed > 0 && (double)c->gap_ns / speed > (double)call_cost;
}

/* the median of n (odd, about a hundred) measurements: an insertion sort is enough */
static int64_t median_ns(int64_t *d, int n)
{
	for (int a = 0; a < n; a++)
		for (int b = a; b > 0 && d[b] < d[b - 1]; b--) {
			int64_t tmp = d[b];

			d[b] = d[b - 1];
			d[b - 1] = tmp;
		}
	return d[n / 2];
}

static int64_t syscall_cost(void)
{
	int64_t d[101];

	for (int k = 0; k < 101; k++) {
		int64_t a = now_ns();

		syscall(SYS_getppid);
		d[k] = now_ns() - a;
	}
	return median_ns(d, 101);
}

/* What a call that slept costs more than one that did not, outside the span the probe records:
 * after the wake-up, the way back out of the kernel (the probe's exit program among it) and into
 * the next call run on a CPU whose caches served another task meanwhile. The original paid it in
 * its recorded gap after every call that slept (fio's disk reads: its gap after a pread64 that
 * slept is about 0.65 us longer than after one that did not, its user code alike), and the player
 * pays it again on top of that gap, its clock read after such a call coming after it. The same
 * after a reap of libaio or io_uring requests that slept (io_getevents, io_uring_enter: reap):
 * the original's gap after its wait ran from the wait's end or its completion. Measured as
 * the median, over pairs, of an lseek on the plan's file (a call the probe follows as far as its
 * file test, and does no I/O) right after a 50 us sleep, less the same lseek right after it. It
 * misses the probe's record of the call (the file is not traced), so it takes off less than the
 * whole, as a rule (190 to 580 ns measured, against 550 to 710 ns after fio's disk reads). */
static int64_t wake_cost_of(void)
{
	int64_t d[51];
	int fd = open(plan_path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	for (int k = 0; k < 51; k++) {
		struct timespec nap = { 0, 50000 };
		int64_t a, b;

		nanosleep(&nap, NULL);
		a = now_ns();
		(void)lseek(fd, 0, SEEK_CUR);
		b = now_ns();
		(void)lseek(fd, 0, SEEK_CUR);
		d[k] = (b - a) - (now_ns() - b);
	}
	close(fd);
	int64_t mid = median_ns(d, 51);

	return mid > 0 ? mid : 0;
}

/* What an io_uring request's way out of a wait and into the next submission costs outside the
 * span the probe records, beyond a plain syscall's round trip (call_cost): the completion is
 * stamped as it is posted, inside the wait (in the woken task's own context), and the next
 * request as it is submitted, inside io_uring_enter, so that way includes the rest of the
 * wait's io_uring_enter and the submitting one's way in to the request, the probe's programs on
 * both. The original paid it inside its recorded gap after each wait, and the player paid it
 * again on top of that whole gap. Measured as the median round trip of an io_uring_enter that
 * submits one NOP and waits for its completion (posted inline: no sleep), less call_cost (650 to
 * 1,560 ns here). With it, at the calls before which both fio (--ioengine=io_uring
 * --iodepth=32) and its replay slept, the replay's time from the last completion to the call
 * went from the original's +2,314 and +2,404 ns to +1,612 and +1,602 (median of 5, two sets on a
 * quiet machine, replay_fidelity.py --base-player). */
static int64_t uring_cost_of(void)
{
	int64_t d[101];
	struct uring_queues q;
	const char *failed;

	if (uring_queues_setup(&q, 4, &failed) < 0)
		return 0;
	for (int k = 0; k < 101; k++) {
		unsigned tail = *q.sq_tail, slot = tail & *q.sq_mask, head;
		struct io_uring_sqe *sqe = &q.sqes[slot];

		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_NOP;
		q.sq_array[slot] = slot;
		__atomic_store_n(q.sq_tail, tail + 1, __ATOMIC_RELEASE);
		int64_t a = now_ns();

		if (syscall(SYS_io_uring_enter, q.fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) != 1) {
			close(q.fd);
			return 0;
		}
		d[k] = now_ns() - a;
		head = __atomic_load_n(q.cq_tail, __ATOMIC_ACQUIRE);
		__atomic_store_n(q.cq_head, head, __ATOMIC_RELEASE);
	}
	close(q.fd);   /* its mappings stay: a few pages, for the replay's length */
	int64_t extra = median_ns(d, 101) - call_cost;

	return extra > 0 ? extra : 0;
}

struct job { uint32_t thread; struct stats stats; };

static void *run_thread(void *arg)
{
	struct job *job = arg;
	struct stats *s = &job->stats;
	uint32_t t = job->thread;
	const struct plan_call *c = calls + threads[t].first;
	int64_t count = threads[t].count, max_read = 4096, prev_end = t0;
	uint64_t w = 0;
	char *read_buf;
	struct ring *rings = NULL;
	int n_rings = 0;

	struct wait_stream ws = { .fd = -1 };

	if (follow) {   /* the calls are not all written yet: the largest buffer any call needs */
		char *name = NULL;

		if (ready[n_threads + 1] > max_read)
			max_read = ready[n_threads + 1];
		if (asprintf(&name, "%s.waits%u", plan_path, t) < 0)
			die("out of memory reading the plan");
		ws.fd = open(name, O_RDONLY | O_CLOEXEC);
		if (ws.fd < 0)
			die("cannot open the plan's waits");
		free(name);
	}
	for (int64_t i = 0; i < count && !follow; i++) {
		if (i && i % RELEASE_EVERY == 0)
			release(c + i - RELEASE_EVERY, c + i);
		if (IS_READ(c[i].op) && c[i].size > max_read)
			max_read = c[i].size;
	}
	release(c, c + count);
	if (posix_memalign((void **)&read_buf, 4096, (size_t)max_read))
		die("out of memory for a read buffer");
	/* the first of this thread's waits (waits are sorted by call) */
	while (w < n_waits && waits[w].call < threads[t].first)
		w++;
	uint64_t w_released = w;
	for (int64_t i = 0; i < count; i++, c++) {
		int64_t res, issued_at;
		int fd, reaped, next_timed;
		struct iovec iov;
		struct ring *r = NULL;

		if (i && i % RELEASE_EVERY == 0) {
			release(c - RELEASE_EVERY, c);
			release(waits + w_released, waits + w);
			w_released = w;
		}

		ready_for(t, i);
		if (follow) {
			const struct plan_wait *pw;

			while ((pw = next_wait(&ws, t)) && pw->call <= threads[t].first + i) {
				if (pw->call == threads[t].first + i) {
					if (pw->thread >= n_threads)
						die("a wait of the plan names no thread");
					wait_for(pw->thread, pw->count);
				}
				ws.at++;
			}
		}
		for (; w < n_waits && waits[w].call == threads[t].first + i; w++)
			wait_for(waits[w].thread, waits[w].count);
		/* a request: its ring reaped down to the depth the original had at its submission;
		 * a call that started with none of the thread's requests in flight: all reaped. The
		 * wait for completions is not think time: the think time runs from its end */
		reaped = 0;
		if (IS_ASYNC(c->op)) {
			r = ring_of(&rings, &n_rings, c, count - i);
			/* libaio: down to the recorded depth (in flight until reaped, as the trace
			 * counts it). io_uring: the trace's depth counts completions the kernel posted
			 * while the benchmark was busy, which it did not wait for (fio waits only when
			 * its whole queue is in flight): the posted ones are taken, and the player waits
			 * only when the ring holds as many as it ever held in the original. Not where fio
			 * slept (the trace's off-CPU records say where): there fio's whole queue was in
			 * flight (a posted completion returns its wait at once), and a replay that waited
			 * there for one with fewer in flight ran at a lower depth (fio's mixed phase +77.5 %
			 * against +6.0 %, 5 replays each, 2026-12-07 replay31k, performance-log.md) */
			reaped = reap(s, r, r->uring ? r->most : c->depth);
		} else if (c->depth == 0) {
			for (int k = 0; k < n_rings; k++) {
				int got = reap(s, &rings[k], 0);

				if (got > reaped)
					reaped = got;
			}
		}
		/* the think time restarts after a reap that waited where the original waited too
		 * (its think time ran from that completion); before a request the original made
		 * without waiting, the think time ran from its previous call, beside its I/O, and
		 * the wait overlaps it: restarted there, an io_uring replay, which holds its ring to
		 * the most the original's held and so waits before other requests than fio did, kept
		 * fio's 9.8 us between submissions after each of its waits as well */
		if (reaped && speed > 0 && (!IS_ASYNC(c->op) || (c->flags & WAITED_BEFORE))) {
			prev_end = now_ns();
			/* a reap that slept: the way back from it is in the original's gap after its
			 * wait too (its io_getevents' end, its completion), as after a call that slept */
			if (reaped == REAP_SLEPT)
				prev_end -= wake_cost;
			/* an io_uring completion is stamped inside the wait, the next request inside
			 * its submission: the way between them, beyond a syscall's round trip, was in
			 * the original's gap too (uring_cost) */
			if (r && r->uring)
				prev_end -= uring_cost;
		}
		issued_at = timed(c) ? wait_until(prev_end + (int64_t)(c->gap_ns / speed) - call_cost) : 0;
		fd = c->op == OP_OPEN ? -1 : ours(c->fd);
		if (c->op != OP_OPEN && fd < 0)
			fd = implicit_open(s, c);
		if (IS_ASYNC(c->op)) {
			/* submitted; its result is counted when it is reaped */
			if (i + 1 < count && speed > 0 && (ready_for(t, i + 1), timed(c + 1))) {
				prev_end = now_ns();   /* the thread is free again once the request is submitted */
				/* io_uring: the next call's recorded gap runs from this request's stamp,
				 * inside its submission, after this clock read: no way out of a call lies
				 * in it, so call_cost is not taken off it (it was: the gap after each
				 * submission was fio's less 381 to 390 ns, call for call) */
				if (r->uring)
					prev_end += call_cost;
			}
			res = submit(r, c, fd, read_buf, &iov);
			s->issued[c->op]++;
			if (res < 0)
				s->failed[c->op]++;
			advance(t);
			continue;
		}
		/* the next call's wait is counted from this one's end: its start is read too, to
		 * tell a call that slept (wake_cost) */
		next_timed = i + 1 < count && speed > 0 && (ready_for(t, i + 1), timed(c + 1));
		if (next_timed && !issued_at)
			issued_at = now_ns();
		iov.iov_len = (size_t)c->size;
		switch (c->op) {
		case OP_OPEN:
			res = open_file((uint32_t)c->file, (int)(c->flags & KEPT_FLAGS) | O_CLOEXEC);
			if (res >= 0) {
				if (ours(c->fd) >= 0)
					close(ours(c->fd));
				set_ours(c->fd, (int)res);
				fd_direct[c->fd] = !!(c->flags & O_DIRECT);
			}
			break;
		case OP_CLOSE:
			res = close(fd);
			set_ours(c->fd, -1);
			break;
		case OP_READ: res = read(fd, read_buf, (size_t)c->size); break;
		case OP_WRITE: res = write(fd, write_buf, (size_t)c->size); break;
		case OP_PREAD64: res = pread(fd, read_buf, (size_t)c->size, c->offset); break;
		case OP_PWRITE64: res = pwrite(fd, write_buf, (size_t)c->size, c->offset); break;
		case OP_READV: iov.iov_base = read_buf; res = readv(fd, &iov, 1); break;
		case OP_WRITEV: iov.iov_base = write_buf; res = writev(fd, &iov, 1); break;
		case OP_PREADV: iov.iov_base = read_buf; res = preadv(fd, &iov, 1, c->offset); break;
		case OP_PWRITEV: iov.iov_base = write_buf; res = pwritev(fd, &iov, 1, c->offset); break;
		case OP_PREADV2: iov.iov_base = read_buf; res = preadv2(fd, &iov, 1, c->offset, (int)c->flags); break;
		case OP_PWRITEV2: iov.iov_base = write_buf; res = pwritev2(fd, &iov, 1, c->offset, (int)c->flags); break;
		case OP_LSEEK: res = lseek(fd, c->size, (int)c->flags); break;
		case OP_FSYNC: res = fsync(fd); break;
		case OP_FDATASYNC: res = fdatasync(fd); break;
		case OP_FTRUNCATE: res = ftruncate(fd, c->size); break;
		case OP_FALLOCATE: res = fallocate(fd, (int)c->flags, c->offset, c->size); break;
		/* posix_fadvise returns its error instead of setting errno */
		case OP_FADVISE64: res = syscall(SYS_fadvise64, fd, c->offset, c->size, (int)c->flags); break;
		case OP_READAHEAD: res = readahead(fd, c->offset, (size_t)c->size); break;
		default:   /* dup: the recorded new fd names our copy */
			res = dup(fd);
			if (res >= 0) {
				set_ours((int)c->ret, (int)res);
				fd_direct[c->ret] = fd_direct[c->fd];
			}
		}
		if (res < 0)
			res = -errno;
		if (next_timed) {
			prev_end = now_ns();
			if (prev_end - issued_at > SLEPT_NS)
				prev_end -= wake_cost;
		}
		s->issued[c->op]++;
		if (res < 0)
			s->failed[c->op]++;
		else if (IS_DATA(c->op) && res != c->ret)
			s->other[c->op]++;
		advance(t);
	}
	for (int k = 0; k < n_rings; k++) {
		(void)reap(s, &rings[k], 0);
		if (rings[k].uring) {
			close(rings[k].q.fd);
		} else {
			syscall(SYS_io_destroy, rings[k].ctx);
			free(rings[k].iocbs);
			free(rings[k].free_iocbs);
		}
	}
	free(rings);
	free(read_buf);
	if (ws.fd >= 0)
		close(ws.fd);
	return NULL;
}

static void run_group(const uint32_t *members, uint32_t n, struct stats *total)
{
	struct job *jobs = calloc(n, sizeof(*jobs));
	pthread_t *ids = calloc(n, sizeof(*ids));

	fd_map = calloc(MAX_FD, sizeof(int));   /* all 0, not open: no page touched until used */
	fd_direct = calloc(MAX_FD, 1);
	if (!jobs || !ids || !fd_map || !fd_direct)
		die("out of memory for the threads");
	/* the recorded process's main thread (tid = tgid) is replayed by this process's own, so
	 * that the replay's main thread does what the original's did (fio's layout, say) */
	uint32_t main_k = 0;

	for (uint32_t k = 0; k < n; k++)
		if (threads[members[k]].tid == threads[members[k]].tgid)
			main_k = k;
	for (uint32_t k = 0; k < n; k++) {
		jobs[k].thread = members[k];
		if (k != main_k && pthread_create(&ids[k], NULL, run_thread, &jobs[k]))
			die("cannot start a thread");
	}
	if (n)
		run_thread(&jobs[main_k]);
	memset(total, 0, sizeof(*total));
	for (uint32_t k = 0; k < n; k++) {
		if (k != main_k)
			pthread_join(ids[k], NULL);
		for (int op = 0; op < OP_COUNT; op++) {
			total->issued[op] += jobs[k].stats.issued[op];
			total->failed[op] += jobs[k].stats.failed[op];
			total->other[op] += jobs[k].stats.other[op];
		}
		total->implicit += jobs[k].stats.implicit;
	}
}

static void add(struct stats *to, const struct stats *from)
{
	for (int op = 0; op < OP_COUNT; op++) {
		to->issued[op] += from->issued[op];
		to->failed[op] += from->failed[op];
		to->other[op] += from->other[op];
	}
	to->implicit += from->implicit;
}

static const char *grouped(uint64_t v, char *buf)
{
	char raw[32];
	int len = snprintf(raw, sizeof(raw), "%llu", (unsigned long long)v), out = 0;

	for (int k = 0; k < len; k++) {
		if (k && (len - k) % 3 == 0)
			buf[out++] = ',';
		buf[out++] = raw[k];
	}
	buf[out] = 0;
	return buf;
}

int main(int argc, char **argv)
{
	uint32_t *group_of, *order, n_groups = 0;
	int local = -1;   /* the group this process replays itself: the root process's */
	uint32_t *group_tgid;
	struct stats total, mine;
	pid_t *children;
	int *pipes;
	uint64_t issued = 0, failed = 0, other = 0;
	int64_t longest = 4096;
	int has_uring = 0;   /* whether the plan holds io_uring requests (uring_cost) */
	char b1[32], b2[32], b3[32];

	if (argc != 4 && !(argc == 5 && !strcmp(argv[4], "--follow"))) {
		fprintf(stderr, "usage: iowitness-player PLAN DIR SPEED [--follow]\n");
		return 2;
	}
	into_path = argv[2];
	speed = atof(argv[3]);
	plan_path = argv[1];
	follow = argc == 5;
	if (follow) {
		char *head = NULL;

		if (asprintf(&head, "%s.head", plan_path) < 0)
			die("out of memory reading the plan");
		read_plan(head);   /* no calls: they are in PLAN, as ready says */
		free(head);
		follow_plan();
		if (ready[n_threads + 1] > longest)
			longest = ready[n_threads + 1];
	}
	else
		read_plan(plan_path);
	for (uint64_t i = 0; i < n_calls && !follow; i++) {
		if (i && i % RELEASE_EVERY == 0)
			release(calls + i - RELEASE_EVERY, calls + i);
		if ((calls[i].op == OP_WRITE || calls[i].op == OP_PWRITE64 || calls[i].op == OP_WRITEV ||
		     calls[i].op == OP_PWRITEV || calls[i].op == OP_PWRITEV2) && calls[i].size > longest)
			longest = calls[i].size;
		if (calls[i].op >= OP_URING_READ)
			has_uring = 1;
	}
	if (!follow)
		release(calls, calls + n_calls);
	if (posix_memalign((void **)&write_buf, 4096, (size_t)longest))
		die("out of memory for the write buffer");
	{
		static const char pattern[] = "iowitness replay: data was not recorded, this is its stand-in. ";

		for (int64_t k = 0; k < longest; k++)
			write_buf[k] = pattern[k % (sizeof(pattern) - 1)];
	}
	progress = mmap(NULL, (n_threads + 1) * sizeof(int64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			-1, 0);
	wake_at = mmap(NULL, (n_threads + 1) * sizeof(int64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0);
	if (progress == MAP_FAILED || wake_at == MAP_FAILED)
		die("cannot map the progress counters");
	for (uint32_t t = 0; t <= n_threads; t++)
		wake_at[t] = NO_WAITER;
	/* one group per recorded process, in order of first appearance */
	group_of = calloc(n_threads + 1, sizeof(uint32_t));
	group_tgid = calloc(n_threads + 1, sizeof(uint32_t));
	order = calloc(n_threads + 1, sizeof(uint32_t));
	for (uint32_t t = 0; t < n_threads; t++) {
		uint32_t g = 0;

		while (g < n_groups && group_tgid[g] != threads[t].tgid)
			g++;
		if (g == n_groups)
			group_tgid[n_groups++] = threads[t].tgid;
		group_of[t] = g;
	}
	children = calloc(n_groups + 1, sizeof(pid_t));
	pipes = calloc(n_groups + 1, sizeof(int));
	fflush(stdout);
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);   /* sleeps end as close to their time as the kernel can */
	call_cost = speed > 0 ? syscall_cost() : 0;
	wake_cost = speed > 0 ? wake_cost_of() : 0;
	uring_cost = speed > 0 && has_uring ? uring_cost_of() : 0;   /* after call_cost: its part beyond it */
	t0 = now_ns();
	memset(&total, 0, sizeof(total));
	for (uint32_t g = 0; g < n_groups; g++)
		if (root_tgid && group_tgid[g] == root_tgid)
			local = (int)g;
	for (uint32_t g = 0; g < n_groups; g++) {
		uint32_t n = 0;
		int ends[2];

		for (uint32_t t = 0; t < n_threads; t++)
			if (group_of[t] == g)
				order[n++] = t;
		if ((int)g == local)
			continue;
		if (pipe(ends))
			die("cannot make a pipe");
		children[g] = fork();
		if (children[g] < 0)
			die("cannot fork a replay process");
		if (children[g] == 0) {
			close(ends[0]);
			run_group(order, n, &mine);
			if (write(ends[1], &mine, sizeof(mine)) != (ssize_t)sizeof(mine))
				_exit(3);
			_exit(0);
		}
		close(ends[1]);
		pipes[g] = ends[0];
	}
	if (local >= 0) {
		uint32_t n = 0;

		for (uint32_t t = 0; t < n_threads; t++)
			if (group_of[t] == (uint32_t)local)
				order[n++] = t;
		run_group(order, n, &mine);
		add(&total, &mine);
	}
	for (uint32_t g = 0; g < n_groups; g++) {
		int status;

		if ((int)g == local)
			continue;

		if (read(pipes[g], &mine, sizeof(mine)) == (ssize_t)sizeof(mine))
			add(&total, &mine);
		else
			failed++;   /* a replay process that did not report counts as a failure */
		waitpid(children[g], &status, 0);
	}
	for (int op = 0; op < OP_COUNT; op++) {
		issued += total.issued[op];
		failed += total.failed[op];
		other += total.other[op];
	}
	printf("iowitness replay: %s calls in %u thread(s), %.3f s; %s failed, %s moved other byte counts than the "
	       "original; %llu implicit open(s)\n", grouped(issued, b1), n_threads, (now_ns() - t0) / 1e9,
	       grouped(failed, b2), grouped(other, b3), (unsigned long long)total.implicit);
	{
		/* per syscall, by name */
		int idx[OP_COUNT];

		for (int k = 0; k < OP_COUNT; k++)
			idx[k] = k;
		for (int a = 0; a < OP_COUNT; a++)
			for (int b = a + 1; b < OP_COUNT; b++)
				if (strcmp(op_names[idx[b]], op_names[idx[a]]) < 0) {
					int tmp = idx[a];

					idx[a] = idx[b];
					idx[b] = tmp;
				}
		for (int k = 0; k < OP_COUNT; k++)
			if (total.issued[idx[k]])
				printf("iowitness replay:   %s: %s issued, %s failed, %s other bytes\n", op_names[idx[k]],
				       grouped(total.issued[idx[k]], b1), grouped(total.failed[idx[k]], b2),
				       grouped(total.other[idx[k]], b3));
	}
	if (call_cost)
		printf("iowitness replay:   think times kept: those over %lld ns, each %lld ns shorter (a syscall's round "
		       "trip here, outside the span the probe records)\n", (long long)call_cost, (long long)call_cost);
	if (wake_cost)
		printf("iowitness replay:   after a call or a reap that slept (over %lld us), %lld ns shorter still (the way back "
		       "from a sleep, paid in the original's gap too)\n", SLEPT_NS / 1000, (long long)wake_cost);
	if (uring_cost)
		printf("iowitness replay:   after a reap of io_uring completions, %lld ns shorter still (from a completion's "
		       "post to the next submission, beyond a syscall's round trip)\n", (long long)uring_cost);
	fputs(notes, stdout);
	fflush(stdout);
	_exit(failed ? 1 : 0);   /* the fds the original left open are not closed by a call either */
}
