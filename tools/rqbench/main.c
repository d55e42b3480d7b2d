/* rqbench - librq's measurement tool: the LogP microbenchmarks of the
 * seeds (Liu & Culler's CM-5 study, the Split-C table, the remote-queue
 * paper), with text, CSV, JSON and SVG output, and the same shapes run
 * over MPI and UCX by --compare.  See docs/rqbench.1.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "driver.h"

static const struct family {
    const char *name;
    int (*fn)(struct rqb *);
} families[] = {
    {"am", rqb_fam_am},       {"loaded", rqb_fam_loaded}, {"xfer", rqb_fam_xfer},
    {"poll", rqb_fam_poll},   {"splitc", rqb_fam_splitc}, {"rq", rqb_fam_rq},
    {"vni", rqb_fam_vni},     {"pdq", rqb_fam_pdq},       {"compare", rqb_fam_compare},
    {"large", rqb_fam_large}, {"intr", rqb_fam_intr},
    {"overflow", rqb_fam_overflow}, {"scale", rqb_fam_scale},
};
enum { NFAM = sizeof families / sizeof families[0] };
/* --pdq-open: the idle PDQ's queue, one no family uses. */
enum { IDLE_PDQ_QID = 63 };

static int fam_index(const char *name)
{
    for (int f = 0; f < NFAM; f++)
        if (strcmp(families[f].name, name) == 0)
            return f;
    abort(); /* a name of the table above */
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: rqbench [options] SUBCOMMAND...     (started alone, it runs itself\n"
"                                           under rqrun -n 2 --bind core)\n"
"       rqrun -n N --bind core rqbench [options] SUBCOMMAND...\n"
"       rqbench --compare [options] [SUBCOMMAND...]\n"
"subcommands (all = every one; see docs/rqbench.1.md for exact methods):\n"
"  am       one-to-one, one-to-two, two-to-one, round-trip, and o_s/o_r\n"
"           isolated against an idle ring; LogP o_s, o_r, g, L in ns and\n"
"           TSC cycles.  K = 1024 messages per repetition.\n"
"  loaded   ring (i -> i+1) and traverse (step s: rank XOR s), per message.\n"
"  xfer     rq_request_long arrays 2 B .. 64 MiB (clipped to the segment),\n"
"           byte/word/double-word aligned: one-to-one blocking and not,\n"
"           two-to-one into one or two buffers, swap; T = c + B*x fits.\n"
"  poll     unsuccessful rq_poll; successful poll by the intersection of\n"
"           time per message and time per poll over send intervals.\n"
"  splitc   Split-C Table 1: RT latency AM/read/write, overhead and gap of\n"
"           get/put/store, gap to 2 targets, gap in exchange.\n"
"  rq       enqueue/dequeue costs; key redistribution by handler vs an\n"
"           inlined dequeue loop.\n"
"  vni      null-message send, polled and buffered receive, interrupt\n"
"           round trip, atomicity section (FUGU Tables 4-4/4-5), the\n"
"           cost of toggling interrupts and sections (L&C Table 10).\n"
"  pdq      keyed fetch-and-add handlers of 0, 250, 1000 and 4000 ns on\n"
"           1, 2, 4, 8, 16 PDQ threads (up to the CPUs), uniform, Zipf(0.99)\n"
"           and one hot key: a backlog drained by the threads (speedup\n"
"           over one thread beside the keys' ideal), a spinlock in the\n"
"           handler and one polling thread beside it, and a stream from\n"
"           another rank (PDQ / rq_poll); throughput and CPU cores used.\n"
"  compare  latency, message rate, bandwidth, put+flush, large AM placed,\n"
"           overlap of a message / a put with computation: the shapes the\n"
"           MPI and UCX peers measure.\n"
"  large    ns per byte of a medium (rq_request: in place, then staged)\n"
"           and a long (rq_request_long) 8 B .. 64 MiB, sizes sqrt(2) apart\n"
"           and rq_medium_max() -1/0/+1; medium/long and the largest rise.\n"
"  intr     interrupt receive overhead against the message interval\n"
"           (Liu & Culler Figure 7) and the paper's model, T_i fitted.\n"
"  scale    fine-grain traffic all-to-all (requests and enqueues with a\n"
"           poll every 1/8/64 sends, put, store, get, AMO) and many-to-one,\n"
"           rate per rank beside raw 64-byte-slot rings with no librq code\n"
"           and the fraction buffered: started alone, one job per rank\n"
"           count 2, 3, 4, 8 .. -n (default the CPUs, at least 4).\n"
"  overflow the most buffer each rank needs under overflow control against\n"
"           its threshold (FUGU Table 7-5, Figure 7-24): started alone, one\n"
"           job per threshold (use -n 8 for the thesis's 8 processors);\n"
"           inside a job, the job's own RQ_OVERFLOW_BYTES.\n"
"Every run first measures the physical limits between ranks 0 and 1: the\n"
"cache-line one-way latency L, one line per direction, a raw ring, memcpy.\n"
"Method: one warm-up, then repetitions until the 90%% confidence interval of\n"
"the median is within 5%% of it (at least --min-reps, at most --max-reps,\n"
"or until --budget seconds); median [min .. max] reported; the cost of a\n"
"clock read is measured and subtracted from every interval.\n"
"options:\n"
"  --quick          fewer sizes and intervals, 0.3 s budget (demo: < 1 min)\n"
"  --smoke          minimal runs to check the output format (tests)\n"
"  --min-reps N     default 5 (quick 3, smoke 2)     --max-reps N  default 200\n"
"  --budget S       seconds per measurement, default 2\n"
"  --max-size B     largest xfer array / large payload, default 64 MiB\n"
"  --pdq-threads N  pdq: PDQ threads 1, 2, 4 .. up to N (default the CPUs, at\n"
"                   most 16; 1-64); past the CPUs they share them: what idle\n"
"                   threads cost the ones with work\n"
"  --csv FILE  --json FILE  --plot DIR      write results (DIR gets SVGs)\n"
"  --compare        also run rqbench-mpi (via mpirun) and rqbench-ucx when\n"
"                   installed, and print each figure beside its peer\n"
"  -n N             ranks when rqbench launches itself (default 2)\n"
"  --pdq-open       keep an idle PDQ (queue 63, one dedicated thread) open on\n"
"                   every rank for the run: what a PDQ's thread-safe mode\n"
"                   costs the application's calls (the families that open\n"
"                   PDQs of their own are left out)\n"
"  --emit FILE      write CSV only, no table (used by --compare)\n");
}

