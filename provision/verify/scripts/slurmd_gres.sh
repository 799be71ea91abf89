# shellcheck shell=sh
# slurmd_gres.sh: runs "slurmd -G" (the GRES slurmd detects, on standard
# output with its errors) from the places Slurm's packages put it. Without
# slurmd it says so and exits EXIT_NOT_FOUND.
PATH="${PATH:+$PATH:}/usr/sbin:/usr/local/sbin:/opt/slurm/sbin:/usr/bin:/bin"
export PATH
command -v slurmd >/dev/null 2>&1 || {
	echo "slurmd is not installed" >&2
	exit "$EXIT_NOT_FOUND"
}
exec slurmd -G 2>&1
