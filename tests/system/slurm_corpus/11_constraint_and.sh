#!/bin/bash
# Pattern: a job that needs both a GPU model and the fast network, by features.
# man sbatch: -C "AND: If only nodes with ALL of specified features will be used. The
# ampersand is used for an AND operator. For example, --constraint="intel&gpu"".
#SBATCH --constraint="a100&ib"
#SBATCH --gres=gpu:1
#SBATCH --time=10
#SBATCH --output=feat-and-%j.out

echo "corpus: 11 ok on=$SLURMD_NODENAME"
