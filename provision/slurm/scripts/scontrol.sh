# shellcheck shell=sh
# scontrol.sh NODE ACTION [VALUE]
#
# Reads or changes the Slurm node NODE ("": this host's short name,
# Slurm's default NodeName) with scontrol, over whatever transport reached
# this shell: the node itself, a Slurm client host, or the health-check
# mode's own machine. It prints "node=NAME" first. ACTION is one of:
#   show     scontrol -o show node, then "--- jobs" and the node's running
#            and completing jobs (squeue), when squeue is there
#   nodes    scontrol -o show nodes
#   drain    drain NODE with the reason VALUE
#   reason   set NODE's reason to VALUE
#   comment  set NODE's comment to VALUE ("" clears it)
#   resume   return NODE to service
#   reboot   reboot NODE once its jobs are done, then resume it; VALUE is
#            the reason shown meanwhile
# scontrol is looked for in the standard places too: slurmd runs its
# HealthCheckProgram with no PATH at all. Without it the script says so
# and exits EXIT_NOT_FOUND.
name=$1 action=$2 value=${3-}
PATH="${PATH:+$PATH:}/usr/bin:/usr/local/bin:/opt/slurm/bin:/usr/sbin:/sbin:/bin"
export PATH
command -v scontrol >/dev/null 2>&1 || {
	echo "scontrol is not installed on $(hostname 2>/dev/null): drain = \"slurm\" needs the Slurm client there (or rollout { slurm_client = HOST })" >&2
	exit "$EXIT_NOT_FOUND"
}
if [ -n "$name" ]; then n=$name; else n=$(hostname -s 2>/dev/null || hostname); fi
printf 'node=%s\n' "$n"
case $action in
show)
	scontrol -o show node "$n" || exit
	echo '--- jobs'
	if command -v squeue >/dev/null 2>&1; then squeue -h -w "$n" -t running,completing -o '%i %T' 2>/dev/null || true; fi
	;;
nodes) scontrol -o show nodes ;;
drain) scontrol update NodeName="$n" State=DRAIN Reason="$value" ;;
reason) scontrol update NodeName="$n" Reason="$value" ;;
comment) scontrol update NodeName="$n" Comment="$value" ;;
resume) scontrol update NodeName="$n" State=RESUME ;;
reboot) scontrol reboot ASAP nextstate=RESUME reason="$value" "$n" ;;
*) fail "scontrol.sh: unknown action $action" ;;
esac
