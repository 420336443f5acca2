#!/bin/bash
# Pattern: an MPI-style job that labels each line with its task's rank.
# man srun: -l, --label "Prepend task number to lines of stdout/err".
#SBATCH -p cpu
#SBATCH --ntasks=4
#SBATCH -t 10
#SBATCH -o label-%j.out

srun -l hostname | sort >labels-$SLURM_JOB_ID.txt
cat labels-$SLURM_JOB_ID.txt
[ "$(grep -c '^[0-3]: ' labels-$SLURM_JOB_ID.txt)" -eq 4 ] && echo "corpus: 32 ok"
