#!/bin/bash
# Pattern: a preprocessing stage that fails (its input is missing): the job ends FAILED
# with the command's status, as under Slurm (set -e).
# man sbatch: the job's exit code is the batch script's.
#SBATCH -J prep-broken
#SBATCH -p cpu
#SBATCH -t 5
#SBATCH -o broken-%j.out
set -euo pipefail

echo "corpus: 25 ok failing on purpose"
cat no-such-dataset.csv >/dev/null
echo "unreachable"
