/* ucx_peer.c - rqbench-ucx: the "compare" shapes over UCX UCP, for
 * rqbench --compare.  Forks itself into two processes pinned to the first
 * two CPUs it may use (the cores rqrun --bind core gives ranks 0 and 1);
 * worker addresses and the remote key travel over a socketpair.  UCX picks
 * its shared-memory transports (set UCX_TLS to force others).
 *   latency 8B one-way  ucp_am_send_nbx ping-pong (8-byte payload) / 2.
 *   message rate 8B     16384 AMs streamed, at most 64 in flight, one ack.
 *   bandwidth           ucp_put_nbx of the array, streamed, one flush.
 *   put 8B + flush      ucp_put_nbx + ucp_worker_flush_nbx, back to back.
 *   large AM placed     ucp_am_send_nbx of 16 KiB + 1 .. 16 MiB (UCX picks
 *                       eager or rendezvous), received with
 *                       ucp_am_recv_data_nbx into the receiver's buffer
 *                       (copied there when eager); ns per byte.
 *   overlap message     ucp_am_send_nbx + computation + waiting for the
 *                       request at the sender (overlap.h).
 *   cache-line one-way latency L, start / end: this run's placement
 *                       (peer_placement), through a page both map. */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "overlap.h"
#include "peer.h"

enum { AM_COUNT = 1, AM_ACK = 2, AM_BIG = 3 };
#define BUF_BYTES (16u << 20)

struct ux {
    int          sock;
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_ep_h     ep;
    ucp_mem_h    mem;
    char        *local;   /* BUF_BYTES, registered; the put target */
    uint64_t     remote;  /* peer's buffer address */
    ucp_rkey_h   rkey;
};

static volatile uint64_t counted, acked, big_got;
static uint64_t counted_due, acked_due, big_due;
static char *recv_buf; /* BUF_BYTES: where large messages land */
static ucp_worker_h the_worker;

static void die(const char *what, ucs_status_t st)
{
    fprintf(stderr, "rqbench-ucx: %s: %s\n", what, ucs_status_string(st));
    exit(1);
}

static void xfer_all(int fd, void *b, size_t n, int out)
{
    char *c = b;
    while (n > 0) {
        ssize_t k = out ? write(fd, c, n) : read(fd, c, n);
        if (k <= 0) {
            perror("rqbench-ucx: socketpair");
            exit(1);
        }
        c += k;
        n -= (size_t)k;
    }
}

static void bcast(struct peer *p, int64_t *v)
{
    struct ux *u = p->u;
    xfer_all(u->sock, v, sizeof *v, p->me == 0);
}

static void sync_both(struct peer *p)
{
    int64_t x = 0;
    bcast(p, &x);
}

static ucs_status_t on_count(void *a, const void *h, size_t hl, void *d, size_t l,
                             const ucp_am_recv_param_t *pr)
{
    (void)a; (void)h; (void)hl; (void)d; (void)l; (void)pr;
    counted++;
    return UCS_OK;
}
static ucs_status_t on_ack(void *a, const void *h, size_t hl, void *d, size_t l,
                           const ucp_am_recv_param_t *pr)
{
    (void)a; (void)h; (void)hl; (void)d; (void)l; (void)pr;
    acked++;
    return UCS_OK;
}

static void big_landed(void *req, ucs_status_t st, size_t len, void *user)
{
    (void)len;
    (void)user;
    if (st != UCS_OK)
        die("ucp_am_recv_data_nbx", st);
    ucp_request_free(req);
    big_got++;
}

static ucs_status_t on_big(void *a, const void *h, size_t hl, void *d, size_t l,
                           const ucp_am_recv_param_t *pr)
{
    (void)a; (void)h; (void)hl;
    if (pr->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK,
                                   .cb.recv_am = big_landed};
        ucs_status_ptr_t r = ucp_am_recv_data_nbx(the_worker, d, recv_buf, l, &prm);
        if (UCS_PTR_IS_ERR(r))
            die("ucp_am_recv_data_nbx", UCS_PTR_STATUS(r));
        if (r == NULL)
            big_got++;
        return UCS_OK;
    }
    memcpy(recv_buf, d, l);
    big_got++;
    return UCS_OK;
}

static void wait_req(struct ux *u, ucs_status_ptr_t r, const char *what)
{
    if (r == NULL)
        return;
    if (UCS_PTR_IS_ERR(r))
        die(what, UCS_PTR_STATUS(r));
    while (ucp_request_check_status(r) == UCS_INPROGRESS)
        ucp_worker_progress(u->worker);
    ucp_request_free(r);
}

