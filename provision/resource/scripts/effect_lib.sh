# shellcheck shell=sh
# apply_effect, the commands that put a file's change into effect, each
# one named action (provision/resource's effect* constants): file_write.sh
# runs one after the rename and puts the previous file back when it fails;
# apply_effect.sh runs one as a step of its own after a removal. Paths are
# as the node sees them, under "$R".

# apply_effect ACTION [ARG...]: runs ACTION's command and returns its
# status (1 for an ACTION it does not know):
#   update-grub                 update-grub
#   grubby REMOVE ADD           grubby --update-kernel=ALL, with
#                               --remove-args=REMOVE and --args=ADD each
#                               when not empty
#   try-restart UNIT            systemctl try-restart UNIT
#   daemon-reload               systemctl daemon-reload
#   make-executable PATH        chmod 0755 PATH
#   unlink-and-reload PATH      rm -f PATH && systemctl daemon-reload
#   create-imex-channel MAJOR   mknod /dev/nvidia-caps-imex-channels/channel0
#                               (c MAJOR 0, mode 0666) when it is missing
#                               and the running driver registered MAJOR for
#                               nvidia-caps-imex-channels in /proc/devices
apply_effect() {
	case $1 in
	update-grub) update-grub ;;
	grubby)
		effect_remove=$2 effect_add=$3
		set -- --update-kernel=ALL
		if [ -n "$effect_remove" ]; then set -- "$@" "--remove-args=$effect_remove"; fi
		if [ -n "$effect_add" ]; then set -- "$@" "--args=$effect_add"; fi
		grubby "$@"
		;;
	try-restart) systemctl try-restart "$2" ;;
	daemon-reload) systemctl daemon-reload ;;
	make-executable) chmod 0755 "$R$2" ;;
	unlink-and-reload) rm -f "$R$2" && systemctl daemon-reload ;;
	create-imex-channel)
		# The IMEX guide's own steps (mkdir, mknod from /proc/devices'
		# major), so the channel need not wait for the boot that runs the
		# tmpfiles line; a major that changed since the plan fails.
		effect_major=$(awk '$2 == "nvidia-caps-imex-channels" { print $1; exit }' "$R/proc/devices" 2>/dev/null)
		if [ "$effect_major" != "$2" ]; then
			printf 'gpuform: /proc/devices gives nvidia-caps-imex-channels major %s, the plan read %s\n' "${effect_major:-none}" "$2" >&2
			return 1
		fi
		if [ -e "$R/dev/nvidia-caps-imex-channels/channel0" ] || [ -h "$R/dev/nvidia-caps-imex-channels/channel0" ]; then
			return 0
		fi
		mkdir -p "$R/dev/nvidia-caps-imex-channels" &&
			mknod -m 0666 "$R/dev/nvidia-caps-imex-channels/channel0" c "$2" 0
		;;
	*)
		printf 'gpuform: no such effect: %s\n' "$1" >&2
		return 1
		;;
	esac
}
