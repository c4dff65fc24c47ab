# Sourced by the MPI test scripts: their arguments (INFERSCALE MPIEXEC WORK_DIR), a fresh work
# folder, the launcher as an array (Open MPI: --oversubscribe, more ranks than cores), fail().
set -euo pipefail
bin=$1 mpiexec=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
mpi=("$mpiexec")
"$mpiexec" --version 2>&1 | grep -qiE "open ?(mpi|rte)" && mpi+=(--oversubscribe)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
