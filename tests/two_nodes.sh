#!/bin/sh
# two_nodes.sh PROG ARGS... - run one rank of an mpirun job as if on one of
# two nodes: the lower half of the ranks on node "a", the upper half on
# node "b" (RQ_NODE_ID), so pairs across the halves use UCX.
n=${OMPI_COMM_WORLD_SIZE:-${PMIX_SIZE:-2}}
r=${PMIX_RANK:-0}
if [ "$r" -lt $(( (n + 1) / 2 )) ]; then RQ_NODE_ID=a; else RQ_NODE_ID=b; fi
export RQ_NODE_ID
exec "$@"
