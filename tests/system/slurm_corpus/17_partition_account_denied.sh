#!/bin/bash
# Pattern: a private partition (AllowAccounts=nlp) tried from another account. Slurm
# refuses at submission: "Job's account not permitted to use this partition"
# (man slurm.conf, AllowAccounts: "Comma-separated list of accounts which may execute
# jobs in the partition").
#SBATCH --partition=h100priv
#SBATCH --account=vision
#SBATCH --gres=gpu:1
#SBATCH --time=30
#SBATCH --output=priv-%j.out

echo "corpus: 17 should not run"
