/* pdq_accounts - the parallel dispatch queue: bank accounts spread over
 * the ranks, updated by handlers running on several threads per rank
 * without a lock.  Each deposit names its account as the synchronization
 * key, so two deposits to one account never run at once while deposits to
 * different accounts run in parallel; an audit message (RQ_KEY_SEQUENTIAL)
 * runs alone and sees a consistent table.
 *   rqrun -n 2 ./pdq_accounts          (2 PDQ threads per rank)
 *   rqrun -n 3 ./pdq_accounts 4 50000  (4 threads, 50000 deposits per rank) */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <rq.h>

enum { ACCOUNTS = 256, QID = 3, H_DEPOSIT = 1, H_AUDIT = 2, MAX_RANKS = 64 };

static uint64_t balance[ACCOUNTS]; /* this rank's accounts */
static uint64_t audited;           /* written by the audit, alone */

/* args: amount.  The key (m->key) is the account. */
static void deposit(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx, (void)arg;
    uint64_t *b = &balance[m->key % ACCOUNTS];
    *b += m->args[0]; /* no lock: the PDQ serializes this key */
}

static void audit(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx, (void)m, (void)arg;
    uint64_t sum = 0; /* nothing else runs: the table is consistent */
    for (unsigned a = 0; a < ACCOUNTS; a++)
        sum += balance[a];
    audited = sum;
}

static int check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", what, rq_strerror(rc));
        exit(1);
    }
    return rc;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    check(rq_init(&argc, &argv, &ctx), "rq_init");
    const int me = rq_rank(ctx), n = rq_size(ctx);
    unsigned threads = argc > 1 ? (unsigned)atoi(argv[1]) : 2;
    uint64_t deposits = argc > 2 ? strtoull(argv[2], NULL, 10) : 20000;

    check(rq_handler_register(ctx, H_DEPOSIT, deposit, NULL, 0), "register");
    check(rq_handler_register(ctx, H_AUDIT, audit, NULL, 0), "register");
    rq_pdq_attr_t attr = {threads, RQ_PDQ_DEDICATED, 0};
    rq_pdq_t *pdq;
    check(rq_pdq_open(ctx, QID, &attr, &pdq), "rq_pdq_open");
    check(rq_barrier(ctx), "rq_barrier"); /* every rank's PDQ is open */

    /* Account g lives on rank g % n as local account g / n. */
    if (n > MAX_RANKS) {
        fprintf(stderr, "pdq_accounts: at most %d ranks\n", MAX_RANKS);
        return 1;
    }
    uint64_t to[MAX_RANKS] = {0}, expect[MAX_RANKS], seed = 12345u + (uint64_t)me;
    for (uint64_t i = 0; i < deposits; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t g = (seed >> 33) % ((uint64_t)ACCOUNTS * (uint64_t)n);
        uint64_t amount = 1 + (seed >> 58);
        int dst = (int)(g % (uint64_t)n);
        check(rq_pdq_enqueue(ctx, dst, QID, g / (uint64_t)n, H_DEPOSIT, &amount, 1, NULL, 0, 0),
              "rq_pdq_enqueue");
        to[dst] += amount;
    }
    /* What every rank will hold; then audit until it is all here (a
     * deposit may still be on its way after the others are done). */
    check(rq_allreduce(ctx, to, expect, (size_t)n, RQ_UINT64, RQ_SUM), "rq_allreduce");
    do {
        check(rq_pdq_enqueue(ctx, me, QID, RQ_KEY_SEQUENTIAL, H_AUDIT, NULL, 0, NULL, 0, 0),
              "rq_pdq_enqueue");
        check(rq_pdq_drain(pdq), "rq_pdq_drain");
    } while (audited != expect[me]);

    uint64_t total_sent = 0, total_held = 0;
    for (int r = 0; r < n; r++)
        total_sent += expect[r];
    check(rq_allreduce(ctx, &audited, &total_held, 1, RQ_UINT64, RQ_SUM), "rq_allreduce");
    check(rq_pdq_close(pdq), "rq_pdq_close");
    check(rq_finalize(ctx), "rq_finalize");
    if (me == 0)
        printf("pdq_accounts: %d ranks x %u threads: deposited %" PRIu64 ", audited %" PRIu64
               " (%s)\n", n, threads, total_sent, total_held,
               total_sent == total_held ? "ok" : "MISMATCH");
    return total_sent == total_held ? 0 : 1;
}
