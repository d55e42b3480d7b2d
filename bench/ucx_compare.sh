#!/bin/sh
# ucx_compare.sh [ROUNDS] - librq over UCX against raw UCP and ucx_perftest,
# all over TCP on loopback (UCX_TLS=tcp), in one invocation, rounds
# alternating so that every figure sees the same machine state.
#   librq   mpirun -n 2 tests/two_nodes.sh rqbench compare --quick: ranks 0
#           and 1 on two simulated nodes, so every packet is a UCP AM.
#   perftest ucx_perftest -t ucp_am_lat / ucp_am_bw, 8-byte messages.
#   mpi     mpirun -n 2 rqbench-mpi --quick with Open MPI's UCX PML (its
#           default list of UCX transports leaves TCP out, hence
#           pml_ucx_tls/devices any): MPI_Send/Recv ping-pong and a window
#           of 64 MPI_Isend, the shapes of rqbench compare.
# Prints one line per round and figure; docs/benchmarks.md has the medians.
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-3}
build=${RQ_BUILD:-build} # the build tree to measure
export UCX_TLS=tcp OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for r in $(seq "$rounds"); do
    mpirun -n 2 --bind-to core tests/two_nodes.sh "$build/rqbench" compare --quick 2>/dev/null |
        grep -E "^  (latency 8B one-way|message rate 8B) " | sed "s/^/librq round $r: /"
    csv=$(mktemp)
    mpirun -n 2 --bind-to core --mca pml ucx --mca pml_ucx_tls any \
        --mca pml_ucx_devices any -x UCX_TLS "$build/rqbench-mpi" --emit "$csv" --quick \
        >/dev/null 2>&1 || echo "mpi round $r: the MPI run failed" >&2
    awk -F, -v r="$r" '$3 == "latency 8B one-way" || $3 == "message rate 8B" {
        printf "mpi round %s:   %-27s - %-4s %10.4g\n", r, $3, $5, $6 }' "$csv"
    rm -f "$csv"
    for t in "ucp_am_lat -n 100000" "ucp_am_bw -n 1000000"; do
        port=$((20000 + r))
        ucx_perftest -p $port >/dev/null 2>&1 &
        sleep 0.5
        ucx_perftest 127.0.0.1 -p $port -t $t -s 8 2>/dev/null | grep "^Final" |
            sed "s/^/perftest ${t%% *} round $r: /"
        wait
    done
done
