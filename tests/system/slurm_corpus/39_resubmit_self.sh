#!/bin/bash
# Pattern: a long training split into chained jobs: each stage submits the next one to
# start after it, through sbatch inside the job.
# man sbatch: -d "afterany:job_id"; --export "ALL,VAR=value"; SLURM_SUBMIT_DIR "The
# directory from which sbatch was invoked".
#SBATCH -J chain-stage
#SBATCH -p cpu
#SBATCH -t 10
#SBATCH -o chain-%j.out

stage=${STAGE:-1}
echo "stage $stage in job $SLURM_JOB_ID"
if [ "$stage" -lt 2 ]; then
    next=$(sbatch --parsable --dependency=afterany:$SLURM_JOB_ID --export=ALL,STAGE=$((stage + 1)) \
        "$SLURM_SUBMIT_DIR/39_resubmit_self.sh")
    echo "submitted stage $((stage + 1)) as $next"
else
    echo "corpus: 39 ok stage 2 after $SLURM_JOB_ID"
fi
