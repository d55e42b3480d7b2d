/* placement.c - the cache-line bounce (see placement.h); no librq. */
#define _POSIX_C_SOURCE 200809L
#include "placement.h"

#include <stdio.h>
#include <unistd.h>

#include "app.h"

int rqa_placement_wanted(int ranks_here)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return ranks_here >= 2 && cpus > 0 && ranks_here <= cpus;
}

double rqa_line_bounce(volatile uint64_t *line, int role)
{
    enum { BATCHES = 7, TRIPS = 1000 };
    double ns[BATCHES];
    uint64_t v = 0;
    for (int b = 0; b < BATCHES; b++) {
        double t = rqa_now();
        for (int i = 0; i < TRIPS; i++) {
            unsigned spins = 0; /* a rank descheduled meanwhile gets the CPU back */
            if (role == 0) {
                __atomic_store_n(line, ++v, __ATOMIC_RELEASE);
                while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != v + 1)
                    rqa_spin_turn(&spins);
                v++;
            } else {
                while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != v + 1)
                    rqa_spin_turn(&spins);
                __atomic_store_n(line, v += 2, __ATOMIC_RELEASE);
            }
        }
        ns[b] = (rqa_now() - t) * 1e9 / (2.0 * TRIPS);
    }
    return role == 0 ? rqa_median(ns, BATCHES) : 0;
}

void rqa_placement_print(double ns)
{
    if (ns > 0)
        printf("Line latency (ns)    = %.1f (ranks 0-1, one way: this run's placement)\n", ns);
}
