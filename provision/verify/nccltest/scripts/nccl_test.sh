# shellcheck shell=sh
# nccl_test.sh SECONDS PROGRAM [NAME=VALUE...] PROGRAM [ARG...]
#
# Runs an nccl-tests command line (its environment assignments, then the
# program and its arguments, each one word) through env(1) under
# timeout(1): SECONDS, then KILL 10 seconds later (timeout's status, 124
# or 137, when it fired). PROGRAM, first, is the program's name alone:
# when no command of that name is found it says "gpuform: PROGRAM: command
# not found" and exits EXIT_NOT_FOUND, so a 127 without those words is
# timeout(1), env(1) or a program the test runs going missing.
seconds=$1 program=$2
shift 2
command -v "$program" >/dev/null 2>&1 || {
	echo "gpuform: $program: command not found" >&2
	exit "$EXIT_NOT_FOUND"
}
exec timeout -k 10 "$seconds" env "$@"