struct cli {
    struct rqb_opts o;
    int             fam[NFAM], nfam, compare, ranks, ranks_set, pdq_open;
    const char     *emit;
};

static int parse(int argc, char **argv, struct cli *c)
{
    memset(c, 0, sizeof *c);
    c->o = (struct rqb_opts){.min_reps = 5, .max_reps = 200, .budget_s = 2.0, .rel = 0.05,
                             .max_size = 64u << 20};
    c->ranks = 2;
    int min_set = 0, budget_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--quick") == 0) {
            c->o.quick = 1;
        } else if (strcmp(a, "--smoke") == 0) {
            c->o.smoke = 1;
        } else if (strcmp(a, "--compare") == 0) {
            c->compare = 1;
        } else if (strcmp(a, "--pdq-open") == 0) {
            c->pdq_open = 1;
        } else if (v == NULL) {
            if (a[0] != '-')
                goto subcommand;
            fprintf(stderr, "rqbench: %s needs a value\n", a);
            return -1;
        } else if (strcmp(a, "--pdq-threads") == 0) {
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 64) {
                fprintf(stderr, "rqbench: bad --pdq-threads %s (1-64)\n", v);
                return -1;
            }
            c->o.pdq_threads = (int)n;
            i++;
        } else if (strcmp(a, "--min-reps") == 0 || strcmp(a, "--max-reps") == 0 ||
                   strcmp(a, "-n") == 0) {
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > (a[1] == 'n' ? 4096 : 256)) {
                fprintf(stderr, "rqbench: bad %s %s\n", a, v);
                return -1;
            }
            if (a[1] == 'n')
                c->ranks = (int)n, c->ranks_set = 1;
            else if (a[2] == 'm' && a[3] == 'i')
                c->o.min_reps = (int)n, min_set = 1;
            else
                c->o.max_reps = (int)n;
            i++;
        } else if (strcmp(a, "--budget") == 0) {
            c->o.budget_s = strtod(v, &end);
            if (*end || !(c->o.budget_s > 0)) {
                fprintf(stderr, "rqbench: bad --budget %s\n", v);
                return -1;
            }
            budget_set = 1;
            i++;
        } else if (strcmp(a, "--max-size") == 0) {
            unsigned long long n = strtoull(v, &end, 10);
            if (*end || n < 2 || n > (1ull << 40)) {
                fprintf(stderr, "rqbench: bad --max-size %s\n", v);
                return -1;
            }
            c->o.max_size = (size_t)n;
            i++;
        } else if (strcmp(a, "--csv") == 0 || strcmp(a, "--json") == 0 ||
                   strcmp(a, "--plot") == 0 || strcmp(a, "--emit") == 0) {
            if (strchr(v, '\'') != NULL) {
                fprintf(stderr, "rqbench: %s: quotes are not allowed in paths\n", a);
                return -1;
            }
            if (a[2] == 'c')
                c->o.csv = v;
            else if (a[2] == 'j')
                c->o.json = v;
            else if (a[2] == 'p')
                c->o.plot_dir = v;
            else
                c->emit = v;
            i++;
        } else {
        subcommand:
            if (a[0] == '-') {
                fprintf(stderr, "rqbench: unknown option %s\n", a);
                return -1;
            }
            int found = 0;
            for (int f = 0; f < NFAM; f++) {
                if (strcmp(a, "all") == 0 || strcmp(a, families[f].name) == 0) {
                    c->fam[f] = 1;
                    found = 1;
                }
            }
            if (!found) {
                fprintf(stderr, "rqbench: unknown subcommand %s\n", a);
                return -1;
            }
        }
    }
    for (int f = 0; f < NFAM; f++)
        c->nfam += c->fam[f];
    if (c->o.smoke) {
        if (!min_set)
            c->o.min_reps = 2;
        c->o.max_reps = c->o.max_reps < 3 ? c->o.max_reps : 3;
        if (!budget_set)
            c->o.budget_s = 0.05;
    } else if (c->o.quick) {
        if (!min_set)
            c->o.min_reps = 3;
        if (!budget_set)
            c->o.budget_s = 0.3;
    }
    if (c->o.min_reps > c->o.max_reps)
        c->o.min_reps = c->o.max_reps;
    return 0;
}

