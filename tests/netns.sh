#!/bin/sh
# netns.sh MPIRUN PROG ARGS... - two "nodes" with different addresses: two
# network namespaces joined by a veth pair (10.77.0.1 and 10.77.0.2).
# mpirun starts 2 ranks; each enters its namespace (rank r in rq-ns<r>)
# with RQ_NODE_ID set, so librq reaches the other rank by UCX over the veth
# only.  PMIx's server listens on 127.0.0.1 of the launching namespace: a
# socat pair carries it into each namespace through a Unix socket (path
# sockets cross network namespaces).  Needs root, ip(8) and socat; skipped
# (exit 77) without them.
set -u
if [ "${1:-}" = "--rank" ]; then
    # One rank, inside mpirun: move into our namespace and run PROG.
    shift
    r=${PMIX_RANK:?}
    port=${PMIX_SERVER_URI4##*:}
    sock=/tmp/rq-netns-pmix-$PPID-$r.sock
    socat UNIX-LISTEN:$sock,fork TCP:127.0.0.1:$port </dev/null >/dev/null 2>&1 &
    relay=$!
    while [ ! -S $sock ]; do sleep 0.05; done
    export RQ_NODE_ID=ns$r UCX_NET_DEVICES=veth$r UCX_TLS=tcp
    ip netns exec rq-ns$r sh -c "
        ip link set lo up
        socat TCP-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:$sock \
            </dev/null >/dev/null 2>&1 &
        inner=\$!
        while ! ss -ltn | grep -q 127.0.0.1:$port; do sleep 0.05; done
        \"\$@\"; rc=\$?; kill \$inner; exit \$rc" sh "$@"
    rc=$?
    kill $relay 2>/dev/null
    rm -f $sock
    exit $rc
fi
mpirun=$1
shift
[ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v socat >/dev/null &&
    command -v ss >/dev/null || { echo "netns: needs root, ip, ss and socat: skipped"; exit 77; }
cleanup() { ip netns del rq-ns0 2>/dev/null; ip netns del rq-ns1 2>/dev/null; }
cleanup
trap cleanup EXIT
ip netns add rq-ns0 && ip netns add rq-ns1 &&
ip link add veth0 netns rq-ns0 type veth peer name veth1 netns rq-ns1 &&
ip -n rq-ns0 addr add 10.77.0.1/24 dev veth0 && ip -n rq-ns1 addr add 10.77.0.2/24 dev veth1 &&
ip -n rq-ns0 link set veth0 up && ip -n rq-ns1 link set veth1 up ||
    { echo "netns: cannot create namespaces here: skipped"; exit 77; }
# The links come up asynchronously; UCX skips a device that is not up yet.
for i in $(seq 100); do
    ip -n rq-ns0 -br link show veth0 | grep -q " UP " &&
        ip -n rq-ns1 -br link show veth1 | grep -q " UP " && break
    sleep 0.05
done
"$mpirun" -n 2 --oversubscribe "$0" --rank "$@"
