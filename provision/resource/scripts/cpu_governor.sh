# shellcheck shell=sh
# cpu_governor.sh GOVERNOR: sets the cpufreq governor of every CPU that
# has one to GOVERNOR, until the next boot. Paths are resolved inside the
# root by facts' resolve.sh (resolve_dir, resolve_path), which the step is sent with.
# shellcheck disable=SC2154 # _r is resolve_dir's and resolve_path's (provision/facts/resolve.sh)
set -eu
governor=$1
if [ -n "$R" ]; then R=$(cd -P -- "$R" && pwd -P); fi
resolve_dir /sys/devices/system/cpu || exit 0
for c in "$_r"/cpu[0-9]*; do
	{ resolve_path "/sys/devices/system/cpu/${c##*/}/cpufreq/scaling_governor" && [ -f "$_r" ]; } || continue
	printf '%s\n' "$governor" >"$_r"
done
