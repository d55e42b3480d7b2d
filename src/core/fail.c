/* fail.c - declaring and noticing the job's failure (see fail.h). */
#include "core/fail.h"

#include <stdio.h>

/* Wait until no completer is inside the gate: after this no transfer's
 * counter moves. */
static void gate_close(struct rqi_fail *f)
{
    while (atomic_load_explicit(&f->completing, memory_order_seq_cst) != 0)
        rqi_cpu_relax();
}

void rqi_fail_set(struct rqi_fail *f, const char *why)
{
    if (!f->failed)
        fprintf(stderr, "librq: rank %d: %s\n", f->rank, why);
    f->failed = 1;
    /* Pairs with every rank's acquire load of the flag; seq_cst for the
     * gate. */
    atomic_store_explicit(f->job, 1u, memory_order_seq_cst);
    gate_close(f);
}

void rqi_fail_noticed(struct rqi_fail *f)
{
    f->failed = 1;
    atomic_thread_fence(memory_order_seq_cst); /* the flag's load before completing's */
    gate_close(f);
}
