#!/bin/bash
# Pattern: one log per experiment name across runs, appended to.
# man sbatch: --open-mode "append|truncate Open the output and error files using append
# or truncate mode as specified"; -o "%x".
#SBATCH -J exp-append
#SBATCH -p cpu
#SBATCH -t 5
#SBATCH --open-mode=append
#SBATCH -o log-%x.txt

echo "corpus: 27 ok run $SLURM_JOB_ID"
