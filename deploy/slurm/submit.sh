#!/bin/bash
# Submits a sharded ac3 run to Slurm: the shard array, then the merge as a
# job that starts only once every shard has succeeded.
#
#   deploy/slurm/submit.sh CONFIG RUN_DB SHARDS
#
# RUN_DB is the run.db the config names (the merged run; the shards sit next
# to it). Extra sbatch options (a partition, an account) go in SBATCH_*
# environment variables, e.g. SBATCH_PARTITION=cpu SBATCH_ACCOUNT=lab.
set -euo pipefail
if [[ $# -ne 3 ]]; then
	echo "usage: $0 CONFIG RUN_DB SHARDS" >&2
	exit 1
fi
here=$(cd "$(dirname "$0")" && pwd)
config=$(realpath "$1")
db=$(realpath -m "$2")
n=$3
vars=ALL,AC3_CONFIG=$config,AC3_SHARDS=$n,AC3_RUN_DB=$db

array=$(sbatch --parsable --array="0-$((n - 1))" --export="$vars" "$here/shard.sbatch")
array=${array%%;*} # "id;cluster" on a federation
merge=$(sbatch --parsable --dependency="afterok:$array" --export="$vars" "$here/merge.sbatch")
echo "shards: job array $array ($n tasks); merge: job ${merge%%;*} after it"
echo "watch: squeue -u $USER; results: the config's run.out once job ${merge%%;*} ends"
