#!/bin/bash
# Pattern: a whole node for a hybrid MPI+OpenMP run: tasks and threads per task as
# written, the node to itself.
# man sbatch: --exclusive "The job allocation can not share nodes with other running
# jobs"; SLURM_CPUS_PER_TASK is the -c given, not the node's CPUs.
#SBATCH -p cpu
#SBATCH --exclusive
#SBATCH -N 1
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=4
#SBATCH -t 10
#SBATCH -o excl-%j.out

export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK
srun bash -c 'echo "task $SLURM_PROCID threads $OMP_NUM_THREADS"' | sort
echo "corpus: 35 ok cpt=$SLURM_CPUS_PER_TASK ntasks=$SLURM_NTASKS"
