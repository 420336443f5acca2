#!/bin/bash
# Pattern: collect a sweep's results once every task of the array has succeeded, on the
# debug partition: sbatch -d afterok:$SWEEP 15_collect_sweep.sh $SWEEP, where $SWEEP is
# the array's id from sbatch --parsable 09_array_params.sh.
# man sbatch: -d "afterok:job_id" and "Many jobs can share the same dependency and these
# jobs may even belong to different users"; a job array's id stands for all of its
# tasks ("job_id ... may be ... the array's master job id"); -p; -t "minutes:seconds".
#SBATCH -J collect
#SBATCH -p debug
#SBATCH -t 5:00
#SBATCH -o collect-%j.out

sweep=$1
n=$(grep -l '^corpus: 09 ok' sweep-"$sweep"_*.out | wc -l)
echo "collected $n results of sweep $sweep"
echo "corpus: 15 ok tasks=$n partition=$SLURM_JOB_PARTITION"
