#!/bin/bash
# Pattern: an experiment config written by a heredoc with the job's variables, then
# passed to the program (Hydra/YAML-style).
# man sbatch: OUTPUT ENVIRONMENT VARIABLES SLURM_JOB_ID, SLURM_SUBMIT_DIR, SLURM_JOB_NAME.
#SBATCH --job-name=cfg-run
#SBATCH --gres=gpu:1
#SBATCH --time=10
#SBATCH --output=%x-%j.out

cfg=$SLURM_SUBMIT_DIR/config-$SLURM_JOB_ID.yaml
cat >"$cfg" <<YAML
run:
  name: $SLURM_JOB_NAME
  id: $SLURM_JOB_ID
  out_dir: $SLURM_SUBMIT_DIR/runs/$SLURM_JOB_ID
YAML
python train.py --config "$cfg"
grep -q "id: $SLURM_JOB_ID" "$cfg" && echo "corpus: 31 ok config"
