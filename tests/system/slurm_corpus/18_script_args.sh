#!/bin/bash
# Pattern: one script, its settings given on the sbatch line: sbatch 18_script_args.sh lr 0.1
# man sbatch: SYNOPSIS "sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]";
# "the batch script ... Any arguments after the script are passed to the script".
#SBATCH --gres=gpu:1
#SBATCH --time=10
#SBATCH --output=args-%j.out

name=$1
value=$2
echo "setting $name=$value"
python train.py "--$name" "$value"
[ $# -eq 2 ] && echo "corpus: 18 ok $name=$value"
