#!/bin/bash
# train-checkpoint.sh - a training job that saves a checkpoint when Docket asks it to stop
# (preemption or time limit) and resumes from it when it runs again.
#
#   docket submit examples/jobs/train-checkpoint.sh
#
# --signal USR1@60s: on preemption every process of the job receives SIGUSR1, and the job
# has 60 s (capped by its class) to save before it is killed. It is then requeued with the
# same id, whatever it exited with, and starts again from its last checkpoint.
#DOCKET --project vision --tier high --class training
#DOCKET --gpus 8 --cpus 16 --mem 64G --time 2d
#DOCKET --signal USR1@60s
#DOCKET --env EPOCHS=90
#DOCKET --output %x-%j.out

ckpt=${CKPT_DIR:-$PWD}/checkpoint-${DOCKET_JOB_ID:-local}
epoch=0
[[ -f $ckpt ]] && epoch=$(cat "$ckpt") && echo "resuming from epoch $epoch"

save() {
    echo "$epoch" >"$ckpt.tmp" && mv "$ckpt.tmp" "$ckpt"
    echo "checkpoint saved at epoch $epoch"
    exit 0
}
trap save USR1 TERM

while ((epoch < ${EPOCHS:-90})); do
    # one epoch of real work would go here (python train.py --epoch "$epoch" ...)
    sleep 1 &
    wait $!
    epoch=$((epoch + 1))
    echo "epoch $epoch done"
done
echo "training finished"
rm -f "$ckpt"
