/* place.c - where a PDQ's threads run (see place.h). */
#define _GNU_SOURCE
#include "place.h"

#include "core/config.h"

void rqi_pdq_place(int bind, unsigned first, unsigned n, int *cpu)
{
    for (unsigned i = 0; i < n; i++)
        cpu[i] = -1;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (bind != RQI_PDQ_BIND_SPREAD || sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    const unsigned count = (unsigned)CPU_COUNT(&set);
    if (count < 2)
        return;
    int allowed[CPU_SETSIZE];
    unsigned k = 0;
    for (int c = 0; c < CPU_SETSIZE && k < count; c++)
        if (CPU_ISSET(c, &set))
            allowed[k++] = c;
    for (unsigned i = 0; i < n; i++)
        cpu[i] = allowed[(first + i) % k];
}
