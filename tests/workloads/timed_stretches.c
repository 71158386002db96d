/* timed_stretches.c — two open-to-close stretches of one file, each call timed from user space:
 * the ground truth of the "stretches" table in tests/kernel/test_report_reading.py.
 *
 * Usage: timed_stretches FILE MIB
 *   Stretch 1: open FILE (O_WRONLY|O_CREAT|O_TRUNC), MIB writes of 1 MiB, fsync, close.
 *   Stretch 2: open FILE (O_RDONLY), MIB reads of 1 MiB, close.
 *   Prints one line per stretch, every figure in ns from CLOCK_MONOTONIC read just before and
 *   just after each call (so each includes the call's entry and exit, which a kernel probe
 *   does not: the program's own figure is the larger by a few hundred ns per call):
 *     stretch 1 calls 35 open_to_close_ns 51234567 in_calls_ns 50123456 writes_ns 12345678 sync_ns 37000000 reads_ns 0
 *   calls counts open and close too. Exits 1 with a message on any failed or short call.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024 * 1024)

static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

struct stretch { long long first, last, in_calls, writes, sync, reads; int calls; };

static void timed(struct stretch *s, long long *kind, long long begin) {
    long long end = now();
    if (!s->first) s->first = begin;
    s->last = end;
    s->in_calls += end - begin;
    if (kind) *kind += end - begin;
    s->calls++;
}

static void fail(const char *what) { perror(what); exit(1); }

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: timed_stretches FILE MIB\n"); return 1; }
    int mib = atoi(argv[2]);
    char *buf = malloc(MIB);
    memset(buf, 'x', MIB);
    struct stretch s[2] = {{0}};
    long long t = now();
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    timed(&s[0], NULL, t);
    if (fd < 0) fail("open");
    for (int i = 0; i < mib; i++) {
        t = now();
        ssize_t n = write(fd, buf, MIB);
        timed(&s[0], &s[0].writes, t);
        if (n != MIB) fail("write");
    }
    t = now();
    if (fsync(fd)) fail("fsync");
    timed(&s[0], &s[0].sync, t);
    t = now();
    if (close(fd)) fail("close");
    timed(&s[0], NULL, t);
    t = now();
    fd = open(argv[1], O_RDONLY);
    timed(&s[1], NULL, t);
    if (fd < 0) fail("open");
    for (int i = 0; i < mib; i++) {
        t = now();
        ssize_t n = read(fd, buf, MIB);
        timed(&s[1], &s[1].reads, t);
        if (n != MIB) fail("read");
    }
    t = now();
    if (close(fd)) fail("close");
    timed(&s[1], NULL, t);
    for (int i = 0; i < 2; i++)
        printf("stretch %d calls %d open_to_close_ns %lld in_calls_ns %lld writes_ns %lld sync_ns %lld reads_ns %lld\n",
               i + 1, s[i].calls, s[i].last - s[i].first, s[i].in_calls, s[i].writes, s[i].sync, s[i].reads);
    free(buf);
    return 0;
}
