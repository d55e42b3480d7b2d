/* jobid.c - a fresh job id (see jobid.h). */
#define _GNU_SOURCE
#include "core/jobid.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

uint64_t rqi_job_id_new(void)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, GRND_NONBLOCK) != sizeof id) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        id = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40);
    }
    return id | 1; /* never 0 */
}
