/* overflow.c - FUGU thesis Table 7-5 and Figure 7-24: the most buffer
 * each rank needed under overflow control, against the control threshold.
 *
 * The thesis's test application: every rank sends to a neighbour, and
 * every message takes the buffered path.  Here every rank sends `count`
 * 1 KiB active messages to rank + 1 and only then waits for its own; a
 * rank whose lane to its neighbour is full drains its own lanes into its
 * virtual buffer (it runs no handler while it sends), so without control
 * every buffer grows toward the whole flood.  With the node counted low
 * on memory, a buffer past the threshold raises the job's STOP; the
 * stopped senders run handlers and the buffers drain.
 *
 * The threshold is read at rq_init, so one job measures one threshold:
 * inside a job the family measures the job's own (RQ_OVERFLOW_BYTES, and
 * "off" unless RQ_OVERFLOW_FREE_BYTES makes the node low on memory);
 * rqbench started alone with `overflow` runs one job per threshold
 * (rqb_drive_overflow) and prints them together. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "driver.h"

#define PAGE 4096u
#define PAYLOAD 1024u

enum { H_FLOOD = 40 };
static volatile uint64_t flood_got;

static void on_flood(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)m;
    (void)arg;
    flood_got++;
}

/* A byte count with an optional k/m/g suffix (as librq reads it). */
static uint64_t env_bytes(const char *name, uint64_t def)
{
    const char *s = getenv(name);
    if (s == NULL)
        return def;
    char *end;
    uint64_t v = strtoull(s, &end, 0);
    switch (*end) {
    case 'k': case 'K': return v << 10;
    case 'm': case 'M': return v << 20;
    case 'g': case 'G': return v << 30;
    default: return v;
    }
}

int rqb_fam_overflow(struct rqb *b)
{
    rq_ctx_t *ctx = b->ctx;
    const uint64_t count = b->o.smoke ? 2000 : b->o.quick ? 10000 : 40000;
    /* "off": the node is never low on memory (the default low-water mark
     * is a tenth of physical memory; the driver says which it set). */
    const uint64_t thr = env_bytes("RQ_OVERFLOW_BYTES", 64u << 20);
    const int on = env_bytes("RQ_OVERFLOW_FREE_BYTES", 0) > (1ull << 50);
    const double param = on ? (double)thr / PAGE : 0;
    if (rq_handler_register(ctx, H_FLOOD, on_flood, NULL, 0) != 0)
        return 1;
    flood_got = 0;
    rq_barrier(ctx);
    char buf[PAYLOAD];
    memset(buf, b->me, sizeof buf);
    const int right = (b->me + 1) % b->np;
    uint64_t t0 = rqb_now_ns();
    int rc = 0;
    for (uint64_t i = 0; i < count && rc == 0; i++)
        rc = rq_request(ctx, right, H_FLOOD, &i, 1, buf, sizeof buf, 0);
    if (rc == 0)
        rc = rq_wait_until(ctx, &flood_got, count);
    double secs = rqb_elapsed_ns(t0) * 1e-9;
    rq_barrier(ctx);
    rq_stats_t st;
    rq_stats(ctx, &st);
    /* Every rank's peak, and the job's STOPs and run time. */
    uint64_t *in = calloc((size_t)b->np + 2, sizeof *in), *out = calloc((size_t)b->np + 2, sizeof *out);
    if (in == NULL || out == NULL) {
        free(in);
        free(out);
        return 1;
    }
    in[b->me] = st.buffer_bytes_max;
    in[b->np] = st.overflow_stops;
    rq_allreduce(ctx, in, out, (size_t)b->np + 2, RQ_UINT64, RQ_SUM);
    double slowest = 0;
    rq_allreduce(ctx, &secs, &slowest, 1, RQ_DOUBLE, RQ_MAX);
    char note[160];
    double sum = 0;
    for (int r = 0; r < b->np; r++) {
        char name[64];
        snprintf(name, sizeof name, "max buffer, rank %d", r);
        snprintf(note, sizeof note, "%s; %llu x 1 KiB to rank + 1", on ? "threshold in pages (param)"
                                                                        : "overflow control off",
                 (unsigned long long)count);
        rqb_row_derived(b, name, param, "pages", (double)out[r] / PAGE, note);
        sum += (double)out[r] / PAGE;
    }
    snprintf(note, sizeof note, "FUGU Figure 7-24 (8 processors); flood %llu KiB per rank",
             (unsigned long long)count);
    rqb_row_derived(b, "mean of the ranks' max buffer", param, "pages", sum / b->np, note);
    rqb_row_derived(b, "STOPs raised (all ranks)", param, "count", (double)out[b->np],
                    on ? "the node counted low on memory" : "control off");
    rqb_row_derived(b, "run time", param, "ms", slowest * 1e3, "slowest rank, flood and drain");
    free(in);
    free(out);
    return rc != 0;
}

