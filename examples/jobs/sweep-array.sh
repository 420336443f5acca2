#!/bin/bash
# sweep-array.sh - an array of experiments: 20 learning rates, at most 4 running at once.
# Each task gets its index in DOCKET_ARRAY_INDEX.
#
#   docket submit examples/jobs/sweep-array.sh
#   docket queue -p nlp
#
# experiment jobs that are idempotent may be retried automatically when they fail.
#DOCKET --project nlp --class experiment
#DOCKET --array 0-19%4
#DOCKET --gpus 1 --cpus 4 --mem 16G --time 30m
#DOCKET --idempotent --retries 2
#DOCKET --label sweep=lr
#DOCKET --output sweep-%a.out

i=${DOCKET_ARRAY_INDEX:-0}
lr=$(awk -v i="$i" 'BEGIN { printf "%.5f", 0.0001 * 2 ^ (i / 4) }')
echo "task $i: learning rate $lr"
# python finetune.py --lr "$lr" --out "results/$i.json"
sleep 2
echo "task $i: done"
