#!/bin/bash
# Pattern: HPC software stack by environment modules; `module` is a shell function
# exported by the login shell (Lmod, Environment Modules).
# man sbatch: --export "ALL ... all of the user's environment will be loaded" (the
# default); bash passes exported functions in the environment.
#SBATCH -J mod-env
#SBATCH -p cpu
#SBATCH -c 2
#SBATCH -t 10
#SBATCH -o %x-%j.out

module purge
module load gcc/12.2.0 openmpi/4.1.5 cuda/12.1
module list
echo "corpus: 19 ok modules=$LOADEDMODULES"
