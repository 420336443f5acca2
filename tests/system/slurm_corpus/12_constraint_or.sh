#!/bin/bash
# Pattern: either of two GPU generations will do.
# man sbatch: -C "OR: If only nodes with at least one of specified features will be
# used. The vertical bar is used for an OR operator".
#SBATCH -C "a100|h100"
#SBATCH --gres=gpu:1
#SBATCH -t 10
#SBATCH -o feat-or-%j.out

echo "corpus: 12 ok on=$SLURMD_NODENAME"
