#!/bin/bash
# Pattern: an MPI launch with srun's tuning options copied from the centre's wiki.
# man srun: --mpi "Identify the type of MPI to be used"; --cpu-bind "Bind tasks to
# CPUs"; --hint=nomultithread. They tune the step; the step's tasks are the job's.
#SBATCH -p cpu
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=1
#SBATCH --time=00:10:00
#SBATCH --output=mpi-%j.out

srun --mpi=pmix --cpu-bind=cores --hint=nomultithread bash -c 'echo "rank $SLURM_PROCID"' | sort >mpi-ranks-$SLURM_JOB_ID.txt
[ "$(wc -l <mpi-ranks-$SLURM_JOB_ID.txt)" -eq 4 ] && echo "corpus: 36 ok ranks=4"