static int pinned(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1;
}

/* The measurement run, inside a job of 2 or more ranks. */
static int run_in_job(struct cli *c, rq_ctx_t *ctx)
{
    struct rqb b = {.ctx = ctx, .me = rq_rank(ctx), .np = rq_size(ctx), .o = c->o};
    b.progress = b.me == 0 && c->emit == NULL && isatty(2);
    rqb_timer_overhead_ns();
    if (b.me == 0) {
        b.rep.tsc_ghz = rqb_tsc_ghz();
        b.rep.timer_ns = rqb_timer_overhead_ns();
        b.rep.ranks = b.np;
        if (!pinned())
            fprintf(stderr, "rqbench: warning: ranks are not pinned (run with rqrun --bind core)\n");
    }
    uint64_t cpu_in[2] = {0, 0}, cpu_out[2];
    if (b.me < 2)
        cpu_in[b.me] = (uint64_t)sched_getcpu();
    rq_allreduce(ctx, cpu_in, cpu_out, 2, RQ_UINT64, RQ_SUM);
    b.rep.cpu0 = (int)cpu_out[0];
    b.rep.cpu1 = (int)cpu_out[1];
    rqb_limits(&b, !c->o.smoke);
    rq_pdq_t *idle = NULL;
    if (c->pdq_open) {
        rq_pdq_attr_t at = {.threads = 1, .mode = RQ_PDQ_DEDICATED, .window = 0};
        int prc = rq_pdq_open(ctx, IDLE_PDQ_QID, &at, &idle);
        if (prc != 0) {
            fprintf(stderr, "rqbench: --pdq-open: rq_pdq_open: %s\n", rq_strerror(prc));
            return 1;
        }
        if (b.me == 0)
            printf("(an idle PDQ is open on every rank: the context is in thread-safe mode)\n");
        rq_barrier(ctx);
    }
    int rc = 0;
    for (int f = 0; f < NFAM && rc == 0; f++) {
        if (!c->fam[f])
            continue;
        b.family = families[f].name;
        rc = families[f].fn(&b);
        rq_barrier(ctx);
    }
    if (idle != NULL)
        rq_pdq_close(idle);
    if (b.me == 0 && rc == 0)
        rc = rqb_write_outputs(&b.rep, &c->o, c->emit);
    rqb_report_free(&b.rep);
    return rc;
}

