#!/bin/bash
# Pattern: one-GPU training run, the most common ML job: a name, a GPU, a time in
# minutes:seconds, output named after the job (%x-%j).
# man sbatch: --gres "gpu:1"; -t "minutes:seconds"; -o filename pattern "%x Job name",
# "%j jobid of the running job"; -J "Specify a name for the job allocation".
#SBATCH --job-name=resnet50
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=4
#SBATCH --time=30:00
#SBATCH --output=%x-%j.out

echo "GPUs: $CUDA_VISIBLE_DEVICES on $SLURMD_NODENAME"
python train.py --arch resnet50 --epochs 1 --save "ckpt/$SLURM_JOB_ID"
test -s "ckpt/$SLURM_JOB_ID/ckpt-0.txt" && echo "corpus: 01 ok name=$SLURM_JOB_NAME"
