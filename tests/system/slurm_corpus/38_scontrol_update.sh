#!/bin/bash
# Pattern: submitted held with a generous limit, then trimmed and renamed before it runs:
# sbatch --hold ...; scontrol update JobId=ID TimeLimit=10 JobName=eval-small;
# scontrol release ID.
# man sbatch: -H, --hold; man scontrol: "update ... TimeLimit=<time>", "JobName=<name>",
# "release <job_list>".
#SBATCH -J eval-big
#SBATCH --gres=gpu:1
#SBATCH -t 2:00:00
#SBATCH -o update-%j.out

echo "corpus: 38 ok name=$SLURM_JOB_NAME limit_s=$((SLURM_JOB_END_TIME - SLURM_JOB_START_TIME))"
