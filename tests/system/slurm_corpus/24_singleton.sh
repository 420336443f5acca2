#!/bin/bash
# Pattern: a nightly job that must never run twice at once: submitted twice, the second
# waits for the first.
# man sbatch: -d "singleton This job can begin execution after any previously launched
# jobs sharing the same job name and user have terminated".
#SBATCH --job-name=nightly-eval
#SBATCH --dependency=singleton
#SBATCH -p cpu
#SBATCH -t 10
#SBATCH -o nightly-%j.out

echo "start $SLURM_JOB_ID" >>nightly.log
sleep 2
echo "end $SLURM_JOB_ID" >>nightly.log
echo "corpus: 24 ok"
