/* finegrain.c - the fine-grain programs' spin and report (finegrain.h). */
#include "finegrain.h"

#include <stdio.h>

#include "app.h"

void rqa_fg_spin_ns(double ns)
{
    if (ns <= 0)
        return;
    double end = rqa_now() + ns * 1e-9;
    while (rqa_now() < end)
        ;
}

void rqa_fg_print(const char *name, int ranks, double secs, const struct rqa_fg *tot)
{
    uint64_t events = tot->sent + tot->received;
    double inter = events != 0 ? secs * 1e9 / ((double)events / ranks) : 0;
    double th = tot->handlers != 0 ? rqa_ticks_to_s(tot->handler_ticks) * 1e9 / (double)tot->handlers
                                   : 0;
    printf("%s: ranks %d, time %.6f s, messages %llu, T_interhandler %.0f ns, T_handler %.0f ns",
           name, ranks, secs, (unsigned long long)tot->sent, inter, th);
    uint64_t del = tot->direct + tot->buffered;
    if (del != 0)
        printf(", buffered %.4f, buffer max %llu B", (double)tot->buffered / (double)del,
               (unsigned long long)tot->buffer_max);
    printf("\n");
}
