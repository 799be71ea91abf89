# shellcheck shell=sh
# Shared helpers for the gpuform simulated-node stand-ins; sourced, not run.
#
# Every stand-in records its command line in $GPUFORM_ROOT/var/log/gpuform-sim/calls.log,
# can be made to fail for fault tests (GPUFORM_SIM_FAIL=tool[,tool] in the
# environment, or a file var/lib/gpuform-sim/fail/<tool> in the root whose
# content is the error message), can be made slow for lock and timeout tests
# (a file var/lib/gpuform-sim/sleep/<tool> holding seconds to sleep first),
# and changes files under $GPUFORM_ROOT the way the real tool changes a node.
if [ -z "${GPUFORM_ROOT:-}" ] || [ ! -f "$GPUFORM_ROOT/.gpuform-sim-root" ]; then
	echo "${0##*/}: gpuform-sim stand-in run outside a simulated root (GPUFORM_ROOT=${GPUFORM_ROOT:-unset})" >&2
	exit 127
fi
R=$GPUFORM_ROOT
SIM=$R/var/lib/gpuform-sim
TOOL=${0##*/}

sim_begin() {
	# A stand-in run by another stand-in (reboot applying sysctl.d, dpkg
	# delegating to dpkg-query) is part of that call: not logged again and
	# not subject to fault injection.
	if [ "${GPUFORM_SIM_NESTED:-}" = 1 ]; then
		return 0
	fi
	[ -d "$R/var/log/gpuform-sim" ] || mkdir -p "$R/var/log/gpuform-sim"
	printf '%s\n' "$TOOL $*" >>"$R/var/log/gpuform-sim/calls.log"
	case ",${GPUFORM_SIM_FAIL:-}," in
	*",$TOOL,"*)
		echo "$TOOL: simulated failure (GPUFORM_SIM_FAIL)" >&2
		exit 100
		;;
	esac
	if [ -f "$SIM/fail/$TOOL" ]; then
		msg=$(cat "$SIM/fail/$TOOL")
		echo "${msg:-$TOOL: simulated failure ($SIM/fail/$TOOL)}" >&2
		exit 100
	fi
	if [ -f "$SIM/sleep/$TOOL" ]; then
		sleep "$(cat "$SIM/sleep/$TOOL")"
	fi
}

die() {
	code=$1
	shift
	echo "$*" >&2
	exit "$code"
}

# sim_arch prints the Debian architecture of the simulated node.
sim_arch() {
	case $(cat "$R/proc/sys/kernel/arch" 2>/dev/null) in
	aarch64) echo arm64 ;;
	*) echo amd64 ;;
	esac
}

# repo_versions NAME prints the versions of NAME in the node's repository, in
# file order (the last one is the newest, as apt would pick).
repo_versions() {
	awk -v p="$1" '$1 == p { print $2 }' "$SIM/repo.txt" 2>/dev/null
}

# reboot_pending WHAT: record a change that takes effect at the next boot.
reboot_pending() {
	mkdir -p "$SIM" "$R/var/run"
	grep -v "^${1%% *} " "$SIM/pending-reboot" 2>/dev/null >"$SIM/pending-reboot.new"
	printf '%s\n' "$1" >>"$SIM/pending-reboot.new"
	mv "$SIM/pending-reboot.new" "$SIM/pending-reboot"
}

# unit_file UNIT prints the path (under the root) of the unit's file.
unit_file() {
	for d in etc/systemd/system lib/systemd/system usr/lib/systemd/system; do
		if [ -f "$R/$d/$1" ]; then
			echo "/$d/$1"
			return 0
		fi
	done
	return 1
}

# add_unit UNIT DESCRIPTION EXEC: install a unit file, as a package would.
add_unit() {
	d=lib/systemd/system
	[ -d "$R/usr/lib/systemd/system" ] && [ ! -d "$R/lib/systemd/system" ] && d=usr/lib/systemd/system
	mkdir -p "$R/$d"
	printf '[Unit]\nDescription=%s\n\n[Service]\nExecStart=%s\n\n[Install]\nWantedBy=multi-user.target\n' "$2" "$3" >"$R/$d/$1"
}

