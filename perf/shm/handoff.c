// perf/shm/handoff.c -- two processes on two cores hand 64 KiB back and
// forth through a shared mapping (the producer copies in, the consumer copies
// out), nothing else: no weft, no MPI. On the development VM most launches
// take about 9 us per handoff and some about 34 (docs/performance.md,
// "Single copy"): a state of the machine, per launch, that every two-copy
// shared-memory path (weft's stage and FIFO, UCX's mm) pays and a kernel copy
// of an unchanged buffer (cross-memory attach) does not.
//
//   gcc -O2 perf/shm/handoff.c -o /tmp/handoff && for i in $(seq 20); do /tmp/handoff; done
//
// Argument: bytes per handoff (default 65536).
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
int main(int argc, char **argv)
{
    size_t len = argc > 1 ? strtoul(argv[1], 0, 0) : 65536;
    int iters = 20000;
    char *s = mmap(NULL, len + 4096, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    volatile uint64_t *flag = (volatile uint64_t *)(s + len), *back = flag + 32;
    pid_t c = fork();
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(c == 0 ? 1 : 0, &cs);
    sched_setaffinity(0, sizeof cs, &cs);
    char *buf = aligned_alloc(4096, len);
    memset(buf, c == 0, len);
    double t0 = 0;
    for (uint64_t i = 1; i <= (uint64_t)iters; ++i) {
        if (i == 1000)
            t0 = now();
        if (c != 0) {  // producer
            while (*back != i - 1)
                ;
            memcpy(s, buf, len);
            __atomic_store_n(flag, i, __ATOMIC_RELEASE);
        } else {
            while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != i)
                ;
            memcpy(buf, s, len);
            *back = i;
        }
    }
    if (c != 0) {
        wait(NULL);
        printf("%zu bytes: %.2f us per handoff\n", len, (now() - t0) / (iters - 999));
    }
    return 0;
}
