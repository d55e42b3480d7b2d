/* app.c - shared helpers of the applications (see app.h). */
#define _POSIX_C_SOURCE 200809L
#include "app.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double rqa_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#if defined(__x86_64__)
#include <x86intrin.h>
static uint64_t raw_ticks(void) { return __rdtsc(); }
#else
static uint64_t raw_ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

/* The first reading of both clocks: the calibration's origin. */
static uint64_t tick0;
static double   now0;

uint64_t rqa_ticks(void)
{
    if (tick0 == 0) {
        now0 = rqa_now();
        tick0 = raw_ticks();
    }
    return raw_ticks();
}

double rqa_ticks_to_s(uint64_t ticks)
{
    if (tick0 == 0)
        return 0;
    double dt = rqa_now() - now0;
    uint64_t dk = raw_ticks() - tick0;
    return dk > 0 ? (double)ticks * dt / (double)dk : 0;
}

const char *rqa_take_opt(int *argc, char **argv, const char *name)
{
    size_t nl = strlen(name);
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || strncmp(a + 2, name, nl) != 0)
            continue;
        const char *v = NULL;
        int used = 0;
        if (a[2 + nl] == '=') {
            v = a + 3 + nl;
            used = 1;
        } else if (a[2 + nl] == '\0' && i + 1 < *argc) {
            v = argv[i + 1];
            used = 2;
        } else {
            continue;
        }
        memmove(&argv[i], &argv[i + used], (size_t)(*argc - i - used + 1) * sizeof *argv);
        *argc -= used;
        return v;
    }
    return NULL;
}

int rqa_take_double(int *argc, char **argv, const char *name, double def, double min,
                    double *out)
{
    const char *s = rqa_take_opt(argc, argv, name);
    *out = def;
    return s != NULL && (rqa_parse_double(s, out) != 0 || *out < min) ? -1 : 0;
}

int rqa_take_flag(int *argc, char **argv, const char *name)
{
    for (int i = 1; i < *argc; i++)
        if (strncmp(argv[i], "--", 2) == 0 && strcmp(argv[i] + 2, name) == 0) {
            memmove(&argv[i], &argv[i + 1], (size_t)(*argc - i) * sizeof *argv);
            (*argc)--;
            return 1;
        }
    return 0;
}

int rqa_variant(int *argc, char **argv, const char *opt, const char *const *names, int n,
                const char *def)
{
    const char *v = rqa_take_opt(argc, argv, opt);
    if (v == NULL)
        v = getenv("RQAPP_VARIANT");
    if (v == NULL || *v == '\0')
        v = def;
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    fprintf(stderr, "%s: unknown variant '%s'; one of:", argv[0], v);
    for (int i = 0; i < n; i++)
        fprintf(stderr, " %s", names[i]);
    fprintf(stderr, "\n");
    return -1;
}

int rqa_parse_u64(const char *s, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || errno == ERANGE)
        return -1;
    *out = v;
    return 0;
}

int rqa_parse_double(const char *s, double *out)
{
    if (s == NULL || *s == '\0')
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

const char *rqa_gas_strategy(void)
{
    const char *s = getenv("RQ_GAS_STRATEGY");
    return s != NULL ? s : "direct";
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void rqa_spin_turn(unsigned *spins)
{
    if (++*spins > 256)
        sched_yield();
}

double rqa_median(double *v, int n)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