static void am_send(struct ux *u, unsigned id, const uint64_t *x)
{
    ucp_request_param_t prm = {0};
    wait_req(u, ucp_am_send_nbx(u->ep, id, NULL, 0, x, x ? 8 : 0, &prm), "ucp_am_send_nbx");
}

static void wait_word(struct ux *u, volatile uint64_t *w, uint64_t v)
{
    while (*w < v)
        ucp_worker_progress(u->worker);
}

static double latency(struct peer *p, void *arg)
{
    (void)arg;
    struct ux *u = p->u;
    uint64_t x = 1;
    const int n = 1024;
    sync_both(p);
    uint64_t t0 = peer_now_ns();
    for (int i = 0; i < n; i++) {
        if (p->me == 0)
            am_send(u, AM_COUNT, &x);
        wait_word(u, &counted, ++counted_due);
        if (p->me == 1)
            am_send(u, AM_COUNT, &x);
    }
    return (double)(peer_now_ns() - t0) / n / 2;
}

static double rate(struct peer *p, void *arg)
{
    (void)arg;
    struct ux *u = p->u;
    const long n = 16384;
    uint64_t x = 1;
    double r = 0;
    sync_both(p);
    if (p->me == 0) {
        ucs_status_ptr_t inflight[64];
        int k = 0;
        ucp_request_param_t prm = {0};
        uint64_t t0 = peer_now_ns();
        for (long i = 0; i < n; i++) {
            ucs_status_ptr_t q = ucp_am_send_nbx(u->ep, AM_COUNT, NULL, 0, &x, 8, &prm);
            if (UCS_PTR_IS_ERR(q))
                die("am send", UCS_PTR_STATUS(q));
            if (q != NULL)
                inflight[k++] = q;
            if (k == 64) {
                for (int j = 0; j < k; j++)
                    wait_req(u, inflight[j], "ucp_am_send_nbx");
                k = 0;
            }
        }
        for (int j = 0; j < k; j++)
            wait_req(u, inflight[j], "ucp_am_send_nbx");
        wait_word(u, &acked, ++acked_due);
        r = n / (double)(peer_now_ns() - t0) * 1e3;
    } else {
        wait_word(u, &counted, counted_due += (uint64_t)n);
        am_send(u, AM_ACK, NULL);
    }
    return r;
}

static void flush(struct ux *u)
{
    ucp_request_param_t prm = {0};
    wait_req(u, ucp_worker_flush_nbx(u->worker, &prm), "ucp_worker_flush_nbx");
}

/* arg: array size (bandwidth, MB/s), or 0 for put 8B + flush (ns). */
static double put(struct peer *p, void *arg)
{
    struct ux *u = p->u;
    size_t len = *(const size_t *)arg;
    double r = 0;
    sync_both(p);
    if (p->me == 0) {
        ucp_request_param_t prm = {0};
        uint64_t t0 = peer_now_ns();
        if (len == 0) {
            for (int i = 0; i < 1024; i++) {
                wait_req(u, ucp_put_nbx(u->ep, u->local, 8, u->remote, u->rkey, &prm), "ucp_put_nbx");
                flush(u);
            }
            r = (double)(peer_now_ns() - t0) / 1024;
        } else {
            long n = len >= (1u << 20) ? 16 : 256;
            for (long i = 0; i < n; i++)
                wait_req(u, ucp_put_nbx(u->ep, u->local, len, u->remote, u->rkey, &prm), "ucp_put_nbx");
            flush(u);
            r = (double)n * (double)len / (double)(peer_now_ns() - t0) * 1e3;
        }
    }
    return r;
}

/* arg: message size; ns per byte of a stream of large messages. */
static double large_placed(struct peer *p, void *arg)
{
    struct ux *u = p->u;
    size_t len = *(const size_t *)arg;
    const long n = len >= (1u << 20) ? 16 : 64;
    double r = 0;
    sync_both(p);
    if (p->me == 0) {
        ucs_status_ptr_t q[64];
        int k = 0;
        ucp_request_param_t prm = {0};
        uint64_t t0 = peer_now_ns();
        for (long i = 0; i < n; i++) {
            q[k] = ucp_am_send_nbx(u->ep, AM_BIG, NULL, 0, u->local, len, &prm);
            if (UCS_PTR_IS_ERR(q[k]))
                die("ucp_am_send_nbx", UCS_PTR_STATUS(q[k]));
            k += q[k] != NULL;
        }
        for (int j = 0; j < k; j++)
            wait_req(u, q[j], "ucp_am_send_nbx");
        wait_word(u, &acked, ++acked_due);
        r = (double)(peer_now_ns() - t0) / ((double)n * (double)len);
    } else {
        wait_word(u, &big_got, big_due += (uint64_t)n);
        am_send(u, AM_ACK, NULL);
    }
    return r;
}

