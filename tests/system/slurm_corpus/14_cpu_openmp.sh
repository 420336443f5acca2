#!/bin/bash
# Pattern: an OpenMP program on the CPU partition, threads from the allocation.
# man sbatch: -p, --partition; -c, --cpus-per-task; SLURM_CPUS_PER_TASK "Number of cpus
# requested per task. Only set if the --cpus-per-task option is specified".
#SBATCH --partition=cpu
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=8
#SBATCH --mem=8G
#SBATCH --time=00:15:00
#SBATCH --output=omp-%j.out

export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK
echo "partition=$SLURM_JOB_PARTITION"
echo "corpus: 14 ok threads=$OMP_NUM_THREADS"
