/* paper.c - the seeds' own figure for each rqbench row that has an
 * analog, so that every family's output puts the paper's number beside
 * librq's (docs/benchmarks-log.md has the side-by-side tables and what
 * differs).  Rows whose note already cites the paper keep their note. */
#include <stdio.h>
#include <string.h>

#include "bench.h"

struct ref {
    const char *family;
    const char *name;   /* exact row name, or a prefix ending in '*' */
    const char *paper;
};

/* L&C: Liu & Culler, CM-5 at 32 MHz (cycles = µs x 32); CMAML first, the
 * leaner CMAM in parentheses.  SC: Split-C Table 1, µs (CM-5 Proc,
 * Paragon NP, T3D).  FUGU: Mackenzie, Table 4-4/4-5 cycles. */
static const struct ref refs[] = {
    {"am", "one-to-one (gap g)", "L&C T1 CMAML_request 2.00 us = 64.0 cyc (CMAM_4 1.57)"},
    {"am", "one-to-two (send overhead)", "L&C T1 one-to-two 1.96 us = 62.7 cyc (CMAM 1.49)"},
    {"am", "two-to-one (receive overhead)", "L&C T1 two-to-one 2.01 us = 64.3 cyc (CMAM 1.60)"},
    {"am", "one-to-two, reply*", "L&C T1 CMAML_reply one-to-two 1.28 us = 41.0 cyc"},
    {"am", "two-to-one, reply", "L&C T1 CMAML_reply two-to-one 2.08 us = 66.6 cyc"},
    {"am", "one-to-two, rpc", "L&C T1 CMAML_rpc one-to-two 1.25 us = 40.0 cyc"},
    {"am", "two-to-one, rpc", "L&C T1 CMAML_rpc two-to-one 1.93 us = 61.8 cyc"},
    {"am", "round-trip (2L + 4o)", "L&C T1 round trip 12.59 us = 402.9 cyc (CMAM 11.40)"},
    {"am", "send into idle ring (o_s)", "L&C o_s: T1 one-to-two 1.96 us"},
    {"am", "receive from full ring (o_r)", "L&C o_r: T1 two-to-one 2.01 us"},
    {"am", "latency L (derived)", "L&C Fig 2: network RT 6.8 us node 0-63"},
    {"loaded", "ring (per message)", "L&C T4 ring 4.59 us (expected 3.97; CMAM_4 3.18)"},
    {"xfer", "one-to-one blocking, double-word: bandwidth", "L&C T5 8.12 MB/s (CMAM 10.11)"},
    {"xfer", "one-to-one blocking, double-word: start-up", "L&C T5 30.1 us (CMAM 21.1)"},
    {"xfer", "one-to-one blocking, word: bandwidth", "L&C T5 8.04 MB/s (CMAM 8.42)"},
    {"xfer", "one-to-one blocking, word: start-up", "L&C T5 38.5 us (CMAM 30.0)"},
    {"xfer", "one-to-one blocking, byte: bandwidth", "L&C T5 3.81 MB/s (CMAM 5.76)"},
    {"xfer", "one-to-one blocking, byte: start-up", "L&C T5 40.6 us (CMAM 28.7)"},
    {"xfer", "one-to-one non-blocking, double-word: bandwidth", "L&C T5 8.09 MB/s (CMAM 10.09)"},
    {"xfer", "one-to-one non-blocking, double-word: start-up", "L&C T5 10.6 us (CMAM 8.0)"},
    {"xfer", "one-to-one non-blocking, word: bandwidth", "L&C T5 8.12 MB/s (CMAM 8.43)"},
    {"xfer", "one-to-one non-blocking, word: start-up", "L&C T5 21.0 us (CMAM 12.7)"},
    {"xfer", "one-to-one non-blocking, byte: bandwidth", "L&C T5 3.81 MB/s (CMAM 5.76)"},
    {"xfer", "one-to-one non-blocking, byte: start-up", "L&C T5 25.0 us (CMAM 13.1)"},
    {"xfer", "two-to-one, one segment*bandwidth", "L&C T5 8.12 MB/s (CMAM 10.12)"},
    {"xfer", "two-to-one, two segments*bandwidth", "L&C T5 7.11 MB/s (CMAM 7.39)"},
    {"xfer", "swap, double-word: bandwidth", "L&C T5 5.66 MB/s (CMAM 5.06)"},
    {"xfer", "swap, double-word: start-up", "L&C T5 59.8 us (CMAM 25.0)"},
    {"splitc", "RT latency: AM", "SC T1: CM-5 14.0 us, Paragon NP 20.1, T3D 9.6"},
    {"splitc", "RT latency: read", "SC T1: CM-5 16.5 us, Paragon NP 15.9, T3D 0.85"},
    {"splitc", "RT latency: write", "SC T1: CM-5 14.6 us, Paragon NP 15.3, T3D 0.98"},
    {"splitc", "overhead: get", "SC T1: CM-5 6.0 us, Paragon NP 2.4, T3D 0.40"},
    {"splitc", "overhead: put", "SC T1: CM-5 6.1 us, Paragon NP 2.3, T3D 0.31"},
    {"splitc", "overhead: store", "SC T1: CM-5 3.4 us, Paragon NP 2.4, T3D 2.9"},
    {"splitc", "gap: get", "SC T1: CM-5 6.2 us, Paragon NP 8.4, T3D 0.40"},
    {"splitc", "gap: put", "SC T1: CM-5 6.0 us, Paragon NP 7.5, T3D 0.31"},
    {"splitc", "gap: store", "SC T1: CM-5 3.3 us, Paragon NP 7.3, T3D 2.9"},
    {"splitc", "gap (to 2): get", "SC T1: CM-5 6.1 us, Paragon NP 8.4, T3D 0.40"},
    {"splitc", "gap (to 2): put", "SC T1: CM-5 5.9 us, Paragon NP 7.6, T3D 0.31"},
    {"splitc", "gap (to 2): store", "SC T1: CM-5 3.4 us, Paragon NP 7.5, T3D 2.9"},
    {"splitc", "gap (exchange): get", "SC T1: CM-5 9.3 us, Paragon NP 13.5, T3D 0.56"},
    {"splitc", "gap (exchange): put", "SC T1: CM-5 9.3 us, Paragon NP 12.7, T3D 0.37"},
    {"splitc", "gap (exchange): store", "SC T1: CM-5 7.3 us, Paragon NP 14.1, T3D 4.7"},
    {"splitc", "poll granularity: time per iteration",
     "SC Fig 7/8: rare polls up to P x slower; NP always fast; polls cost only when very frequent"},
    {"poll", "successful poll (intersection)", "L&C Fig 6: 3.3 us per message (CMAM 2.85)"},
    {"vni", "send (null message)", "FUGU T4-4: send 7 cyc"},
    {"vni", "polled receive", "FUGU T4-4: polling receive 9 cyc"},
    {"vni", "buffered receive (insert + extract)", "FUGU T4-5: insert 180 + extract 52 cyc"},
    {"vni", "round trip, interrupt", "FUGU T4-4: interrupt receive 115 cyc (soft atomicity)"},
    {"vni", "interrupt receive cost", "FUGU T4-4: 115 cyc; L&C Fig 7: 19 us (CMAML)"},
};

static int matches(const char *pattern, const char *name)
{
    const char *star = strchr(pattern, '*');
    if (star == NULL)
        return strcmp(pattern, name) == 0;
    size_t pre = (size_t)(star - pattern);
    if (strncmp(pattern, name, pre) != 0)
        return 0;
    const char *suffix = star + 1;
    size_t ls = strlen(suffix), ln = strlen(name);
    return ls <= ln - pre && strcmp(name + ln - ls, suffix) == 0;
}

const char *rqb_paper_ref(const char *family, const char *name)
{
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
        if (strcmp(refs[i].family, family) == 0 && matches(refs[i].name, name))
            return refs[i].paper;
    return NULL;
}

const char *rqb_paper_note(const char *family, const char *name, const char *note, char *buf,
                           size_t cap)
{
    const char *ref = rqb_paper_ref(family, name);
    if (ref == NULL ||
        (note != NULL && (strstr(note, "L&C") || strstr(note, "CMAM") || strstr(note, "FUGU"))))
        return note;
    snprintf(buf, cap, "%s%s%s", ref, note != NULL && *note ? "; " : "", note != NULL ? note : "");
    return buf;
}
