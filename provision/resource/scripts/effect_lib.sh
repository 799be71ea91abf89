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
	*)
		printf 'gpuform: no such effect: %s\n' "$1" >&2
		return 1
		;;
	esac
}