/* ---- the sweep: one job per threshold ----------------------------------- */

int rqb_drive_overflow(const struct rqb_opts *o, int ranks)
{
    static const unsigned full[] = {8, 12, 16, 24, 32, 48, 64, 128, 0};
    static const unsigned smoke[] = {16, 0};
    const unsigned *thr = o->smoke ? smoke : full;
    const int n = o->smoke ? 2 : (int)(sizeof full / sizeof full[0]);
    char self[PATH_MAX], dir[PATH_MAX], rr[PATH_MAX + 8], tmp[] = "/tmp/rqbench-ovf.XXXXXX";
    rqb_self_dir(dir, sizeof dir, self, sizeof self);
    char *rqrun = (char *)rqb_rqrun_path(dir, rr, sizeof rr);
    if (mkdtemp(tmp) == NULL) {
        perror("rqbench: mkdtemp");
        return 1;
    }
    /* Small lanes, as the thesis's small hardware queue: a sender finds
     * its lane full soon and buffers (the user's RQ_RING_BYTES wins). */
    setenv("RQ_RING_BYTES", "16384", 0);
    setenv("RQ_OVERFLOW_HIGH_BYTES", "18446744073709551615", 1);
    char nr[16];
    snprintf(nr, sizeof nr, "%d", ranks);
    struct rqb_report rep = {0};
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char bytes[32], csv[PATH_MAX + 32];
        snprintf(bytes, sizeof bytes, "%u", (thr[i] ? thr[i] : 1) * PAGE);
        setenv("RQ_OVERFLOW_BYTES", bytes, 1);
        /* On: the node always counts as low on memory; off: never. */
        setenv("RQ_OVERFLOW_FREE_BYTES", thr[i] ? "18446744073709551615" : "1", 1);
        snprintf(csv, sizeof csv, "%s/t%d.csv", tmp, i);
        char *av[] = {rqrun, "-n", nr, "--bind", "core", self, "overflow", "--emit", csv,
                      o->smoke ? "--smoke" : o->quick ? "--quick" : NULL, NULL};
        fprintf(stderr, "rqbench: overflow, threshold %s (%d ranks)\n",
                thr[i] ? bytes : "off", ranks);
        /* The first job's limits, then every job's overflow rows. */
        struct rqb_report one = {0};
        if (rqb_run_cmd(av) != 0 || rqb_report_read_csv(csv, &one) != 0) {
            fprintf(stderr, "rqbench: the overflow run at threshold %s failed\n", bytes);
            rc = 1;
        }
        for (int k = 0; k < one.n && rc == 0; k++) {
            const struct rqb_row *w = &one.rows[k];
            if (strcmp(w->family, "overflow") != 0 && i != 0)
                continue;
            struct rqb_row *c = rqb_report_add(&rep, w->family, w->impl, w->name, w->param, w->unit,
                                               &w->s, w->note);
            if (c == NULL)
                rc = 1;
            else
                c->cycles = w->cycles;
        }
        rqb_report_free(&one);
        unlink(csv);
    }
    rmdir(tmp);
    rep.ranks = ranks;
    rqb_report_placement(&rep);
    if (rc == 0)
        rc = rqb_write_outputs(&rep, o, NULL);
    rqb_report_free(&rep);
    return rc;
}
