#!/bin/bash
# Pattern: mail at the end or on failure, as almost every university template has.
# man sbatch: --mail-type "NONE, BEGIN, END, FAIL, ... ALL"; --mail-user. (This site
# sends no mail; Slurm still accepts the job.)
#SBATCH --job-name=mailer
#SBATCH --mail-type=END,FAIL
#SBATCH --mail-user=someone@example.org
#SBATCH -p cpu
#SBATCH --time=5
#SBATCH --output=%x-%j.out

echo "corpus: 28 ok"
