/* known_start.h — the start shared by the workloads that log every call they make for a test
 * (advice_known, uring_known; usage: NAME DIR LOG): the usage checked, LOG opened for the
 * log lines (`logf`), and DIR/FILE opened read-write, created, truncated.
 *
 * Example: int fd = known_start(argc, argv, "advice_known DIR LOG", "advice.dat");
 */
#ifndef KNOWN_START_H
#define KNOWN_START_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

static FILE *logf;

/* the fd of DIR/FILE; exits 2 on a wrong usage, 1 when the log or the file cannot be opened */
static int known_start(int argc, char **argv, const char *usage, const char *file)
{
	char path[4096];
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: %s\n", usage);
		exit(2);
	}
	logf = fopen(argv[2], "w");
	snprintf(path, sizeof(path), "%s/%s", argv[1], file);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (!logf || fd < 0) {
		perror("open");
		exit(1);
	}
	return fd;
}

#endif
