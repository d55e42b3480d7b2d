# apps-2rank-summary.awk - medians per program and placement of the raw
# lines "<program> <L ns> <value> [<ideal>]" written by
# apps-2rank-*.sh; near: L < 80 ns, far: L >= 80 ns, over: L 0 (more
# ranks than cores, no placement).
function median(a, n,    i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
NF >= 3 && $2 >= 0 {
    g = $2 == 0 ? "over" : $2 < 80 ? "near" : "far"; k = $1 SUBSEP g
    n[k]++; v[k, n[k]] = $3; lo[g] = lo[g] == "" || $2 < lo[g] ? $2 : lo[g]; hi[g] = $2 > hi[g] ? $2 : hi[g]
    if (NF >= 4) { ni[k]++; vi[k, ni[k]] = $4 }
    progs[$1] = 1
}
END {
    for (gi = 1; gi <= 3; gi++) {
        g = gi == 1 ? "near" : gi == 2 ? "far" : "over"
        if (lo[g] == "") continue
        if (g == "over") printf "8 ranks on the 2 cores (oversubscribed)\n"
        else printf "%s placement (L %.0f-%.0f ns)\n", g, lo[g], hi[g]
        for (p in progs) {
            k = p SUBSEP g; if (!(k in n)) continue
            delete a; for (i = 1; i <= n[k]; i++) a[i] = v[k, i]
            m[p, g] = median(a, n[k])
            line = sprintf("  %-18s runs %2d  median %.6g", p, n[k], m[p, g])
            if (k in ni) { delete a; for (i = 1; i <= ni[k]; i++) a[i] = vi[k, i]
                           line = line sprintf("  ideal %.6g", median(a, ni[k])) }
            print line
        }
        if ((("sptrsv-poll" SUBSEP g) in n) && (("sptrsv-mpi" SUBSEP g) in n))
            printf "  sptrsv MPI / librq poll: %.2fx\n", m["sptrsv-mpi", g] / m["sptrsv-poll", g]
        if ((("sptrsv8-poll" SUBSEP g) in n) && (("sptrsv8-mpi" SUBSEP g) in n))
            printf "  sptrsv MPI / librq poll: %.2fx\n", m["sptrsv8-mpi", g] / m["sptrsv8-poll", g]
        if ((("rqbench" SUBSEP g) in n))
            printf "  handler / batched inlined dequeue per item: %.2fx (median of the runs' ratios)\n", m["rqbench", g]
        if ((("tp-direct" SUBSEP g) in n) && (("tp-mpi-isend" SUBSEP g) in n))
            printf "  transpose direct / MPI isend rate: %.2fx\n", m["tp-direct", g] / m["tp-mpi-isend", g]
    }
}
