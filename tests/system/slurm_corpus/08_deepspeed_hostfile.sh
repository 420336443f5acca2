#!/bin/bash
# Pattern: deepspeed with a hostfile built from the allocation and a JSON config written
# by a heredoc.
# man sbatch: --gpus-per-node; man scontrol: "show hostnames".
#SBATCH --job-name=ds-zero2
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=2
#SBATCH --time=1:00:00
#SBATCH --output=%x-%j.out

hostfile=hostfile-$SLURM_JOB_ID
for h in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
    echo "$h slots=$SLURM_GPUS_ON_NODE"
done >"$hostfile"
cat >ds_config-$SLURM_JOB_ID.json <<JSON
{
  "train_micro_batch_size_per_gpu": 4,
  "zero_optimization": {"stage": 2},
  "bf16": {"enabled": true}
}
JSON
deepspeed --hostfile "$hostfile" train.py --deepspeed ds_config-$SLURM_JOB_ID.json
grep -q '"stage": 2' ds_config-$SLURM_JOB_ID.json && echo "corpus: 08 ok hosts=$(wc -l <"$hostfile")"
