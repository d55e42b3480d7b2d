/* unit_vbuf - virtual buffer FIFOs: order, chunk growth, outsized records,
 * owned payloads, and memory accounting back to zero when drained. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "deliver/vbuf.h"

int main(void)
{
    struct rqi_vbuf vb;
    struct rqi_vfifo f[2] = {{0}};
    rqi_vbuf_init(&vb, 4096);
    CHECK(rqi_vfifo_head(&f[0]) == NULL);
    /* Interleave two FIFOs, varied sizes, some larger than a chunk. */
    const int n = 5000;
    for (int i = 0; i < n; i++) {
        size_t len = (size_t)(i % 7 == 0 ? 9000 : i % 300);
        struct rqi_vrec *r = rqi_vbuf_push(&vb, &f[i & 1], (unsigned)(i % 4), len);
        CHECK(r != NULL);
        r->tag = (uint32_t)i;
        for (unsigned a = 0; a < r->nargs; a++)
            r->args[a] = (uint64_t)i * 10 + a;
        memset(r->data, i & 0xff, len);
    }
    struct rqi_vrec *own = rqi_vbuf_push(&vb, &f[0], 0, 0);
    CHECK(own != NULL);
    own->tag = (uint32_t)n;
    rqi_vbuf_own(&vb, own, malloc(1 << 20), 1 << 20);
    CHECK(vb.bytes_max >= vb.bytes_now && vb.bytes_now > (1u << 20));
    for (int q = 0; q < 2; q++) {
        for (int i = q; i < n; i += 2) {
            struct rqi_vrec *r = rqi_vfifo_head(&f[q]);
            CHECK(r != NULL);
            CHECK_EQ(r->tag, i);
            size_t len = (size_t)(i % 7 == 0 ? 9000 : i % 300);
            CHECK_EQ(r->len, len);
            for (unsigned a = 0; a < r->nargs; a++)
                CHECK_EQ(r->args[a], (uint64_t)i * 10 + a);
            for (size_t b = 0; b < len; b++)
                CHECK(((unsigned char *)r->data)[b] == (unsigned char)(i & 0xff));
            rqi_vbuf_pop(&vb, &f[q]);
        }
    }
    CHECK(rqi_vfifo_head(&f[0]) != NULL && rqi_vfifo_head(&f[0])->tag == (uint32_t)n);
    rqi_vbuf_pop(&vb, &f[0]);
    CHECK(rqi_vfifo_head(&f[0]) == NULL && rqi_vfifo_head(&f[1]) == NULL);
    CHECK_EQ(vb.bytes_now, 0);
    CHECK_EQ(vb.records, 0);
    CHECK(vb.ncache <= RQI_VBUF_CACHE);
    CHECK(f[0].first == NULL && f[1].first == NULL); /* drained chunks given back */
    rqi_vbuf_pop(&vb, &f[0]);                         /* pop on empty: no-op */
    rqi_vbuf_destroy(&vb, f, 2);
    printf("unit_vbuf: ok\n");
    return 0;
}
