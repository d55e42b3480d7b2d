/* asym.c - the rare side of the asymmetric fence (asym.h). */
#define _GNU_SOURCE
#include "core/asym.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

_Atomic uint32_t rqi_fence_word;

#if defined(__SANITIZE_THREAD__)
char rqi_tsan_causality; /* atomics.h: RQI_TSAN_SENT */
#endif

/* Register for membarrier command cmd: 0 done, 1 not (then both sides
 * fence).  Under ThreadSanitizer, which does not model membarrier, never. */
static int register_for(int cmd)
{
#if defined(__SANITIZE_THREAD__)
    (void)cmd;
    return 1;
#else
    return syscall(SYS_membarrier, cmd, 0, 0) != 0;
#endif
}

int rqi_asym_register(void) { return register_for(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED); }

int rqi_asym_register_global(void) { return register_for(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED); }

void rqi_asym_heavy_global(void)
{
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) != 0)
        rqi_full_fence(); /* cannot happen once registered; the caller's side at least */
}

void rqi_asym_heavy(int heavy)
{
    if (heavy)
        rqi_full_fence();
    else
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}
