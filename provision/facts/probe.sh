# gpuform facts probe, format v1. POSIX sh; reads only.
#
# Everything is read under the root prefix $GPUFORM_ROOT (or $1), "" or "/"
# meaning the live system. Output is a stream of records, each introduced by
# a marker line "@@<nonce> <kind> <path>", where the nonce comes from
# $GPUFORM_PROBE_NONCE so that file contents cannot forge a marker:
#   file PATH      the file's bytes follow, then "\n@@<nonce> eof"
#   missing PATH   the path does not exist
#   unreadable PATH  the file exists but this user cannot read it
#   link PATH      the next line is the symlink's target
#   exists PATH    the path exists (used for directory entries)
#   cmd NAME RC    a command's output follows, then "\n@@<nonce> eof"
#   managed PATH   PATH is a file gpuform wrote (its file record follows)
#   root PATH      the root prefix in use
# The first line is "@@gpuform-probe v1 begin <nonce>" and the last
# "@@<nonce> end", so a truncated stream is detectable.
N=${GPUFORM_PROBE_NONCE:-0}
R=${GPUFORM_ROOT:-${1:-}}
while [ "${R%/}" != "$R" ]; do R=${R%/}; done
# The root's physical path, so that links resolved with cd -P (s below)
# still start with it.
if [ -n "$R" ]; then
	R=$(cd -P "$R" 2>/dev/null && pwd -P) || R=${GPUFORM_ROOT:-${1:-}}
fi
M="@@$N"
LC_ALL=C
export LC_ALL
printf '@@gpuform-probe v1 begin %s\n' "$N"
printf '%s root %s\n' "$M" "${R:-/}"

