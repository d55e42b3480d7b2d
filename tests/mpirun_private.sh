#!/bin/sh
# mpirun_private.sh MPIRUN ARGS... - run mpirun with a temporary directory
# of its own.  Open MPI puts its session directory under TMPDIR, named by
# the user, host and launcher pid; two mpiruns started together by ctest -j
# raced on it ("orte_session_dir failed": the directory already existed).
# A private TMPDIR per run takes the race away; it is removed afterwards.
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/rq-mpirun.XXXXXX") || exit 1
TMPDIR=$dir OMPI_MCA_orte_tmpdir_base=$dir "$@"
rc=$?
rm -rf "$dir"
exit $rc
