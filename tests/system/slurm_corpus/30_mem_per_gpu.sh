#!/bin/bash
# Pattern: memory sized by the GPUs asked for.
# man sbatch: --mem-per-gpu "Minimum memory required per allocated GPU. Default units
# are megabytes"; "--mem, --mem-per-cpu and --mem-per-gpu options are mutually exclusive".
#SBATCH --gres=gpu:2
#SBATCH --mem-per-gpu=8G
#SBATCH -t 10
#SBATCH -o mem-%j.out

echo "corpus: 30 ok gpus=$SLURM_GPUS_ON_NODE"
