#!/bin/bash
# Pattern: the training stage of a broken pipeline: submitted with
# -d afterok:<the failed prep job>. Slurm keeps it pending with reason
# DependencyNeverSatisfied until it is cancelled (man squeue, JOB REASON CODES:
# "DependencyNeverSatisfied The job's dependency can never be satisfied").
#SBATCH -J train-after-broken
#SBATCH --gres=gpu:1
#SBATCH -t 10
#SBATCH -o never-%j.out

echo "corpus: 26 should not run"
