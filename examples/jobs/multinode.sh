#!/bin/bash
# multinode.sh - a two-node gang job (all nodes start together or none do), written with
# #SBATCH lines as it would be for Slurm: Docket understands them (docs/cli.md has the
# table). Each node runs this script once with the rendezvous in its environment:
# DOCKET_NODELIST, NODE_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
#
#   DOCKET_PARTITION_MAP="gpu=high" docket submit examples/jobs/multinode.sh
#
#SBATCH --job-name=llm-pretrain
#SBATCH --account=vision
#SBATCH --partition=gpu
#SBATCH --nodes=2
#SBATCH --gres=gpu:8
#SBATCH --cpus-per-task=16
#SBATCH --mem=64G
#SBATCH --time=1-00:00:00
#SBATCH --signal=B:USR1@120
#SBATCH --output=pretrain-%j.out

echo "node rank ${NODE_RANK:-0} of ${WORLD_SIZE:-1} on $(hostname)," \
     "master ${MASTER_ADDR:-localhost}:${MASTER_PORT:-29500}"
# torchrun --nnodes "$WORLD_SIZE" --node_rank "$NODE_RANK" \
#          --master_addr "$MASTER_ADDR" --master_port "$MASTER_PORT" pretrain.py
sleep 5
echo "rank ${NODE_RANK:-0} done"
