/* SPDX-License-Identifier: MIT */
/* fds.c - the statistics' files keep no descriptor in the program's table
 * (stats/segment.c, tk_seg_publish). Run with libtxkit-preload.so and
 * TXKIT_STATS_DIR set; each mode first locks a mutex (the hooks count it,
 * which makes the segment):
 *   closeall  the daemon idiom: close every descriptor from 3 up, open a file
 *             (it gets 3), fork; the child writes to it and makes a segment
 *             of its own (cleaning dead ones); the parent's file must hold
 *             the child's bytes and its segment must still be there, locked
 *   stdout    run with stdout closed: write(1) must fail with EBADF
 *   stdin     run with stdin closed: read(0) must fail with EBADF
 * Exit 0 when all holds, 1 otherwise (with why on stderr). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void lock_once(void) {
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
}

static int closeall(const char *dir) {
    lock_once();
    char seg[512];
    snprintf(seg, sizeof seg, "%s/%ld.seg", dir, (long)getpid());
    if (access(seg, F_OK) != 0) {
        fprintf(stderr, "no segment %s after the first lock\n", seg);
        return 1;
    }
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    char path[512];
    snprintf(path, sizeof path, "%s/closeall.out", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t p = fork();
    if (p == 0) {
        ssize_t n = write(fd, "written by child\n", 17);
        lock_once(); /* the child's own segment: it cleans the dead ones first */
        _exit(n == 17 ? 0 : 1);
    }
    int st = 0;
    waitpid(p, &st, 0);
    char buf[64] = "";
    int r = open(path, O_RDONLY);
    ssize_t n = r >= 0 ? read(r, buf, sizeof buf - 1) : -1;
    int bad = 0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || n != 17) {
        fprintf(stderr, "fd %d: the child's write was lost (child status %d, file %zd bytes)\n", fd,
                st, n);
        bad = 1;
    }
    int s = open(seg, O_RDONLY);
    if (s < 0) {
        fprintf(stderr, "the segment %s is gone\n", seg);
        bad = 1;
    } else if (flock(s, LOCK_EX | LOCK_NB) == 0) {
        fprintf(stderr, "the segment %s is not locked: a cleaner would remove it\n", seg);
        bad = 1;
    }
    if (!bad)
        printf("closeall: the child's write kept, the segment still locked\n");
    return bad;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    const char *dir = getenv("TXKIT_STATS_DIR");
    if (strcmp(mode, "closeall") == 0 && dir)
        return closeall(dir);
    if (strcmp(mode, "stdout") == 0) {
        lock_once();
        errno = 0;
        ssize_t n = write(1, "from the program\n", 17);
        if (n >= 0 || errno != EBADF) {
            fprintf(stderr, "write(1) with stdout closed: %zd (%s), expected EBADF\n", n,
                    strerror(errno));
            return 1;
        }
        return 0;
    }
    if (strcmp(mode, "stdin") == 0) {
        lock_once();
        char c;
        errno = 0;
        ssize_t n = read(0, &c, 1);
        if (n >= 0 || errno != EBADF) {
            fprintf(stderr, "read(0) with stdin closed: %zd (%s), expected EBADF\n", n,
                    strerror(errno));
            return 1;
        }
        return 0;
    }
    fprintf(stderr, "usage: fds closeall|stdout|stdin (TXKIT_STATS_DIR set for closeall)\n");
    return 2;
}
