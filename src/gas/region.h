/* region.h - strided regions: count blocks of elem bytes, block i at
 * base + i * stride.  A contiguous transfer is the region (len, 1).
 * Packets carry a region's "packed stream": its blocks back to back, so a
 * chunk at stream position pos covers bytes [pos, pos + len) of that
 * stream whatever the block size (a block may span chunks and a chunk may
 * hold many blocks: the RQ paper's many-small-blocks case, section 4.1). */
#ifndef RQI_REGION_H
#define RQI_REGION_H

#include <stdint.h>
#include <string.h>

/* Nonzero when the region lies inside [0, limit) and, on a side that is
 * written (written != 0), its blocks do not overlap (stride >= elem).
 * elem and count must be at least 1.  Every sum and product is
 * overflow-checked: a hostile packet cannot wrap around. */
static inline int rqi_region_ok(uint64_t off, uint64_t stride, uint64_t elem, uint64_t count,
                                uint64_t limit, int written)
{
    uint64_t span;
    if (elem == 0 || count == 0)
        return 0;
    if (count > 1 && written && stride < elem)
        return 0;
    if (__builtin_mul_overflow(count - 1, stride, &span) ||
        __builtin_add_overflow(span, elem, &span))
        return 0;
    return off <= limit && span <= limit - off;
}

/* Total bytes of a region (elem * count), or 0 with *ovf set on overflow. */
static inline uint64_t rqi_region_bytes(uint64_t elem, uint64_t count, int *ovf)
{
    uint64_t t;
    *ovf = __builtin_mul_overflow(elem, count, &t);
    return *ovf ? 0 : t;
}

/* Copy bytes [pos, pos + len) of the packed stream between the region at
 * base and the contiguous buf: into the region if to_region, else out. */
static inline void rqi_region_copy(char *base, uint64_t stride, uint64_t elem, uint64_t count,
                                   uint64_t pos, char *buf, uint64_t len, int to_region)
{
    if (count == 1) {
        char *a = base + pos;
        if (to_region)
            memcpy(a, buf, len);
        else
            memcpy(buf, a, len);
        return;
    }
    uint64_t i = pos / elem, j = pos % elem;
    while (len != 0) {
        uint64_t n = elem - j < len ? elem - j : len;
        char *a = base + i * stride + j;
        if (to_region)
            memcpy(a, buf, n);
        else
            memcpy(buf, a, n);
        buf += n;
        len -= n;
        i++;
        j = 0;
    }
}

#endif
