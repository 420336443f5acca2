#!/bin/bash
# Pattern: an MPI job where one rank crashes: srun -K ends the others at once and the
# job fails with srun's status instead of hanging until the time limit.
# man srun: -K, --kill-on-bad-exit "Controls whether or not to terminate a step if any
# task exits with a non-zero exit code"; the job's exit code is the script's.
#SBATCH -p cpu
#SBATCH --ntasks=2
#SBATCH -t 10
#SBATCH -o kob-%j.out

echo "corpus: 33 ok starting"
srun --kill-on-bad-exit=1 bash -c 'if [ "$SLURM_PROCID" = 1 ]; then exit 7; fi; sleep 120'
