#!/bin/bash
# Pattern: a conda environment activated in the batch script by sourcing conda's
# profile script (conda's shell function is not exported, so it is sourced).
# man sbatch: --export (default ALL): CONDA_ROOT from the submitting shell.
#SBATCH --job-name=conda-job
#SBATCH --gres=gpu:1
#SBATCH --time=15
#SBATCH --output=%x-%j.out

source "${CONDA_ROOT:-$HOME/miniconda3}/etc/profile.d/conda.sh"
conda activate torch2
python -c 'import torch; print(torch.cuda.is_available())'
echo "corpus: 20 ok env=$CONDA_DEFAULT_ENV"
