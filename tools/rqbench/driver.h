/* driver.h - what rqbench does when started alone (outside a job): launch
 * itself under rqrun, or drive a --compare run of librq and its peers; and
 * the output writers every mode shares. */
#ifndef RQBENCH_DRIVER_H
#define RQBENCH_DRIVER_H

#include "bench.h"

/* The directory of this executable, and its path (tools are installed
 * side by side). */
void rqb_self_dir(char *dir, size_t cap, char *self, size_t scap);
/* rqrun beside us, else "rqrun" (from PATH), in buf. */
const char *rqb_rqrun_path(const char *dir, char *buf, size_t cap);
/* Run argv and wait: its exit status (128 + signal when killed, 127 when
 * it could not be started). */
int rqb_run_cmd(char *const *argv);

/* A merged report's placement and L, from its limits rows. */
void rqb_report_placement(struct rqb_report *r);

/* FUGU Table 7-5: one `rqrun -n ranks rqbench overflow` job per control
 * threshold (the node counted low on memory), and one with control off;
 * the rows printed together.  Returns 0 or 1. */
int rqb_drive_overflow(const struct rqb_opts *o, int ranks);

/* issue 36: one `rqrun -n N rqbench scale` job per rank count N from 2
 * to max_ranks (0: the CPUs, at least 4), the rows merged with N as
 * their parameter.  Returns 0 or 1. */
int rqb_drive_scale(const struct rqb_opts *o, int max_ranks);

/* exec rqrun -n ranks --bind core <this program> argv[1..]; returns the
 * job's exit status. */
int rqb_relaunch(int argc, char **argv, int ranks);

/* Run librq's measurements (argv's subcommands plus "compare") under
 * rqrun, then rqbench-mpi under mpirun and rqbench-ucx when installed,
 * one after the other on the same two cores; print everything and the
 * side-by-side comparison; write --csv/--json/--plot of the merged rows. */
int rqb_drive_compare(int argc, char **argv, const struct rqb_opts *o);

/* Print the text report (unless emit) and write emit (CSV) or the CSV,
 * JSON and plots that o asks for.  Returns 0 or 1. */
int rqb_write_outputs(struct rqb_report *r, const struct rqb_opts *o, const char *emit);

/* The comparison table: each "compare" row of librq beside the same row
 * of every peer, with librq's speedup and the physical limit. */
void rqb_compare_table(FILE *f, const struct rqb_report *r);

#endif
