# shellcheck shell=sh
# gpu_bus.sh: counts the NVIDIA VGA and 3D controllers on the PCI bus
# (under the root, as the facts probe reads) and says whether nvidia-smi
# is installed, so that a node where neither NVML path worked is told why.
# Prints "gpus N" and "smi yes" or "smi no".
n=0
for d in "$R"/sys/bus/pci/devices/*; do
	read -r v <"$d/vendor" 2>/dev/null || continue
	read -r c <"$d/class" 2>/dev/null || continue
	case "$v:$c" in 0x10de:0x0300* | 0x10de:0x0302*) n=$((n + 1)) ;; esac
done
echo "gpus $n"
if command -v nvidia-smi >/dev/null 2>&1; then echo "smi yes"; else echo "smi no"; fi
