#!/bin/bash
# Pattern: an array with a step, the index used as a seed and to pick from a bash array.
# man sbatch: --array "0-15:4 ... is equivalent to 0,4,8,12".
#SBATCH --array=0-20:10
#SBATCH -c 2
#SBATCH -p cpu
#SBATCH -t 15
#SBATCH -o seed-%A_%a.out

lrs=(0.1 0.01 0.001)
lr=${lrs[$((SLURM_ARRAY_TASK_ID / 10))]}
echo "corpus: 10 ok seed=$SLURM_ARRAY_TASK_ID lr=$lr"
