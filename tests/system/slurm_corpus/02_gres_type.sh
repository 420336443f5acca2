#!/bin/bash
# Pattern: a job that needs a GPU model, by the type name the site's gres.conf gives.
# man sbatch: --gres "name[[:type]:count]", e.g. "--gres=gpu:kepler:2".
#SBATCH -J vit-a100
#SBATCH --gres=gpu:a100:2
#SBATCH -t 01:00:00
#SBATCH -o slurm-%j.out

n=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | wc -l)
echo "corpus: 02 ok gpus=$n"
