# shellcheck shell=sh
# load.sh SECONDS EVERY_MS QUERY: the burn-in's sustained load. Runs DCGM's
# load generator (dcgmproftester13, 12 or 11, for CUDA 13, 12 or 11) on
# every GPU for SECONDS with tensor-core GEMMs (field 1004); the flags
# are those of DCGM's reference page (dcgmproftester<cuda-major> [-t
# FIELDS] [-d SECONDS] [--no-dcgm-validation]), and samples
# every GPU with nvidia-smi --query-gpu=QUERY every EVERY_MS milliseconds
# while it runs; the samples are standard output, the generator's own
# output is discarded. Exits EXIT_NOT_FOUND without nvidia-smi or a load
# generator, else the generator's status.
set -eu
seconds=$1 every=$2 query=$3
command -v nvidia-smi >/dev/null 2>&1 || exit "$EXIT_NOT_FOUND"
gen=
for g in dcgmproftester13 dcgmproftester12 dcgmproftester11; do
	if command -v "$g" >/dev/null 2>&1; then
		gen=$g
		break
	fi
done
[ -n "$gen" ] || exit "$EXIT_NOT_FOUND"
"$gen" --no-dcgm-validation -t 1004 -d "$seconds" >/dev/null 2>&1 &
load=$!
nvidia-smi --query-gpu="$query" --format=csv,noheader,nounits -lms "$every" &
sampler=$!
rc=0
wait "$load" || rc=$?
kill "$sampler" 2>/dev/null || :
wait "$sampler" 2>/dev/null || :
exit "$rc"
