#!/bin/bash
# Pattern: a quick check on the debug partition before the real run.
# man sbatch: -p; -t "minutes:seconds".
#SBATCH -p debug
#SBATCH -t 5:00
#SBATCH -n 1
#SBATCH -o debug-%j.out

hostname >/dev/null
echo "corpus: 15 ok partition=$SLURM_JOB_PARTITION"
