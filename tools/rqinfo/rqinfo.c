/* rqinfo - print librq's RQ_* variables (default and current value) and its
 * compiled-in limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rq.h"
#include "tools/internal.h"

int main(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        printf("usage: rqinfo\nPrints every RQ_* variable, its default and current value,\n"
               "and librq's compiled-in limits.  Exit status 1 if a variable is invalid.\n");
        return 0;
    }
    int bad = 0;
    printf("librq %d.%d.%d\n\n", RQ_VERSION_MAJOR, RQ_VERSION_MINOR, RQ_VERSION_PATCH);
    printf("%-22s %-12s %-12s %s\n", "variable", "default", "current", "meaning");
    for (int i = 0; i < RQI_CFG_COUNT; i++) {
        const struct rqi_cfg_var *v = &rqi_cfg_vars[i];
        const char *s = getenv(v->name);
        uint64_t cur = v->def;
        char curs[40], defs[24], err[160];
        if (rqi_config_parse_var(v, s, &cur, err, sizeof err) != 0) {
            snprintf(curs, sizeof curs, "INVALID(%.24s)", s);
            bad = 1;
        } else {
            rqi_config_format(v, cur, curs, sizeof curs);
        }
        rqi_config_format(v, v->def, defs, sizeof defs);
        printf("%-22s %-12s %-12s %s\n", v->name, defs, curs, v->help);
    }
    const char *node = getenv(RQI_ENV_NODE_ID);
    printf("%-22s %-12s %-12s %s\n", RQI_ENV_NODE_ID, "(host name)", node ? node : "-",
           "mpirun/srun: the node this rank counts as on (equal values share memory)");
    const char *mi = getenv(RQI_ENV_OVERFLOW_MEMINFO);
    printf("%-22s %-12s %-12s %s\n", RQI_ENV_OVERFLOW_MEMINFO, RQI_OVERFLOW_MEMINFO_DEFAULT,
           mi ? mi : "-",
           "overflow control: the file MemAvailable is read from (a job's own accounting "
           "in /proc/meminfo's format)");
    printf("\nset by rqrun for each rank: %s, %s, %s\n", RQI_ENV_RANK, RQI_ENV_SIZE,
           RQI_ENV_JOB_FD);
    struct rqi_config cfg;
    char err[256];
    uint64_t ring = rqi_cfg_vars[RQI_CFG_RING_BYTES].def, med = rqi_cfg_vars[RQI_CFG_MEDIUM_MAX].def;
    if (rqi_config_load(&cfg, err, sizeof err) == 0) {
        ring = cfg.v[RQI_CFG_RING_BYTES];
        med = cfg.v[RQI_CFG_MEDIUM_MAX];
    }
    printf("\ncompiled-in limits\n");
    printf("  RQ_MAX_ARGS            %u\n", RQ_MAX_ARGS);
    printf("  RQ_MAX_HANDLERS        %u\n", RQ_MAX_HANDLERS);
    printf("  RQ_MAX_QUEUES          %u (queue 0 is the AM queue)\n", RQ_MAX_QUEUES);
    printf("  max ranks per job      %u\n", RQI_MAX_RANKS);
    printf("  max inbound lanes      %u (RQ_LANES=0: one per rank on the node up to this)\n", RQI_MAX_LANES);
    printf("  ring slot              %u bytes\n", RQI_SLOT_BYTES);
    printf("  in-place payload max   %llu bytes with the current ring (rq_medium_max)\n",
           (unsigned long long)rqi_shm_medium_max(ring, med));
    printf("\nthis build (rq_build_info)\n");
    /* The library's own answer, indented like the lines above. */
    for (const char *s = rq_build_info(); *s != '\0';) {
        size_t n = strcspn(s, "\n");
        printf("  %.*s\n", (int)n, s);
        s += n + (s[n] == '\n');
    }
    return bad;
}