/* ---- the tag API, beside librq's tagged layer (rqbench tagged.c) ---- */

enum { TAG_DATA = 1, TAG_ACK = 2 };

static ucs_status_ptr_t tag_send(struct ux *u, const void *b, size_t len, ucp_tag_t tag)
{
    ucp_request_param_t prm = {0};
    ucs_status_ptr_t r = ucp_tag_send_nbx(u->ep, b, len, tag, &prm);
    if (UCS_PTR_IS_ERR(r))
        die("ucp_tag_send_nbx", UCS_PTR_STATUS(r));
    return r;
}

static ucs_status_ptr_t tag_recv(struct ux *u, void *b, size_t len, ucp_tag_t tag)
{
    ucp_request_param_t prm = {0};
    ucs_status_ptr_t r = ucp_tag_recv_nbx(u->worker, b, len, tag, (ucp_tag_t)-1, &prm);
    if (UCS_PTR_IS_ERR(r))
        die("ucp_tag_recv_nbx", UCS_PTR_STATUS(r));
    return r;
}

/* Wait for a receive (NULL: it completed at once). */
static void wait_recv(struct ux *u, ucs_status_ptr_t r)
{
    if (r == NULL)
        return;
    ucp_tag_recv_info_t info;
    while (ucp_tag_recv_request_test(r, &info) == UCS_INPROGRESS)
        ucp_worker_progress(u->worker);
    ucp_request_free(r);
}

static double tag_latency(struct peer *p, void *arg)
{
    (void)arg;
    struct ux *u = p->u;
    uint64_t x = 1;
    const int n = 1024;
    sync_both(p);
    uint64_t t0 = peer_now_ns();
    for (int i = 0; i < n; i++) {
        if (p->me == 0)
            wait_req(u, tag_send(u, &x, 8, TAG_DATA), "ucp_tag_send_nbx");
        wait_recv(u, tag_recv(u, &x, 8, TAG_DATA));
        if (p->me == 1)
            wait_req(u, tag_send(u, &x, 8, TAG_DATA), "ucp_tag_send_nbx");
    }
    return (double)(peer_now_ns() - t0) / n / 2;
}

/* arg: payload size (0: 8 bytes, M/s; else MB/s).  Windows of sends and
 * receives as rqbench-mpi's (64, 16 from 1 MiB), one ack at the end. */
static double tag_stream(struct peer *p, void *arg)
{
    struct ux *u = p->u;
    const size_t len = *(const size_t *)arg, sz = len ? len : 8;
    const long n = len == 0 ? 16384 : len >= (1u << 20) ? 16 : 256;
    const int window = len >= (1u << 20) ? 16 : 64;
    ucs_status_ptr_t q[64];
    uint64_t ack = 1;
    sync_both(p);
    uint64_t t0 = peer_now_ns();
    for (long i = 0; i < n; i += window) {
        for (int w = 0; w < window; w++)
            q[w] = p->me == 0 ? tag_send(u, u->local, sz, TAG_DATA)
                              : tag_recv(u, recv_buf, sz, TAG_DATA);
        for (int w = 0; w < window; w++) {
            if (p->me == 0)
                wait_req(u, q[w], "ucp_tag_send_nbx");
            else
                wait_recv(u, q[w]);
        }
    }
    if (p->me == 0)
        wait_recv(u, tag_recv(u, &ack, 8, TAG_ACK));
    else
        wait_req(u, tag_send(u, &ack, 8, TAG_ACK), "ucp_tag_send_nbx");
    double t = (double)(peer_now_ns() - t0);
    return len == 0 ? n / t * 1e3 : (double)n * (double)len / t * 1e3;
}

