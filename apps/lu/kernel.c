/* kernel.c - blocked LU kernels (see kernel.h). */
#include "kernel.h"

#include <math.h>
#include <stdint.h>

double lu_input(size_t n, size_t i, size_t j)
{
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull ^ (uint64_t)j * 0xc2b2ae3d27d4eb4full;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    double v = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
    return i == j ? v + (double)n : v;
}

void lu_input_block(double *a, size_t n, size_t b, size_t bi, size_t bj)
{
    for (size_t i = 0; i < b; i++)
        for (size_t j = 0; j < b; j++)
            a[i * b + j] = lu_input(n, bi * b + i, bj * b + j);
}

void lu_diag(double *a, size_t b)
{
    for (size_t k = 0; k < b; k++)
        for (size_t i = k + 1; i < b; i++) {
            double l = a[i * b + k] /= a[k * b + k];
            for (size_t j = k + 1; j < b; j++)
                a[i * b + j] -= l * a[k * b + j];
        }
}

void lu_row(const double *diag, double *blk, size_t b)
{
    for (size_t k = 0; k < b; k++)
        for (size_t i = k + 1; i < b; i++) {
            double l = diag[i * b + k];
            for (size_t j = 0; j < b; j++)
                blk[i * b + j] -= l * blk[k * b + j];
        }
}

void lu_col(const double *diag, double *blk, size_t b)
{
    for (size_t k = 0; k < b; k++) {
        double u = diag[k * b + k];
        for (size_t i = 0; i < b; i++) {
            double v = blk[i * b + k] /= u;
            for (size_t j = k + 1; j < b; j++)
                blk[i * b + j] -= v * diag[k * b + j];
        }
    }
}

void lu_update(double *c, const double *a, const double *bb, size_t b)
{
    for (size_t i = 0; i < b; i++)
        for (size_t k = 0; k < b; k++) {
            double v = a[i * b + k];
            for (size_t j = 0; j < b; j++)
                c[i * b + j] -= v * bb[k * b + j];
        }
}

int lu_owner(size_t bi, size_t bj, int np)
{
    int pr = (int)sqrt((double)np);
    while (pr > 1 && np % pr != 0)
        pr--;
    int pc = np / pr;
    return (int)(bi % (size_t)pr) * pc + (int)(bj % (size_t)pc);
}

void lu_serial(double *blocks, size_t n, size_t b)
{
    size_t nb = n / b, bb = b * b;
#define BLK(i, j) (blocks + ((i) * nb + (j)) * bb)
    for (size_t i = 0; i < nb; i++)
        for (size_t j = 0; j < nb; j++)
            lu_input_block(BLK(i, j), n, b, i, j);
    for (size_t k = 0; k < nb; k++) {
        lu_diag(BLK(k, k), b);
        for (size_t j = k + 1; j < nb; j++)
            lu_row(BLK(k, k), BLK(k, j), b);
        for (size_t i = k + 1; i < nb; i++)
            lu_col(BLK(k, k), BLK(i, k), b);
        for (size_t i = k + 1; i < nb; i++)
            for (size_t j = k + 1; j < nb; j++)
                lu_update(BLK(i, j), BLK(i, k), BLK(k, j), b);
    }
#undef BLK
}