int main(int argc, char **argv)
{
    struct cli c;
    if (parse(argc, argv, &c) != 0) {
        usage(stderr);
        return 2;
    }
    if (c.nfam == 0 && !c.compare) {
        fprintf(stderr, "rqbench: no subcommand\n");
        usage(stderr);
        return 2;
    }
    /* Started alone: launch ourselves under rqrun, or drive --compare.
     * Under mpirun/srun (PMIx) we already are a rank. */
    if (getenv("RQ_RANK") == NULL && getenv("PMIX_RANK") == NULL) {
        if (c.compare)
            return rqb_drive_compare(argc, argv, &c.o);
        /* overflow: one job per threshold; the other families in one job
         * as usual (told to leave overflow out). */
        if (c.fam[fam_index("overflow")]) {
            int rc = rqb_drive_overflow(&c.o, c.ranks);
            if (rc != 0 || c.nfam == 1)
                return rc;
            setenv("RQB_SKIP_OVERFLOW", "1", 1);
            c.nfam--;
        }
        /* scale: one job per rank count, 2 .. -n (default: the CPUs, at
         * least 4). */
        if (c.fam[fam_index("scale")]) {
            int rc = rqb_drive_scale(&c.o, c.ranks_set ? c.ranks : 0);
            if (rc != 0 || c.nfam == 1)
                return rc;
            setenv("RQB_SKIP_SCALE", "1", 1);
        }
        return rqb_relaunch(argc, argv, c.ranks);
    }
    if (getenv("RQB_SKIP_OVERFLOW") != NULL)
        c.fam[fam_index("overflow")] = 0;
    if (getenv("RQB_SKIP_SCALE") != NULL)
        c.fam[fam_index("scale")] = 0;
    if (c.pdq_open) /* their PDQs would make the idle one not idle */
        c.fam[fam_index("pdq")] = 0;
    rq_ctx_t *ctx;
    int rc = rq_init(&argc, &argv, &ctx);
    if (rc != 0) {
        fprintf(stderr, "rqbench: rq_init: %s\n", rq_strerror(rc));
        return 1;
    }
    if (rq_size(ctx) < 2) {
        fprintf(stderr, "rqbench: needs at least 2 ranks\n");
        rq_finalize(ctx);
        return 2;
    }
    if (c.nfam == 0)
        c.fam[fam_index("compare")] = 1; /* --compare inside a job: the compare family */
    rc = run_in_job(&c, ctx);
    rq_finalize(ctx);
    return rc;
}
