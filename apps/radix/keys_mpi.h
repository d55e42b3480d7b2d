/* keys_mpi.h - the check of a distributed sort for the MPI versions: every
 * rank's rx_summary added with MPI_Allreduce.  Collective; 1 when the
 * output is sorted, in rank order and a permutation of the input (fp_in:
 * the input's fingerprint summed over the ranks). */
#ifndef RQAPP_KEYS_MPI_H
#define RQAPP_KEYS_MPI_H

#include <stdint.h>

int rx_check_mpi(const uint32_t *k, uint64_t n, int me, int np, const uint64_t fp_in[3]);

#endif
