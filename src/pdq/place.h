/* place.h - where a PDQ's threads run (RQ_PDQ_BIND).
 *
 * The kernel's wake-up placement often puts a woken PDQ thread beside the
 * one that woke it while another CPU stays idle, and its load balancer
 * takes milliseconds to notice: on 2 vCPUs two threads draining a backlog
 * of 0 ns handlers shared one CPU in most repetitions (0.69x of one
 * thread) and ran 2.7x one thread when each had its own.  So by default
 * (spread) each thread is pinned to one CPU of the opening thread's
 * allowed set, the node's ranks and the rank's open PDQs taking places in
 * turn, as OpenMP's "spread" places a team. */
#ifndef RQI_PDQ_PLACE_H
#define RQI_PDQ_PLACE_H

#include <sched.h>

/* The CPU of each of n threads (cpu[i]; -1: leave thread i where the
 * opening thread may run), the first at place `first` of the calling
 * thread's allowed set and the others after it, round the set.  bind is
 * RQI_PDQ_BIND_SPREAD or _NONE; an allowed set of one CPU, or one that
 * cannot be read, places no thread (they inherit it). */
void rqi_pdq_place(int bind, unsigned first, unsigned n, int *cpu);

#endif
