#!/bin/bash
# Pattern: a network check on every GPU node of the partition (nccl-tests' all_reduce_perf
# over one GPU per node), untyped GPUs, as a site's acceptance test or a user's sanity
# check before a big run. The gpu partition has three GPU nodes, two A100 and one H100.
# man sbatch: -N "minimum count of nodes"; --gres=gpu:1 without a type takes any GPU type;
# man srun: one task per node with --ntasks-per-node=1.
#SBATCH -J nccl-allnodes
#SBATCH -p gpu
#SBATCH -N 3
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:1
#SBATCH -t 10:00
#SBATCH -o %x-%j.out

srun bash -c 'echo "all_reduce on $SLURMD_NODENAME rank $SLURM_PROCID"' | sort
echo "corpus: 10 ok nodes=$SLURM_NNODES"
