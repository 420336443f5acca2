#!/bin/bash
# Pattern: the second stage, submitted as: sbatch -d afterok:$(sbatch --parsable
# 22_chain_prep.sh) 23_chain_train.sh. It reads what the first stage wrote.
# man sbatch: -d "afterok:job_id[:jobid...] This job can begin execution after the
# specified jobs have successfully executed (ran to completion with an exit code of zero)".
#SBATCH -J train-after-prep
#SBATCH --gres=gpu:1
#SBATCH -t 10
#SBATCH -o %x-%j.out

test -f prep.done || { echo "prep output missing"; exit 1; }
echo "corpus: 23 ok $(cat prep.done)"
