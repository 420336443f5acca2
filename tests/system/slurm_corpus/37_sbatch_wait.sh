#!/bin/bash
# Pattern: a CI or workflow step that submits and blocks: sbatch -W 37_sbatch_wait.sh,
# then reads the job's exit status from sbatch's.
# man sbatch: -W, --wait "Do not exit until the submitted job terminates. The exit code
# of the sbatch command will be the same as the exit code of the submitted job".
#SBATCH -J ci-smoke
#SBATCH -p debug
#SBATCH -t 5
#SBATCH -o %x-%j.out

echo "corpus: 37 ok"
exit 3
