#!/bin/bash
# Pattern: multi-node DDP with torchrun, one launcher task per node, the rendezvous on
# the first node of the allocation.
# man sbatch: -N, --ntasks-per-node; man scontrol: "show hostnames" expands a host list;
# man srun: without -n inside an allocation srun runs SLURM_NTASKS tasks.
#SBATCH --job-name=ddp-torchrun
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:2
#SBATCH --cpus-per-task=4
#SBATCH -C ib
#SBATCH --time=00:30:00
#SBATCH --output=%x-%j.out

export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=29500
echo "master=$MASTER_ADDR nodes=$SLURM_NNODES"
srun torchrun --nnodes="$SLURM_NNODES" --nproc_per_node=2 \
    --rdzv_id="$SLURM_JOB_ID" --rdzv_backend=c10d --rdzv_endpoint="$MASTER_ADDR:$MASTER_PORT" \
    train.py --epochs 1 | sort >ranks-$SLURM_JOB_ID.txt
cat ranks-$SLURM_JOB_ID.txt
[ "$(grep -c 'world=4' ranks-$SLURM_JOB_ID.txt)" -eq 4 ] && echo "corpus: 05 ok ranks=4"
