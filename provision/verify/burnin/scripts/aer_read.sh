# shellcheck shell=sh
# aer_read.sh: prints the AER totals of every NVIDIA PCIe function under
# the root's /sys/bus/pci/devices, one line each: "ADDRESS KIND NAME COUNT"
# (KIND correctable, nonfatal or fatal; NAME the kernel's TOTAL_ERR_*
# line). A function without AER files prints nothing for them.
set -eu
for d in "$R"/sys/bus/pci/devices/*; do
	read -r v <"$d/vendor" 2>/dev/null || continue
	[ "$v" = 0x10de ] || continue
	for k in correctable nonfatal fatal; do
		f="$d/aer_dev_$k"
		[ -r "$f" ] || continue
		while read -r name n; do
			case $name in TOTAL_ERR_*) echo "${d##*/} $k $name $n" ;; esac
		done <"$f"
	done
done
