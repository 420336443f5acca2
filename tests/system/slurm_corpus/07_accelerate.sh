#!/bin/bash
# Pattern: Hugging Face accelerate on one node, its process count from the allocation.
# man sbatch: --gres=gpu:N; OUTPUT ENVIRONMENT VARIABLES: SLURM_GPUS_ON_NODE "Number of
# GPUs available to the step on this node", SLURM_NNODES, SLURM_NODEID.
#SBATCH --job-name=hf-finetune
#SBATCH --nodes=1
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=8
#SBATCH --mem=32G
#SBATCH --time=2:00:00
#SBATCH --output=%x-%j.out

accelerate launch --multi_gpu --num_processes "$SLURM_GPUS_ON_NODE" \
    --num_machines "$SLURM_NNODES" --machine_rank "$SLURM_NODEID" \
    --mixed_precision bf16 run_glue.py --model_name_or_path bert-base-uncased | sort
echo "corpus: 07 ok procs=$SLURM_GPUS_ON_NODE"
