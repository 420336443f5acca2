#!/bin/bash
# Pattern: checkpoint-and-requeue before the time limit: the batch shell gets USR1
# 55 s before the end, saves, and requeues itself; the next run resumes.
# man sbatch: --signal "[{R|B}:]<sig_num>[@sig_time] ... B: signal only the batch
# shell"; --requeue; --open-mode=append (the second run appends to the same file);
# man scontrol: "requeue <job_list> Requeue a running, suspended or finished Slurm
# batch job into pending state"; man sbatch: SLURM_RESTART_COUNT "the number of times
# the job has been restarted".
#SBATCH --job-name=ckpt-requeue
#SBATCH --gres=gpu:1
#SBATCH --time=1
#SBATCH --signal=B:USR1@55
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=%x-%j.out

ckpt=requeue-$SLURM_JOB_ID.ckpt
if [ -f "$ckpt" ]; then
    echo "resumed from $(cat "$ckpt")"
    echo "corpus: 21 ok resumed restart=${SLURM_RESTART_COUNT:-0}"
    exit 0
fi
on_usr1() {
    echo "USR1: checkpointing"
    echo "step=42" >"$ckpt"
    scontrol requeue "$SLURM_JOB_ID"
    exit 0
}
trap on_usr1 USR1
python train.py --resume-if-any &
while true; do sleep 1; done
