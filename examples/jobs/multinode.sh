#!/bin/bash
# multinode.sh - a two-node job written for Slurm, run by Docket as Slurm runs it
# (docs/slurm.md): this script runs once, on the first node of the allocation, with
# SLURM_* set; srun starts one task per node across the allocation, each with its
# SLURM_PROCID, SLURM_NODEID and its node's GPUs. All nodes start together or none do.
#
#   DOCKET_PARTITION_MAP="gpu=high" sbatch examples/jobs/multinode.sh
#   (or docket sbatch, or docket submit)
#
#SBATCH --job-name=llm-pretrain
#SBATCH --account=vision
#SBATCH --partition=gpu
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8
#SBATCH --cpus-per-task=16
#SBATCH --mem=64G
#SBATCH --time=1-00:00:00
#SBATCH --signal=B:USR1@120
#SBATCH --output=pretrain-%j.out

export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=29500
echo "job $SLURM_JOB_ID on $SLURM_NNODES nodes ($SLURM_JOB_NODELIST), master $MASTER_ADDR"
srun bash -c 'echo "task $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME, GPUs $CUDA_VISIBLE_DEVICES"; sleep 5'
# srun torchrun --nnodes "$SLURM_NNODES" --nproc_per_node 8 --rdzv_backend c10d \
#     --rdzv_endpoint "$MASTER_ADDR:$MASTER_PORT" pretrain.py
echo "done: srun exited $?"