# package_installed NAME VERSION: side effects of installing a package that
# the probe can see: unit files, CUDA toolkit files, driver changes that
# wait for a reboot.
package_installed() {
	case $1 in
	nvidia-fabricmanager-*)
		add_unit nvidia-fabricmanager.service "NVIDIA fabric manager service" "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg"
		;;
	datacenter-gpu-manager-4-core)
		add_unit nvidia-dcgm.service "NVIDIA DCGM service" "/usr/bin/nv-hostengine -n --service-account nvidia-dcgm"
		;;
	cuda-drivers | cuda-drivers-[0-9]* | nvidia-driver | nvidia-driver-[0-9]* | nvidia-open | nvidia-open-[0-9]*)
		v=${2#*:}
		v=${v%%-*}
		flavor=proprietary
		case $1 in nvidia-open* | *-open) flavor=open ;; esac
		add_unit nvidia-persistenced.service "NVIDIA Persistence Daemon" "/usr/bin/nvidia-persistenced --verbose"
		# The new kernel module is loaded at the next boot; until then
		# /proc/driver/nvidia/version keeps the running driver.
		reboot_pending "driver $v $flavor"
		if [ -f "$R/var/lib/dpkg/status" ]; then
			printf '*** System restart required ***\n' >"$R/var/run/reboot-required"
		fi
		;;
	nvslurm-plugin-pyxis)
		p=$(pyxis_plugin)
		mkdir -p "$R${p%/*}"
		printf '\177ELF' >"$R$p"
		;;
	cuda-toolkit-[0-9]*)
		v=${2%%-*}
		mm=${1#cuda-toolkit-}
		mm=$(echo "$mm" | tr - .)
		mkdir -p "$R/usr/local/cuda-$mm" "$R/etc/alternatives"
		printf '{\n   "cuda" : {\n      "name" : "CUDA SDK",\n      "version" : "%s"\n   }\n}\n' "$v" >"$R/usr/local/cuda-$mm/version.json"
		ln -sfn "/usr/local/cuda-$mm" "$R/etc/alternatives/cuda"
		ln -sfn /etc/alternatives/cuda "$R/usr/local/cuda"
		;;
	esac
	# A measurement tool the profile packages (usr/lib/gpuform-sim/shelf/
	# PACKAGE/, see sim.BenchPackagesFile): the package puts its
	# stand-ins on PATH.
	# (ls, not a glob: the package manager stand-ins run with set -f.)
	if [ -d "$R/usr/lib/gpuform-sim/shelf/$1" ]; then
		# shellcheck disable=SC2045 # ls on purpose, as said above
		for f in $(ls "$R/usr/lib/gpuform-sim/shelf/$1"); do
			cp -p "$R/usr/lib/gpuform-sim/shelf/$1/$f" "$R/usr/lib/gpuform-sim/bin/$f"
		done
	fi
}

# pyxis_plugin prints where pyxis's package puts its plugin: libdir
# /usr/lib/<multiarch> in the deb, %{_libdir} in the rpm.
pyxis_plugin() {
	if [ -f "$R/var/lib/dpkg/status" ]; then
		echo "/usr/lib/$(cat "$R/proc/sys/kernel/arch" 2>/dev/null || echo x86_64)-linux-gnu/slurm/spank_pyxis.so"
	else
		echo /usr/lib64/slurm/spank_pyxis.so
	fi
}

# package_removed NAME: undo what package_installed created.
package_removed() {
	if [ -d "$R/usr/lib/gpuform-sim/shelf/$1" ]; then
		# shellcheck disable=SC2045 # ls on purpose, as said above
		for f in $(ls "$R/usr/lib/gpuform-sim/shelf/$1"); do
			rm -f "$R/usr/lib/gpuform-sim/bin/$f"
		done
	fi
	case $1 in
	nvidia-fabricmanager-*) rm -f "$R/lib/systemd/system/nvidia-fabricmanager.service" "$R/usr/lib/systemd/system/nvidia-fabricmanager.service" ;;
	datacenter-gpu-manager-4-core) rm -f "$R/lib/systemd/system/nvidia-dcgm.service" "$R/usr/lib/systemd/system/nvidia-dcgm.service" ;;
	nvslurm-plugin-pyxis) rm -f "$R$(pyxis_plugin)" ;;
	cuda-toolkit-[0-9]*)
		mm=$(echo "${1#cuda-toolkit-}" | tr - .)
		rm -rf "$R/usr/local/cuda-$mm"
		;;
	esac
}

