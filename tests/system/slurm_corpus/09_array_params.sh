#!/bin/bash
# Pattern: a hyper-parameter sweep, one array task per line of a params file, at most
# two tasks at once.
# man sbatch: --array "0-15%4 ... a maximum of 4 simultaneously running tasks";
# SLURM_ARRAY_TASK_ID; -o "%A Job array's master job allocation number", "%a Job array
# ID (index) number".
#SBATCH --job-name=sweep
#SBATCH --array=1-6%2
#SBATCH --gres=gpu:1
#SBATCH --time=10:00
#SBATCH --output=sweep-%A_%a.out

params=$(sed -n "${SLURM_ARRAY_TASK_ID}p" params.txt)
echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID: $params"
python train.py $params
echo "corpus: 09 ok task=$SLURM_ARRAY_TASK_ID"
