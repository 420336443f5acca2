# conda.sh - stand-in for miniconda's etc/profile.d/conda.sh: defines `conda`, whose
# `activate ENV` sets CONDA_DEFAULT_ENV and CONDA_PREFIX as the real one does (no PATH
# change: the environment's python is bin/python of the corpus).
conda() {
    case $1 in
    activate) export CONDA_DEFAULT_ENV=${2:-base} CONDA_PREFIX=$CONDA_ROOT/envs/${2:-base} ;;
    deactivate) unset CONDA_DEFAULT_ENV CONDA_PREFIX ;;
    *) echo "conda: $1: not in this stand-in" >&2; return 1 ;;
    esac
}