/* arg: message size; the overlap fraction at the sender. */
static double overlap(struct peer *p, void *arg)
{
    struct ux *u = p->u;
    size_t len = *(const size_t *)arg;
    const int k = RQB_OVERLAP_REPS;
    double comm[RQB_OVERLAP_REPS], comp[RQB_OVERLAP_REPS], tot[RQB_OVERLAP_REPS], r = 0;
    sync_both(p);
    if (p->me == 0) {
        ucp_request_param_t prm = {0};
        for (int pass = 0; pass < 2; pass++) {
            double tc = pass ? rqb_ov_median(comm, k) : 0;
            for (int i = 0; i < k; i++) {
                uint64_t t0 = peer_now_ns();
                ucs_status_ptr_t q = ucp_am_send_nbx(u->ep, AM_BIG, NULL, 0, u->local, len, &prm);
                if (pass)
                    comp[i] = rqb_ov_compute(tc);
                wait_req(u, q, "ucp_am_send_nbx");
                (pass ? tot : comm)[i] = (double)(peer_now_ns() - t0);
            }
        }
        r = rqb_ov_fraction(rqb_ov_median(comm, k), rqb_ov_median(comp, k), rqb_ov_median(tot, k));
        wait_word(u, &acked, ++acked_due);
    } else {
        wait_word(u, &big_got, big_due += 2u * (uint64_t)k);
        am_send(u, AM_ACK, NULL);
    }
    return r;
}

static void setup(struct ux *u)
{
    ucp_params_t pp = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                       .features = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_TAG};
    ucs_status_t st = ucp_init(&pp, NULL, &u->ctx);
    if (st != UCS_OK)
        die("ucp_init", st);
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    if ((st = ucp_worker_create(u->ctx, &wp, &u->worker)) != UCS_OK)
        die("ucp_worker_create", st);
    ucp_am_handler_param_t hp = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                                               UCP_AM_HANDLER_PARAM_FIELD_CB,
                                 .id = AM_COUNT, .cb = on_count};
    ucp_worker_set_am_recv_handler(u->worker, &hp);
    hp.id = AM_ACK;
    hp.cb = on_ack;
    ucp_worker_set_am_recv_handler(u->worker, &hp);
    hp.id = AM_BIG;
    hp.cb = on_big;
    ucp_worker_set_am_recv_handler(u->worker, &hp);
    the_worker = u->worker;
    if ((recv_buf = malloc(BUF_BYTES)) == NULL)
        die("malloc", UCS_ERR_NO_MEMORY);
    memset(recv_buf, 0, BUF_BYTES);

    ucp_address_t *addr;
    size_t alen;
    if ((st = ucp_worker_get_address(u->worker, &addr, &alen)) != UCS_OK)
        die("ucp_worker_get_address", st);
    size_t plen;
    xfer_all(u->sock, &alen, sizeof alen, 1);
    xfer_all(u->sock, addr, alen, 1);
    xfer_all(u->sock, &plen, sizeof plen, 0);
    void *peer_addr = malloc(plen);
    xfer_all(u->sock, peer_addr, plen, 0);
    ucp_worker_release_address(u->worker, addr);
    ucp_ep_params_t ep = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                          .address = peer_addr};
    if ((st = ucp_ep_create(u->worker, &ep, &u->ep)) != UCS_OK)
        die("ucp_ep_create", st);
    free(peer_addr);

    ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                                             UCP_MEM_MAP_PARAM_FIELD_FLAGS,
                               .length = BUF_BYTES, .flags = UCP_MEM_MAP_ALLOCATE};
    if ((st = ucp_mem_map(u->ctx, &mp, &u->mem)) != UCS_OK)
        die("ucp_mem_map", st);
    ucp_mem_attr_t ma = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
    ucp_mem_query(u->mem, &ma);
    u->local = ma.address;
    memset(u->local, 1, BUF_BYTES);
    void *rk;
    size_t rklen, prk;
    if ((st = ucp_rkey_pack(u->ctx, u->mem, &rk, &rklen)) != UCS_OK)
        die("ucp_rkey_pack", st);
    uint64_t mine = (uint64_t)(uintptr_t)u->local;
    xfer_all(u->sock, &mine, sizeof mine, 1);
    xfer_all(u->sock, &rklen, sizeof rklen, 1);
    xfer_all(u->sock, rk, rklen, 1);
    xfer_all(u->sock, &u->remote, sizeof u->remote, 0);
    xfer_all(u->sock, &prk, sizeof prk, 0);
    void *peer_rk = malloc(prk);
    xfer_all(u->sock, peer_rk, prk, 0);
    ucp_rkey_buffer_release(rk);
    if ((st = ucp_ep_rkey_unpack(u->ep, peer_rk, &u->rkey)) != UCS_OK)
        die("ucp_ep_rkey_unpack", st);
    free(peer_rk);
}

