#!/bin/bash
# Pattern: a day-long training run in days-hours:minutes:seconds.
# man sbatch: -t "Acceptable time formats include "minutes", "minutes:seconds",
# "hours:minutes:seconds", "days-hours", "days-hours:minutes" and
# "days-hours:minutes:seconds""; SLURM_JOB_END_TIME, SLURM_JOB_START_TIME.
#SBATCH --time=1-00:00:00
#SBATCH --gres=gpu:1
#SBATCH --output=day-%j.out

echo "corpus: 29 ok limit_s=$((SLURM_JOB_END_TIME - SLURM_JOB_START_TIME))"
