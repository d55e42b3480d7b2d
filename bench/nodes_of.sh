#!/bin/sh
# nodes_of.sh C PROG ARGS... - run one rank of an mpirun job as if C ranks
# shared each node: rank r counts as on node r / C (RQ_NODE_ID), so ranks
# of one node use shared memory and the others UCX.  The PDQ paper's
# clustering degree (Figure 8) on one machine.
c=$1
shift
r=${PMIX_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
RQ_NODE_ID=n$((r / c))
export RQ_NODE_ID
exec "$@"