static void teardown(struct peer *p, struct ux *u)
{
    sync_both(p);
    ucp_rkey_destroy(u->rkey);
    /* Both sides are done (sync_both above); a close that reports the
     * peer's endpoint already gone is not an error here. */
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                               .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t r = ucp_ep_close_nbx(u->ep, &prm);
    if (UCS_PTR_IS_PTR(r)) {
        while (ucp_request_check_status(r) == UCS_INPROGRESS)
            ucp_worker_progress(u->worker);
        ucp_request_free(r);
    }
    ucp_mem_unmap(u->ctx, u->mem);
    free(recv_buf);
    ucp_worker_destroy(u->worker);
    ucp_cleanup(u->ctx);
}

/* Pin to the i-th CPU this process may use. */
static void pin(int i)
{
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all) != 0)
        return;
    for (int c = 0, seen = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &all) && seen++ == i) {
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            sched_setaffinity(0, sizeof one, &one);
            return;
        }
    }
}

int main(int argc, char **argv)
{
    struct peer p = {.impl = "ucx", .bcast = bcast};
    struct ux u = {0};
    if (peer_args(&p, argc, argv) != 0)
        return 2;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("rqbench-ucx: socketpair");
        return 1;
    }
    /* The placement (peer_placement): a word both processes map. */
    _Atomic uint64_t *line = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                                  -1, 0);
    if (line == MAP_FAILED) {
        perror("rqbench-ucx: mmap");
        return 1;
    }
    atomic_store(line, 0);
    fflush(NULL);
    pid_t child = fork();
    if (child < 0) {
        perror("rqbench-ucx: fork");
        return 1;
    }
    p.me = child == 0 ? 1 : 0;
    u.sock = sv[p.me];
    close(sv[1 - p.me]);
    p.u = &u;
    pin(p.me);
    setup(&u);
    peer_placement(&p, line, "start");
    struct rqb_summary s;
    peer_measure(&p, latency, NULL, &s);
    peer_row(&p, "latency 8B one-way", NAN, "ns", &s, "ucp_am_send_nbx ping-pong / 2");
    peer_measure(&p, rate, NULL, &s);
    peer_row(&p, "message rate 8B", NAN, "M/s", &s, "AM stream, <= 64 in flight");
    static const size_t sizes[] = {4096, 65536, 1u << 20, 16u << 20};
    for (int i = 0; i < 4; i++) {
        size_t len = sizes[i];
        peer_measure(&p, put, &len, &s);
        peer_row(&p, "bandwidth", (double)len, "MB/s", &s, "ucp_put_nbx stream, one flush");
    }
    peer_measure(&p, tag_latency, NULL, &s);
    peer_row(&p, "tagged latency 8B one-way", NAN, "ns", &s, "ucp_tag_send/recv_nbx ping-pong / 2");
    size_t zero_len = 0;
    peer_measure(&p, tag_stream, &zero_len, &s);
    peer_row(&p, "tagged message rate 8B", NAN, "M/s", &s, "windows of 64 tag send/recv");
    for (int i = 0; i < 4; i++) {
        size_t len = sizes[i];
        peer_measure(&p, tag_stream, &len, &s);
        peer_row(&p, "tagged bandwidth", (double)len, "MB/s", &s, "windows of tag send/recv");
    }
    static const size_t big[] = {16385, 65536, 1u << 20, 4u << 20, 16u << 20};
    for (int i = 0; i < 5; i++) {
        size_t len = big[i];
        peer_measure(&p, large_placed, &len, &s);
        peer_row(&p, "large AM placed", (double)len, "ns/B", &s,
                 "ucp_am_send_nbx + ucp_am_recv_data_nbx");
    }
    static const size_t ov[] = {65536, 1u << 20, 4u << 20, 16u << 20};
    for (int i = 0; i < 4; i++) {
        size_t len = ov[i];
        peer_measure(&p, overlap, &len, &s);
        peer_row(&p, "overlap message", (double)len, "frac", &s,
                 "ucp_am_send_nbx + compute + wait");
    }
    size_t zero = 0;
    peer_measure(&p, put, &zero, &s);
    peer_row(&p, "put 8B + flush", NAN, "ns", &s, "ucp_put_nbx + ucp_worker_flush_nbx");
    peer_placement(&p, line, "end");
    teardown(&p, &u);
    if (p.me == 1)
        _exit(0);
    int st = 0;
    waitpid(child, &st, 0);
    int rc = peer_emit(&p);
    rqb_report_free(&p.rep);
    return rc != 0 ? rc : (WIFEXITED(st) && WEXITSTATUS(st) == 0) ? 0 : 1;
}
