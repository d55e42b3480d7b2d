/* plots.c - the figures rqbench draws from a report: one per curve the
 * seeds plotted (array bandwidth, poll intersection, traverse steps), the
 * peer bandwidth comparison, the large-payload cost per byte and the
 * interrupt overhead against the message interval. */
#include <stdio.h>

#include "bench.h"
#include "plot.h"

static const struct rqb_plot plots[] = {
    {"xfer-bandwidth", "Array transfer bandwidth (double-word aligned)", "transfer size", "MB/s", 1, 1, 1,
     "xfer",
     {"one-to-one blocking, double-word", "one-to-one non-blocking, double-word",
      "two-to-one, one segment, double-word", "two-to-one, two segments, double-word",
      "swap, double-word", NULL}, 1, "memcpy bandwidth, one core"},
    {"xfer-alignment", "One-to-one blocking transfer time by alignment", "transfer size",
     "ns per transfer", 1, 1, 0, "xfer",
     {"one-to-one blocking, byte", "one-to-one blocking, word", "one-to-one blocking, double-word",
      NULL}, 1, NULL},
    {"poll-intersection", "Successful poll: time per message and per poll", "send delay (ns)",
     "ns", 0, 0, 0, "poll", {"time per message", "time per poll", NULL}, 0, NULL},
    {"traverse", "Traverse: time per message at each step", "step (partner = rank XOR step)",
     "ns per message", 0, 0, 0, "loaded",
     {"traverse (per message)", "traverse, extra poll (per message)", NULL}, 0, NULL},
    {"compare-bandwidth", "Streaming bandwidth: librq and its peers", "message size", "MB/s", 1, 1, 0,
     "compare", {"bandwidth", NULL}, 1, "memcpy bandwidth, one core"},
    {"large-cost", "Cost per byte by path: medium (in place, then staged) and long", "payload size",
     "ns per byte", 1, 1, 0, "large", {"medium", "long", "receiver-placed", "memcpy", NULL}, 1, NULL},
    {"am-round-trip", "Round trip from rank 0 by destination rank (L&C Figure 2)",
     "destination rank", "ns", 0, 0, 0, "am", {"round-trip by destination", NULL}, 0, NULL},
    {"scale-rate", "Fine-grain traffic all-to-all: rate per rank against ranks (poll every 64 sends)",
     "ranks", "M operations/s per rank", 1, 1, 0, "scale",
     {"raw ring a2a poll/64: rate per rank", "request a2a poll/64: rate per rank",
      "enqueue a2a poll/64: rate per rank", "put 8B a2a: rate per rank",
      "store 8B a2a: rate per rank", "get 8B a2a: rate per rank", "amo fadd a2a: rate per rank",
      NULL}, 0, NULL},
    {"intr-overhead", "Interrupt receive overhead against message interval (L&C Figure 7)",
     "interval x (ns)", "ns per message", 1, 1, 0, "intr",
     {"interrupt overhead", "model, closed form", "model, k counted", "model, sleeps counted", NULL},
     0, NULL},
};

void rqb_plots(const struct rqb_report *r, const char *dir)
{
    for (size_t i = 0; i < sizeof plots / sizeof plots[0]; i++) {
        int rc = rqb_plot_write(dir, r, &plots[i]);
        if (rc == 1)
            fprintf(stderr, "rqbench: wrote %s/%s.svg\n", dir, plots[i].file);
        else if (rc == 0)
            fprintf(stderr, "rqbench: %s/%s.gp written; gnuplot is not installed or failed, "
                            "so no SVG\n", dir, plots[i].file);
        else if (rc == -1)
            perror("rqbench: plot");
    }
}
