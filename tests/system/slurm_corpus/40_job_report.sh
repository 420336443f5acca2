#!/bin/bash
# Pattern: the job prints its own record at the start, for the log (scontrol show job,
# squeue of its own id, the environment of the allocation).
# man scontrol: "show job <job_id>"; man squeue: -j, -o "%i %T %P".
#SBATCH --job-name=report
#SBATCH --ntasks=2
#SBATCH --cpus-per-task=2
#SBATCH -p cpu
#SBATCH --time=10
#SBATCH --output=%x-%j.out

scontrol show job "$SLURM_JOB_ID" >record-$SLURM_JOB_ID.txt
state=$(squeue -h -j "$SLURM_JOB_ID" -o '%T')
grep -q "JobId=$SLURM_JOB_ID" record-$SLURM_JOB_ID.txt &&
    echo "corpus: 40 ok state=$state tasks=$SLURM_NTASKS cpus=$SLURM_CPUS_ON_NODE"
