#!/bin/bash
# Pattern: a partition name from another cluster ("gpu-long"). Slurm refuses it at
# submission: "sbatch: error: Batch job submission failed: Invalid partition name
# specified".
#SBATCH --partition=gpu-long
#SBATCH --gres=gpu:1
#SBATCH --time=3-00:00:00
#SBATCH --output=long-%j.out

echo "corpus: 16 should not run"
