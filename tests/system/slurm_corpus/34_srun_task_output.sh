#!/bin/bash
# Pattern: one output file per rank, for logs that must not interleave.
# man srun: -o "filename pattern"; "%t task identifier (rank) relative to current job.
# This will create a separate IO file per task".
#SBATCH -p cpu
#SBATCH -n 3
#SBATCH -t 10
#SBATCH -o pertask-%j.out

srun -o "rank-%j-%t.log" bash -c 'echo "I am $SLURM_PROCID of $SLURM_NTASKS"'
n=$(cat rank-$SLURM_JOB_ID-*.log | grep -c 'of 3$')
echo "corpus: 34 ok files=$(ls rank-$SLURM_JOB_ID-*.log | wc -l) lines=$n"