# write_driver VERSION FLAVOR: make VERSION the running driver, as loading
# its kernel module does.
write_driver() {
	mkdir -p "$R/proc/driver/nvidia"
	arch=$(cat "$R/proc/sys/kernel/arch" 2>/dev/null || echo x86_64)
	if [ "$2" = open ]; then
		printf 'NVRM version: NVIDIA UNIX Open Kernel Module for %s  %s  Release Build  (dvs-builder@gpuform-sim)  build date not modelled\nGCC version:  not modelled\n' "$arch" "$1"
	else
		printf 'NVRM version: NVIDIA UNIX %s Kernel Module  %s  build date not modelled\nGCC version:  not modelled\n' "$arch" "$1"
	fi >"$R/proc/driver/nvidia/version"
}

# load_module NAME: add a module to /proc/modules as modprobe would. The
# NVIDIA core module loads only when no other NVIDIA driver is running (a
# newly installed driver on a node without one); its companions need it.
load_module() {
	m=$(echo "$1" | tr - _)
	if grep -q "^$m " "$R/proc/modules" 2>/dev/null; then
		return 0
	fi
	case $m in
	nvidia)
		line=$(grep '^driver ' "$SIM/pending-reboot" 2>/dev/null)
		[ -n "$line" ] || return 1
		# shellcheck disable=SC2086 # the line's fields on purpose
		set -- $line
		write_driver "$2" "$3"
		grep -v '^driver ' "$SIM/pending-reboot" >"$SIM/pending-reboot.new"
		mv "$SIM/pending-reboot.new" "$SIM/pending-reboot"
		;;
	nvidia_*)
		[ -f "$R/proc/driver/nvidia/version" ] || return 1
		;;
	esac
	printf '%s 16384 0 - Live 0x0000000000000000\n' "$m" >>"$R/proc/modules"
}

# oci_archive FILE checks that FILE (a path in the root, or - for standard
# input) is the OCI archive a runtime loads: oci-layout, an index.json naming one image by
# the io.containerd.image.name annotation, and every blob that image
# needs (an index's child of the node's platform present with its config
# and layers), each under its own sha256. It sets archive_name and
# archive_digest (the descriptor's), or dies as a load of a broken archive
# fails.
oci_archive() {
	x=$(mktemp -d) || die 1 "mktemp failed"
	f=$R$1
	[ "$1" != - ] || f=-
	tar -xf "$f" -C "$x" 2>/dev/null || {
		rm -rf "$x"
		die 1 "$TOOL: $1 is not a tar archive"
	}
	if [ ! -f "$x/oci-layout" ] || [ ! -f "$x/index.json" ]; then
		rm -rf "$x"
		die 1 "$TOOL: $1 is not an OCI archive (no oci-layout or index.json)"
	fi
	for b in "$x"/blobs/sha256/*; do
		[ -f "$b" ] || continue
		[ "$(sha256sum <"$b" | cut -c1-64)" = "${b##*/}" ] || {
			rm -rf "$x"
			die 1 "$TOOL: $1: blob ${b##*/} does not match its digest"
		}
	done
	archive_name=$(sed -n 's/.*"io.containerd.image.name":"\([^"]*\)".*/\1/p' "$x/index.json")
	archive_digest=$(grep -o '"digest":"sha256:[0-9a-f]*"' "$x/index.json" | head -n 1 | cut -d'"' -f4)
	if [ -z "$archive_name" ] || [ -z "$archive_digest" ] || [ ! -f "$x/blobs/sha256/${archive_digest#sha256:}" ]; then
		rm -rf "$x"
		die 1 "$TOOL: $1: index.json names no image whose manifest is in the archive"
	fi
	m=$x/blobs/sha256/${archive_digest#sha256:}
	if grep -q '"manifests"' "$m"; then
		child=
		# shellcheck disable=SC2013 # a digest is one word
		for c in $(grep -o '"digest":"sha256:[0-9a-f]*"' "$m" | cut -d'"' -f4); do
			if [ -f "$x/blobs/sha256/${c#sha256:}" ]; then child=$c; fi
		done
		[ -n "$child" ] || {
			rm -rf "$x"
			die 1 "$TOOL: $1: none of the index's images is in the archive"
		}
		m=$x/blobs/sha256/${child#sha256:}
	fi
	# shellcheck disable=SC2013 # a digest is one word
	for c in $(grep -o '"digest":"sha256:[0-9a-f]*"' "$m" | cut -d'"' -f4); do
		[ -f "$x/blobs/sha256/${c#sha256:}" ] || {
			rm -rf "$x"
			die 1 "$TOOL: $1: the image's blob $c is not in the archive"
		}
	done
	rm -rf "$x"
}
