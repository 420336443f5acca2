#!/bin/bash
# Pattern: one task per GPU, each task a rank that reads SLURM_PROCID (Lightning and
# plain torch.distributed with env:// init do this).
# man sbatch: --ntasks-per-node, --gpus-per-task; man srun: SLURM_PROCID "The MPI rank
# (or relative process ID) of the current process", SLURM_LOCALID "Node local task ID".
#SBATCH -N 2
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-task=1
#SBATCH -t 30
#SBATCH -o ranks-%j.out

export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=12355
srun python train.py --dist-url env:// | sort >world-$SLURM_JOB_ID.txt
cat world-$SLURM_JOB_ID.txt
[ "$(grep -c 'world=4' world-$SLURM_JOB_ID.txt)" -eq 4 ] && echo "corpus: 06 ok tasks=$SLURM_NTASKS"
