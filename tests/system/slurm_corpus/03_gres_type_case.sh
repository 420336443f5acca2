#!/bin/bash
# Pattern: the GPU type written in capitals, as users copy it from nvidia-smi or the
# cluster's wiki ("A100"). Slurm compares gres types without regard to case
# (man gres.conf, Type: "case insensitive").
#SBATCH --gres=gpu:A100:1
#SBATCH --time=20
#SBATCH --output=caps-%j.out

echo "corpus: 03 ok gpus=$SLURM_GPUS_ON_NODE"
