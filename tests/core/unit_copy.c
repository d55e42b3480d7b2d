/* unit_copy - the sender's copies into shared memory: rqi_copy_stream at
 * every destination alignment and around its 64-byte stride, the chooser
 * under each RQ_BULK_STREAM mode (bytes exact, the choice settles), and a
 * packet filled tail first (rqi_pkt_copy_tail, then the first line) for
 * payload offsets inside, at and past the first slot: exactly the bytes
 * of one memcpy, nothing written outside the packet. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/config.h"
#include "core/copy.h"
#include "net/shm_ring.h"

static unsigned char src[1 << 16], dst[(1 << 16) + 256], want[(1 << 16) + 256];

static void fill(void)
{
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 131u + 7u);
}

/* dst is a guard band of 0xee around [off, off + len). */
static void expect(size_t off, size_t len)
{
    memset(want, 0xee, sizeof want);
    memcpy(want + off, src, len);
    CHECK(memcmp(dst, want, sizeof dst) == 0);
}

int main(void)
{
    fill();
    static const size_t lens[] = {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000, 4096, 65535};
    for (size_t a = 0; a < 64; a++)
        for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
            memset(dst, 0xee, sizeof dst);
            rqi_copy_stream(dst + 64 + a, src, lens[i]);
            expect(64 + a, lens[i]);
        }

    /* The chooser: every mode copies exactly, repeatedly, odd offsets. */
    for (int mode = RQI_STREAM_AUTO; mode <= RQI_STREAM_ALWAYS; mode++) {
        struct rqi_copy_cost cost = {0};
        for (int n = 0; n < 300; n++) {
            size_t off = (size_t)(n % 17), len = 4096 + (size_t)(n * 97 % 60000);
            memset(dst, 0xee, sizeof dst);
            rqi_copy_chosen(&cost, mode, dst + off, src, len);
            expect(off, len);
        }
        CHECK(cost.n == (mode == RQI_STREAM_AUTO ? 300u : 0u));
        if (mode == RQI_STREAM_AUTO)
            CHECK(cost.k[0] >= 4 && cost.k[1] >= 4); /* both ways measured */
    }

    /* Below RQI_COPY_CHOOSE_MIN auto is a plain copy: nothing measured. */
    struct rqi_copy_cost small = {0};
    for (size_t len = 0; len < RQI_COPY_CHOOSE_MIN; len += 97) {
        memset(dst, 0xee, sizeof dst);
        rqi_copy_chosen(&small, RQI_STREAM_AUTO, dst + 3, src, len);
        expect(3, len);
    }
    CHECK(small.n == 0);

    /* A packet filled tail first, then its first line, as the senders do. */
    static const size_t ats[] = {32, 40, 56, 63, 64, 72, 96, 160};
    static const size_t plens[] = {0, 1, 7, 8, 23, 24, 25, 31, 32, 33, 64, 65, 700, 768,
                                   769, 800, 1000, 5000, 16384};
    for (size_t i = 0; i < sizeof ats / sizeof *ats; i++)
        for (size_t j = 0; j < sizeof plens / sizeof *plens; j++) {
            size_t at = ats[i], len = plens[j];
            _Alignas(64) static unsigned char pkt[(1 << 16) + 256];
            memset(pkt, 0xee, sizeof pkt);
            size_t first = len != 0 ? rqi_pkt_copy_tail((struct rqi_pkt *)pkt, at, src, len) : 0;
            CHECK(first <= len);
            CHECK(at >= RQI_SLOT_BYTES ? first == 0
                                       : first == (len < RQI_SLOT_BYTES - at ? len
                                                                            : RQI_SLOT_BYTES - at));
            /* Nothing in the first line yet. */
            for (size_t k = 0; k < RQI_SLOT_BYTES && k < at + first; k++)
                CHECK(pkt[k] == 0xee);
            memcpy(pkt + at, src, first);
            memset(want, 0xee, sizeof want);
            memcpy(want + at, src, len);
            CHECK(memcmp(pkt, want, at + len + 64) == 0);
        }
    return 0;
}
