// perf/shm/first_use.c -- the first use of a cell of a shared ring, without
// weft: two processes (pinned to CPUs 0 and 1) ping-pong 256-byte messages
// through 256 cells of 8320 bytes each way in a /dev/shm mapping that both
// map with MAP_POPULATE and the creator clears. Pass 0 uses cells 0-127
// (twice), pass 1 the fresh cells 128-255, pass 2 cells 0-127 again; each
// prints the mean one-way time. On the development VM passes 0 and 1 cost
// 3-15 us per message and pass 2 about 0.6 (docs/performance.md, "The first
// use of a FIFO cell"): a cost of the machine that weft's 256-cell FIFO pays
// on its first lap, not of weft.
//
//   gcc -O2 perf/shm/first_use.c -o /tmp/first_use -lrt && /tmp/first_use [MODE] [r]
//
// MODE, done by both processes before the first pass: 0 nothing; 1 read a
// byte of every page; 2 an atomic add of 0 on a byte of every page; 3 the
// writer clears its own ring whole; 4 an atomic add of 0 on every cache line
// of its own ring. "r": the creator fills the mapping with pseudo-random
// bytes instead of zeros (in case zero pages are merged).
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CELLS 256
#define CELL 8320
#define MSG 256

struct cell {
    _Atomic unsigned long seq;
    char pad[56];
    char data[CELL - 64];
};

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    const int mode = argc > 1 ? atoi(argv[1]) : 0;
    const size_t len = 2 * (size_t)CELLS * CELL;
    char name[64];
    snprintf(name, sizeof(name), "/weft-first-use-%d", (int)getpid());
    const int fd = shm_open(name, O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)len) != 0) {
        perror("shm_open");
        return 1;
    }
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(m, 0, len);
    if (argc > 2 && argv[2][0] == 'r') {
        unsigned x = 12345;
        for (size_t o = 0; o < len; o += 4) {
            x = x * 1103515245u + 12345u;
            memcpy(m + o, &x, sizeof(x));
        }
        for (size_t o = 0; o < len; o += CELL) {
            memset(m + o, 0, sizeof(unsigned long));  // the sequence numbers start at 0
        }
    }
    const pid_t child = fork();
    const int me = child == 0;
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(me, &cpus);
    (void)sched_setaffinity(0, sizeof(cpus), &cpus);
    if (me) {  // its own mapping, as a process that opens the segment by name
        munmap(m, len);
        m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
        if (m == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
    }
    char *mine = m + (size_t)me * CELLS * CELL;
    switch (mode) {
        case 1: {
            volatile char sink = 0;
            for (size_t o = 0; o < len; o += 4096) {
                sink += m[o];
            }
            break;
        }
        case 2:
            for (size_t o = 0; o < len; o += 4096) {
                __atomic_fetch_add(&m[o + 100], 0, __ATOMIC_RELAXED);
            }
            break;
        case 3:
            memset(mine, 0, (size_t)CELLS * CELL);
            for (size_t o = 0; o < (size_t)CELLS * CELL; o += CELL) {
                memset(mine + o, 0, sizeof(unsigned long));
            }
            break;
        case 4:
            for (size_t o = 64; o < (size_t)CELLS * CELL; o += 64) {
                __atomic_fetch_add(&mine[o], 0, __ATOMIC_RELAXED);
            }
            break;
        default:
            break;
    }
    usleep(100000);
    struct cell *q[2] = {(struct cell *)m, (struct cell *)(m + (size_t)CELLS * CELL)};
    char buf[MSG];
    memset(buf, 7, sizeof(buf));
    const int per_pass = 256;
    for (int pass = 0; pass < 3; ++pass) {
        const double t0 = now_us();
        for (int j = 0; j < per_pass; ++j) {
            const int i = pass == 1 ? 128 + j % 128 : j % 128;
            const unsigned long want = (unsigned long)pass * per_pass + (unsigned long)j + 1;
            if (me == 0) {
                memcpy(q[0][i].data, buf, MSG);
                atomic_store_explicit(&q[0][i].seq, want, memory_order_release);
                while (atomic_load_explicit(&q[1][i].seq, memory_order_acquire) != want) {
                }
                memcpy(buf, q[1][i].data, MSG);
            } else {
                while (atomic_load_explicit(&q[0][i].seq, memory_order_acquire) != want) {
                }
                memcpy(buf, q[0][i].data, MSG);
                memcpy(q[1][i].data, buf, MSG);
                atomic_store_explicit(&q[1][i].seq, want, memory_order_release);
            }
        }
        if (me == 0) {
            printf("pass %d (%s): %.2f us one-way\n", pass,
                   pass == 0   ? "cells 0-127, twice"
                   : pass == 1 ? "fresh cells 128-255"
                               : "cells 0-127 again",
                   (now_us() - t0) / per_pass / 2);
        }
    }
    if (child > 0) {
        waitpid(child, NULL, 0);
        shm_unlink(name);
    }
    return 0;
}
