# shellcheck shell=sh
# step_lock.sh LOCK STEP_LOCK
#
# Goes before every step's script, in the step's own shell. It checks that
# this apply still holds LOCK (its holder may have died with the
# controller just before the step was started) and takes STEP_LOCK on
# descriptor 8, which every process of the step inherits; the line it
# writes there ("pid\t$GPUFORM_STEP\t$GPUFORM_LOCK_OWNER") names the step
# for an apply that finds it still running. The step's own pid is read
# with sh -c 'echo $PPID', outside any pipeline, because $$ is the parent
# shell's in a subshell (the SSH transport runs the script in one). It
# leaves no variable and no positional parameter behind for the step.
L="$R$1" S="$R$2"
set --
if [ "$(head -n 1 -- "$L" 2>/dev/null)" != "$GPUFORM_LOCK_OWNER" ]; then
	echo "gpuform: this apply no longer holds $L; the step was not started" >&2
	exit "$EXIT_BUSY"
fi
exec 8>>"$S" || exit "$EXIT_OS_ERROR"
if ! flock -n 8; then
	echo "gpuform: another step holds $S: $(head -n 1 -- "$S" 2>/dev/null)" >&2
	exit "$EXIT_BUSY"
fi
P=$(sh -c 'echo "$PPID"')
printf '%s\t%s\t%s\n' "$P" "$GPUFORM_STEP" "$GPUFORM_LOCK_OWNER" | tee -- "$S" >/dev/null || exit "$EXIT_OS_ERROR"
unset R L S P
