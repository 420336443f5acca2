#!/bin/bash
# Pattern: a script brought from another cluster that asks for a feature this site's
# nodes do not have (V100s). Slurm refuses it at submission: "Invalid feature
# specification" (man sbatch, -C: "If no nodes have the requested features, then the
# job will be rejected by the slurm job manager").
#SBATCH --constraint=v100
#SBATCH --gres=gpu:1
#SBATCH --time=10
#SBATCH --output=feat-missing-%j.out

echo "corpus: 13 should not run"
