#!/bin/bash
# Pattern: the first stage of a pipeline (CPU preprocessing); the next stage is
# submitted with --dependency=afterok on this one's id (sbatch --parsable).
# man sbatch: --parsable "Outputs only the job id number"; -d "afterok:job_id".
#SBATCH -J prep
#SBATCH -p cpu
#SBATCH -c 4
#SBATCH -t 10
#SBATCH -o prep-%j.out

sleep 2
echo "tokens=1000" >prep.done
echo "corpus: 22 ok"
