#!/bin/bash
# Pattern: newer syntax for typed GPUs plus a feature, for an H100 benchmark.
# man sbatch: --gpus-per-node "[type:]number"; -C, --constraint "Nodes can have features".
#SBATCH --gpus-per-node=h100:1
#SBATCH --constraint=h100
#SBATCH --time=0:20:00
#SBATCH --output=bench-h100-%j.out

echo "corpus: 04 ok gpus_per_node=$SLURM_GPUS_PER_NODE"