# rp PATH sets _r to where PATH really is under the root. Under a root
# prefix an absolute symlink (/etc/os-release -> /usr/lib/os-release) must
# resolve inside the root, not on the machine running the probe.
rp() {
	_r=$R$1
	_i=0
	while [ -n "$R" ] && [ -h "$_r" ] && [ $_i -lt 8 ]; do
		_t=$(readlink "$_r" 2>/dev/null) || break
		case $_t in
		/*) _r=$R$_t ;;
		*) _r=${_r%/*}/$_t ;;
		esac
		_i=$((_i + 1))
	done
}

f() {
	for _p in "$@"; do
		rp "$_p"
		if [ -f "$_r" ] && [ -r "$_r" ]; then
			printf '%s file %s\n' "$M" "$_p"
			# cat without the fork: every line as read, and a last line
			# without its newline printed without one, as cat would.
			_l=
			while IFS= read -r _l; do
				printf '%s\n' "$_l"
				_l=
			done <"$_r" 2>/dev/null
			[ -n "$_l" ] && printf '%s' "$_l"
			printf '\n%s eof\n' "$M"
		else
			nr "$_p"
		fi
	done
}

# nr PATH: the record for a file f or g could not read; _r is set.
nr() {
	if [ -f "$_r" ]; then
		printf '%s unreadable %s\n' "$M" "$1"
	else
		printf '%s missing %s\n' "$M" "$1"
	fi
}

# v PATH...: f for one-line files (sysfs attributes, sysctls), read with the
# shell's own read so that a node with hundreds of CPUs costs no forks. A
# file that is empty, unreadable or lacks its newline goes through f.
v() {
	for _p in "$@"; do
		rp "$_p"
		if [ -f "$_r" ] && IFS= read -r _v 2>/dev/null <"$_r"; then
			printf '%s file %s\n%s\n\n%s eof\n' "$M" "$_p" "$_v" "$M"
		else
			f "$_p"
		fi
	done
}

# g PATTERN PATH: only the lines of PATH matching the extended regexp, for
# files that are large on real nodes (dpkg status, cpuinfo, mounts).
g() {
	rp "$2"
	if [ -f "$_r" ] && [ -r "$_r" ]; then
		printf '%s file %s\n' "$M" "$2"
		grep -E "$1" "$_r" 2>/dev/null
		printf '\n%s eof\n' "$M"
	else
		nr "$2"
	fi
}

l() {
	for _p in "$@"; do
		if [ -h "$R$_p" ]; then
			_t=$(readlink "$R$_p" 2>/dev/null) && printf '%s link %s\n%s\n' "$M" "$_p" "$_t"
		fi
	done
}

# s PATH...: l for sysfs links to directories, resolved with cd -P instead
# of readlink: readlink is one exec per link, and a node has hundreds of
# PCI and RDMA links. The printed target is the physical path under the
# root; the parser reads only its path components.
s() {
	for _p in "$@"; do
		[ -h "$R$_p" ] || continue
		if cd -P "$R$_p" 2>/dev/null; then
			printf '%s link %s\n%s\n' "$M" "$_p" "${PWD#"$R"}"
		else
			l "$_p"
		fi
	done
	cd /
}

# e DIR/GLOB...: list the entries that exist, relative to the root.
e() {
	for _p in "$@"; do
		if [ -e "$_p" ] || [ -h "$_p" ]; then
			printf '%s exists %s\n' "$M" "${_p#"$R"}"
		fi
	done
}

c() {
	_n=$1
	shift
	_o=$("$@" 2>&1)
	_rc=$?
	printf '%s cmd %s %s\n%s\n%s eof\n' "$M" "$_n" "$_rc" "$_o" "$M"
}

# Identity and kernel.
f /etc/os-release
rp /etc/os-release
[ -f "$_r" ] || f /usr/lib/os-release
v /proc/sys/kernel/osrelease /proc/cmdline
f /proc/driver/nvidia/version /proc/modules
if [ -f "$R/proc/sys/kernel/arch" ]; then
	v /proc/sys/kernel/arch
elif [ -z "$R" ]; then
	c uname-m uname -m
fi
f /var/run/reboot-required

# Packages: dpkg status is large on real nodes, keep the fields parsed.
g '^(Package|Status|Version|Architecture):|^$' /var/lib/dpkg/status
f /etc/dnf/plugins/versionlock.list
if command -v rpm >/dev/null 2>&1 && { [ -e "$R/var/lib/rpm" ] || [ -e "$R/usr/lib/sysimage/rpm" ]; }; then
	c rpm rpm --root "${R:-/}" -qa --qf '%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}\t%{ARCH}\n'
fi

# CUDA toolkits and container runtime configuration.
for d in "$R"/usr/local/cuda*; do
	# /usr/local/cuda is usually a symlink (via /etc/alternatives on
	# Debian) whose absolute target only resolves on the live root.
	[ -d "$d" ] || [ -h "$d" ] || continue
	d=${d#"$R"}
	if [ -h "$R$d" ]; then
		l "$d"
	else
		f "$d/version.json"
	fi
done
l /etc/alternatives/cuda
f /etc/docker/daemon.json /etc/nvidia-container-runtime/config.toml /etc/nccl.conf

# Memory, /dev/shm, sysctls, limits, hugepages.
g '^(MemTotal|HugePages_Total|HugePages_Free|Hugepagesize):' /proc/meminfo
g '^[^ ]+ /dev/shm ' /proc/mounts
g '^[[:space:]]*[^#[:space:]]+[[:space:]]+/dev/shm[[:space:]]' /etc/fstab
v /sys/kernel/mm/transparent_hugepage/enabled
for s in kernel/numa_balancing vm/swappiness vm/overcommit_memory vm/max_map_count \
	vm/zone_reclaim_mode vm/nr_hugepages kernel/shmmax kernel/shmall kernel/pid_max \
	net/core/rmem_max net/core/wmem_max net/core/netdev_max_backlog \
	net/ipv4/tcp_rmem net/ipv4/tcp_wmem fs/file-max; do
	[ -f "$R/proc/sys/$s" ] && v "/proc/sys/$s"
done
f /etc/security/limits.conf
for p in "$R"/etc/security/limits.d/*.conf; do
	[ -f "$p" ] && f "${p#"$R"}"
done

# CPU and NUMA.
g '^(processor|model name|physical id|CPU implementer|CPU part)[[:space:]]*:' /proc/cpuinfo
v /sys/devices/system/cpu/online
# Arm cpuinfo has no "physical id"; count packages from sysfs topology there.
if ! grep -q '^physical id' "$R/proc/cpuinfo" 2>/dev/null; then
	# Only the distinct package ids matter (the parser counts sockets).
	_seen=" "
	for p in "$R"/sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id; do
		[ -f "$p" ] && IFS= read -r _x 2>/dev/null <"$p" || continue
		case $_seen in *" $_x "*) continue ;; esac
		_seen="$_seen$_x "
		v "${p#"$R"}"
	done
fi
# Only the distinct governors matter: a 224-CPU node would otherwise send
# 224 identical records.
_seen=" "
for p in "$R"/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do
	[ -f "$p" ] && IFS= read -r _x 2>/dev/null <"$p" || continue
	case $_seen in *" $_x "*) continue ;; esac
	_seen="$_seen$_x "
	v "${p#"$R"}"
done
for p in "$R"/sys/devices/system/node/node[0-9]*; do
	[ -d "$p" ] || continue
	p=${p#"$R"}
	v "$p/cpulist" "$p/distance"
	g 'MemTotal' "$p/meminfo"
done

# systemd units. On a live root ask systemctl; under a root prefix read the
# unit files, the .wants symlinks that "enable" creates, and the invocation
# records systemd keeps in /run/systemd/units for started units.
for u in nvidia-persistenced.service nvidia-fabricmanager.service nvidia-dcgm.service \
	docker.service containerd.service; do
	if [ -z "$R" ] && command -v systemctl >/dev/null 2>&1; then
		c "is-enabled:$u" systemctl is-enabled "$u"
		c "is-active:$u" systemctl is-active "$u"
	else
		e "$R/etc/systemd/system/$u" "$R/lib/systemd/system/$u" "$R/usr/lib/systemd/system/$u" \
			"$R"/etc/systemd/system/*.wants/"$u" "$R/run/systemd/units/invocation:$u"
		l "/etc/systemd/system/$u"
	fi
done

# PCI devices of the classes gpuform cares about.
for p in "$R"/sys/bus/pci/devices/*; do
	[ -e "$p/class" ] || continue
	read -r cls 2>/dev/null <"$p/class" || continue
	case $cls in
	0x0300* | 0x0302* | 0x0207* | 0x0200*) ;;
	0x0680*)
		read -r ven 2>/dev/null <"$p/vendor"
		[ "$ven" = 0x10de ] || continue
		;;
	*) continue ;;
	esac
	q=${p#"$R"}
	s "$q" "$q/driver"
	for a in class vendor device subsystem_vendor subsystem_device numa_node \
		current_link_speed max_link_speed current_link_width max_link_width; do
		[ -f "$p/$a" ] && v "$q/$a"
	done
	e "$p"/net/* "$p"/infiniband/*
done

# RDMA devices, their ports and network interfaces.
for p in "$R"/sys/class/infiniband/*; do
	[ -e "$p" ] || [ -h "$p" ] || continue
	q=${p#"$R"}
	s "$q" "$q/device"
	e "$p"/device/net/*
	for port in "$p"/ports/*; do
		[ -d "$port" ] || continue
		port=${port#"$R"}
		v "$port/link_layer" "$port/rate" "$port/state" "$port/phys_state"
	done
done

# Boot configuration.
f /etc/default/grub
for p in "$R"/etc/default/grub.d/*; do
	[ -f "$p" ] && f "${p#"$R"}"
done

# Files gpuform writes: any file with "gpuform" in its name in these dirs,
# and everything in /etc/gpuform.
for d in /etc/sysctl.d /etc/modules-load.d /etc/modprobe.d /etc/security/limits.d \
	/etc/default/grub.d /etc/systemd/system /etc/systemd/system/docker.service.d \
	/etc/systemd/logind.conf.d /etc/profile.d /etc/apt/preferences.d /etc/udev/rules.d \
	/etc/tmpfiles.d; do
	for p in "$R$d"/*gpuform*; do
		[ -f "$p" ] && printf '%s managed %s\n' "$M" "${p#"$R"}" && f "${p#"$R"}"
	done
done
for p in "$R"/etc/gpuform/*; do
	[ -f "$p" ] && printf '%s managed %s\n' "$M" "${p#"$R"}" && f "${p#"$R"}"
done

printf '%s end\n' "$M"
