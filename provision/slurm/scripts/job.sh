# shellcheck shell=sh
# job.sh JOBID
#
# Prints scontrol -o show job JOBID: the job's one line (JobState=,
# StartTime=, …). scontrol is looked for in the standard places too:
# slurmd runs its prolog and epilog with no PATH at all. Without it the
# script says so and exits EXIT_NOT_FOUND.
job=$1
PATH="${PATH:+$PATH:}/usr/bin:/usr/local/bin:/opt/slurm/bin:/usr/sbin:/sbin:/bin"
export PATH
command -v scontrol >/dev/null 2>&1 || {
	echo "scontrol is not installed on $(hostname 2>/dev/null)" >&2
	exit "$EXIT_NOT_FOUND"
}
exec scontrol -o show job "$job"
