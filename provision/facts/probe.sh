# gpuform facts probe, format v1. POSIX sh; reads only. It runs after
# resolve.sh (rw, resolve_path, resolve_dir) and the resources' declared reads
# (facts.Reads) as the lists $gpuform_config_files,
# $gpuform_managed_files, $gpuform_managed_dirs, $gpuform_units and
# $gpuform_repo_packages, each
# space-separated, which facts.Script puts in front of it.
#
# Everything is read under the root prefix $GPUFORM_ROOT (or $1), "" or "/"
# meaning the live system. Under a root prefix every path is resolved inside
# the root (resolve.sh), so no read leaves it. Output is a stream of
# records, each introduced by a marker line "@@<nonce> <kind> <path>",
# where the nonce comes from $GPUFORM_PROBE_NONCE so that file contents
# cannot forge a marker:
#   file PATH      the file's bytes follow, then "\n@@<nonce> eof"
#   missing PATH   the path does not exist
#   unreadable PATH  the file exists but this user cannot read it
#   error PATH     the path cannot be resolved; the next line says why
#   link PATH      the next line is the symlink's target
#   exists PATH    the path exists (used for directory entries)
#   cmd NAME RC    a command's output follows, then "\n@@<nonce> eof"
#   managed PATH   PATH is a file gpuform wrote (its records follow)
#   unit NAME      NAME is a systemd unit the resources watch (its records,
#                  if any, follow)
#   config PATH    PATH is a file gpuform rewrites: its records follow,
#                  byte-exact (resolved, meta, data)
#   resolved PATH  the next line is where PATH leads (a symlink is on the way)
#   meta PATH      the next line is "MODE UID GID CONTEXT" as ls -lnZ prints
#                  them ("-" for no SELinux context)
#   data PATH      lines of hex bytes (od -An -v -tx1) follow, then
#                  "@@<nonce> eof"
#   pair PATH PATH the data of two config files in one: the hex of the
#                  first's bytes, of the line "@@<nonce> next", of the
#                  second's, then "@@<nonce> eof" (paths without spaces)
#   names PATH     the paths of the regular files under PATH follow, one a
#                  line, then "@@<nonce> eof"
#   root PATH      the root prefix in use
# The first line is "@@gpuform-probe v1 begin <nonce>" and the last
# "@@<nonce> end", so a truncated stream is detectable.
nonce=${GPUFORM_PROBE_NONCE:-0}
: "${gpuform_config_files=}" "${gpuform_managed_files=}" "${gpuform_managed_dirs=}" "${gpuform_units=}" "${gpuform_repo_packages=}"
R=${GPUFORM_ROOT:-${1:-}}
while [ "${R%/}" != "$R" ]; do R=${R%/}; done
# The root's physical path: resolve.sh builds physical paths on it.
if [ -n "$R" ]; then
	R=$(cd -P "$R" 2>/dev/null && pwd -P) || R=${GPUFORM_ROOT:-${1:-}}
fi
mark="@@$nonce"
LC_ALL=C
export LC_ALL
printf '@@gpuform-probe v1 begin %s\n' "$nonce"
printf '%s root %s\n' "$mark" "${R:-/}"

# record_error PATH: the record for a path resolve_path could not resolve (_e says why).
record_error() {
	printf '%s error %s\n%s\n' "$mark" "$1" "$_e"
}

# read_file PATH...: each file's text (a file record), or why not.
read_file() {
	for _p in "$@"; do
		if ! resolve_path "$_p"; then
			record_error "$_p"
			continue
		fi
		# shellcheck disable=SC2154 # _r and _e are set by resolve_path (resolve.sh)
		if [ -f "$_r" ] && [ -r "$_r" ]; then
			print_text
		else
			record_unreadable "$_p"
		fi
	done
}

# print_text: the file record of _p, the text of the file _r. cat without
# the fork: every line as read, and a last line without its newline
# printed without one, as cat would.
print_text() {
	printf '%s file %s\n' "$mark" "$_p"
	_l=
	while IFS= read -r _l; do
		printf '%s\n' "$_l"
		_l=
	done <"$_r" 2>/dev/null
	[ -n "$_l" ] && printf '%s' "$_l"
	printf '\n%s eof\n' "$mark"
}

# record_unreadable PATH: the record for a file read_file or grep_file could
# not read; _r is set.
record_unreadable() {
	if [ -f "$_r" ]; then
		printf '%s unreadable %s\n' "$mark" "$1"
	else
		printf '%s missing %s\n' "$mark" "$1"
	fi
}

# read_value PATH...: read_file for one-line files (sysfs attributes,
# sysctls), read with the shell's own read so that a node with hundreds of
# CPUs costs no forks. A file that is empty, unreadable or lacks its newline
# goes through read_file.
read_value() {
	for _p in "$@"; do
		# Kernel text, a line ending in a newline: read with the queued
		# files (grep_later) while they are queued, without the open,
		# the dup and the syscall a byte that read takes here.
		if [ -z "$_gdone" ]; then
			case $_p in /proc/* | /sys/*)
				grep_later '^' "$_p"
				continue
				;;
			esac
		fi
		if resolve_path "$_p" && [ -f "$_r" ] && IFS= read -r _v 2>/dev/null <"$_r"; then
			printf '%s file %s\n%s\n\n%s eof\n' "$mark" "$_p" "$_v" "$mark"
		else
			read_file "$_p"
		fi
	done
}

# grep_file PATTERN PATH [keep]: only the lines of PATH matching the
# extended regexp, for files that are large on real nodes (dpkg status,
# cpuinfo, mounts); with keep, also in _g (empty when PATH is unreadable).
grep_file() {
	if ! resolve_path "$2"; then
		record_error "$2"
		return
	fi
	if [ -f "$_r" ] && [ -r "$_r" ]; then
		printf '%s file %s\n' "$mark" "$2"
		if [ -n "${3:-}" ]; then
			# Kept in _g for the caller; the lines end in a newline, which
			# the command substitution drops.
			_g=$(grep -E "$1" "$_r" 2>/dev/null)
			[ -z "$_g" ] || printf '%s\n' "$_g"
		else
			grep -E "$1" "$_r" 2>/dev/null
		fi
		printf '\n%s eof\n' "$mark"
	else
		record_unreadable "$2"
	fi
}

# grep_later PATTERN PATH: grep_file's record for PATH, filtered with the
# others by one awk (grep_batch) instead of a grep each, or of the shell's
# read: kernel text (meminfo, mounts, cpuinfo, modules, each NUMA node's
# meminfo, the sysfs and procfs values read_value reads), the limits files
# and dpkg's journal. An exec costs a node about a millisecond of CPU, and
# the shell's read a syscall a byte. The queue _gq holds PATTERN, PATH and
# the resolved path a line each; a path with a newline (a root prefix that
# has one) cannot be queued and is grepped at once, as is a file queued
# after grep_now. Without awk, grep_batch greps each.
_gq=
_gn=0
_gdone=
_phys=
grep_later() {
	if [ -n "$_gdone" ]; then
		# Queued after grep_now ran: read now.
		grep_file "$@"
		return
	fi
	# dash copies the queue at every append: a node with a thousand
	# interrupts to read would pay a square; every 200 files are
	# filtered on their own.
	_gn=$((_gn + 1))
	[ "$_gn" -lt 200 ] || grep_flush
	case $2 in *"
"*) grep_file "$@"; return ;; esac
	if ! resolve_path "$2"; then
		record_error "$2"
		return
	fi
	case $_r in *"
"*) grep_file "$@"; return ;; esac
	if [ -f "$_r" ] && [ -r "$_r" ]; then
		_gq="$_gq$1
$2
$_r
"
	else
		record_unreadable "$2"
	fi
}

# grep_now: what is queued, read now; later files are read at once.
grep_now() {
	if [ -n "$_gq" ] || [ -n "$_euid" ]; then grep_flush; fi
	_gdone=1
}

# grep_flush: the queue so far, read by grep_batch and emptied; _phys is
# set once a cpuinfo it read has "physical id" lines.
grep_flush() {
	_gn=0
	if grep_batch; then _phys=1; fi
	_euid=
}

# grep_batch: the records of the queued files, in the order queued, each
# as grep_file prints it (the file's matching lines as they are, then
# "\n@@<nonce> eof"); patterns are passed as arguments, which awk takes
# as they are (a -v value would have its backslashes read as escapes).
# With _euid set, also the probe's effective uid as the cmd record euid,
# read from the Uid line of /proc/self/status (awk runs as the probe
# does) instead of by running id -u. Its status is 0 when /proc/cpuinfo
# was queued and has "physical id" lines (x86), anything else when not
# (Arm, or a failure: the caller then reads the packages from sysfs).
grep_batch() {
	_go=$IFS
	IFS='
'
	set -f
	# shellcheck disable=SC2086 # split into lines on purpose
	set -- $_gq
	set +f
	IFS=$_go
	_gq=
	if ! command -v awk >/dev/null 2>&1; then
		_gp=1
		while [ $# -ge 3 ]; do
			if [ "$2" = /proc/cpuinfo ]; then
				grep_file "$1" "$2" keep
				case $_nl$_g in *"${_nl}physical id"*) _gp=0 ;; esac
			else
				grep_file "$1" "$2"
			fi
			shift 3
		done
		[ -z "${_euid:-}" ] || run_command euid id -u
		return $_gp
	fi
	# shellcheck disable=SC2016 # $0 and the fields are awk's
	awk 'BEGIN {
		m = ARGV[1]
		for (i = 3; i + 2 < ARGC; i += 3) {
			print m " file " ARGV[i + 1]
			while ((getline l < ARGV[i + 2]) > 0)
				if (l ~ ARGV[i]) {
					print l
					if (ARGV[i + 1] == "/proc/cpuinfo" && l ~ /^physical id/)
						phys = 1
				}
			close(ARGV[i + 2])
			print ""
			print m " eof"
		}
		if (ARGV[2] == "euid") {
			u = ""
			while ((getline l < "/proc/self/status") > 0)
				if (l ~ /^Uid:/) {
					split(l, f)
					u = f[3]
				}
			if (u != "") {
				print m " cmd euid 0"
				print u
				print m " eof"
			}
		}
		exit phys ? 0 : 1
	}' "$mark" "${_euid:--}" "$@"
}

# read_config PATH...: the files gpuform rewrites, byte for byte (od's hex,
# which no byte can upset: the shell's read drops NUL bytes), with mode,
# owner, group and SELinux context, and where the path leads. Resolved on a
# live root too: a write goes through a symlink to its target, and plan shows
# where that is. Every PATH's config record and where it leads come first,
# then the mode and bytes of those that are readable files: the modes are
# listed by one ls for all of them (an exec costs a node about a
# millisecond of CPU), unless a path holds a character outside
# [A-Za-z0-9/._:+,=@%~-] (ls might quote it, and a space could make one
# line stand for another); a path without its line is listed alone.
read_config() {
	_cq=
	_cr=
	_cb=1
	for _p in "$@"; do
		printf '%s config %s\n' "$mark" "$_p"
		if ! resolve_in_root "$_p"; then
			record_error "$_p"
			continue
		fi
		[ "${_r#"$R"}" = "$_p" ] || printf '%s resolved %s\n%s\n' "$mark" "$_p" "${_r#"$R"}"
		if [ ! -e "$_r" ]; then
			printf '%s missing %s\n' "$mark" "$_p"
			continue
		fi
		if [ ! -f "$_r" ]; then
			_e="not a regular file"
			record_error "$_p"
			continue
		fi
		if [ ! -r "$_r" ]; then
			printf '%s unreadable %s\n' "$mark" "$_p"
			continue
		fi
		case $_p$_r in *"$_nl"*)
			# Cannot be queued a line each: read now, listed alone.
			config_ls "$_r"
			config_data
			continue
			;;
		esac
		_cq="$_cq$_p$_nl$_r$_nl"
		_cr="$_cr$_r$_nl"
		case $_r in *[!A-Za-z0-9/._:+,=@%~-]*) _cb= ;; esac
	done
	[ -n "$_cq" ] || return 0
	_pp=
	_s=
	_z=
	_co=$IFS
	IFS=$_nl
	set -f
	# shellcheck disable=SC2086 # split into lines on purpose
	[ -z "$_cb" ] || config_ls $_cr
	# shellcheck disable=SC2086 # split into lines on purpose
	set -- $_cq
	set +f
	IFS=$_co
	_ca=$_s
	_cz=$_z
	while [ $# -ge 2 ]; do
		_p=$1
		_r=$2
		shift 2
		# The line of _r in the listing: its last field is _r.
		_s=
		_z=$_cz
		_lz=$_ca$_nl
		while [ -n "$_ca" ] && [ -n "$_lz" ]; do
			_lx=${_lz%%"$_nl"*}
			_lz=${_lz#*"$_nl"}
			if [ "${_lx##* }" = "$_r" ]; then
				_s=$_lx
				break
			fi
		done
		[ -n "$_s" ] || config_ls "$_r"
		config_meta
		case $_p in /proc/* | /sys/*)
			grep_later '^' "$_p"
			continue
			;;
		esac
		# Two files to an od where both paths are plain (the pair
		# record names them, a space between); a path that is not
		# is read alone.
		case $_p$_r in *[!A-Za-z0-9/._:+,=@%~-]*)
			config_od
			continue
			;;
		esac
		if [ -z "$_pp" ]; then
			_pp=$_p
			_pr=$_r
			continue
		fi
		config_pair
		_pp=
	done
	if [ -n "$_pp" ]; then
		_p=$_pp
		_r=$_pr
		_pp=
		config_od
	fi
}

# config_ls PATH...: _s, what ls -lnd prints for PATH..., a line each,
# with the SELinux context (_z set) where ls has -Z. GNU ls prints "?" as
# the context without SELinux; ls without -Z support (busybox) fails
# before it lists anything and is asked again without it. A PATH that
# went away meanwhile has no line.
config_ls() {
	_z=1
	if ! _s=$(QUOTING_STYLE=literal ls -lndZ "$@" 2>/dev/null) && [ -z "$_s" ]; then
		_s=$(QUOTING_STYLE=literal ls -lnd "$@" 2>/dev/null)
		_z=
	fi
}

# config_data: the meta record of _p (config_meta), then its bytes from
# the file _r. A file the kernel writes (/proc, /sys: /proc/devices, for a
# driver's major) is text without NUL bytes that nothing rewrites, every
# line ending in a newline: its file record, read with the queued files
# (grep_later), holds the same bytes as od's hex, for no exec.
config_data() {
	config_meta
	case $_p in /proc/* | /sys/*)
		grep_later '^' "$_p"
		return
		;;
	esac
	config_od
}

# config_meta: the meta record of _p from its ls line _s (with its
# context when _z is set).
config_meta() {
	set -f
	# shellcheck disable=SC2086 # split into fields on purpose
	set -- $_s
	set +f
	if [ $# -ge 5 ]; then
		_x=-
		[ -z "$_z" ] || _x=$5
		printf '%s meta %s\n%s %s %s %s\n' "$mark" "$_p" "$1" "$3" "$4" "$_x"
	fi
}

# config_od: the data record of _p, the bytes of the file _r as od's hex.
config_od() {
	printf '%s data %s\n' "$mark" "$_p"
	if od -An -v -tx1 <"$_r"; then
		printf '%s eof\n' "$mark"
	else
		printf '%s eof\n' "$mark"
		_e="read failed"
		record_error "$_p"
	fi
}

# config_pair: the files _pr (of _pp) and _r (of _p) read by one od, each
# exec costing a node about a millisecond: the pair record holds the hex
# of the bytes of the first, the line "@@<nonce> next" that od reads from
# standard input (no file holds the nonce), then the bytes of the second.
# When od fails (a file went away), each is read alone after, and those
# records replace the pair's.
config_pair() {
	printf '%s pair %s %s\n' "$mark" "$_pp" "$_p"
	if printf '%s next\n' "$mark" | od -An -v -tx1 "$_pr" - "$_r"; then
		printf '%s eof\n' "$mark"
		return
	fi
	printf '%s eof\n' "$mark"
	_x=$_p
	_y=$_r
	_p=$_pp
	_r=$_pr
	config_od
	_p=$_x
	_r=$_y
	config_od
}

# is_managed_file PATH: whether PATH is one of the files the resources
# write in full ($gpuform_managed_files, facts.Reads.ManagedFiles), which
# read_config reads byte-exact.
is_managed_file() {
	case " $gpuform_managed_files " in *" $1 "*) return 0 ;; esac
	return 1
}

# read_link PATH...: the target of each PATH that is a symlink, as written.
# A link resolve_in_root has just read (read_dir_link tried it as a
# directory first) is not read again: a readlink is an exec.
read_link() {
	for _p in "$@"; do
		resolve_path "${_p%/*}" || continue
		_q=$_r/${_p##*/}
		if [ -h "$_q" ]; then
			if [ -n "$_lon" ] && [ "${_q#"$R"}" = "$_l1" ]; then
				printf '%s link %s\n%s\n' "$mark" "$_p" "$_t1"
			elif [ -n "$_lon" ] && [ "${_q#"$R"}" = "$_l2" ]; then
				printf '%s link %s\n%s\n' "$mark" "$_p" "$_t2"
			else
				_t=$(readlink "$_q" 2>/dev/null) && printf '%s link %s\n%s\n' "$mark" "$_p" "$_t"
			fi
		fi
	done
}

# read_dir_link PATH...: read_link for sysfs links to directories, printing
# where they lead: on a live root with cd -P instead of readlink (readlink is
# one exec per link, and a node has hundreds of PCI and RDMA links), under a
# root with resolve_path. The printed target is the physical path under the root; the
# parser reads only its path components.
read_dir_link() {
	for _p in "$@"; do
		if [ -z "$R" ]; then
			[ -h "$_p" ] || continue
			if cd -P "$_p" 2>/dev/null; then
				printf '%s link %s\n%s\n' "$mark" "$_p" "$PWD"
			else
				read_link "$_p"
			fi
			continue
		fi
		{ resolve_path "${_p%/*}" && [ -h "$_r/${_p##*/}" ]; } || continue
		if resolve_path "$_p" && [ -d "$_r" ]; then
			printf '%s link %s\n%s\n' "$mark" "$_p" "${_r#"$R"}"
		else
			read_link "$_p"
		fi
	done
	cd /
}

# record_exists PATH...: the paths that exist (a dangling symlink counts).
record_exists() {
	for _p in "$@"; do
		resolve_path "${_p%/*}" || continue
		if [ -h "$_r/${_p##*/}" ] || [ -e "$_r/${_p##*/}" ]; then
			printf '%s exists %s\n' "$mark" "$_p"
		fi
	done
}

# record_entries DIR: record_exists for every entry of DIR.
record_entries() {
	resolve_path "$1" && [ -d "$_r" ] || return 0
	for _y in "$_r"/*; do
		[ -h "$_y" ] || [ -e "$_y" ] || continue
		printf '%s exists %s\n' "$mark" "$1/${_y##*/}"
	done
}

# list_links DIR: under a root prefix, the symlinks of the physical
# directory DIR ($_r after resolve_dir) read with one ls instead of one
# readlink each (a node has dozens of PCI and RDMA device links, and
# readlink is an exec); next_link hands them to resolve_in_root in the
# order a glob of DIR lists them. _ll is the listing, one line an entry,
# or empty when it is not used: on a live root (the kernel resolves), when
# ls fails, or when the lines are not one per entry (a name holding a
# newline), so that no line can stand for another entry.
_ll=
_ld=
_nl='
'
list_links() {
	_ll=
	[ -n "$R" ] && [ -n "$_lon" ] && [ -d "$1" ] || return 0
	set -- "$1" "$1"/*
	[ -e "$2" ] || [ -h "$2" ] || return 0
	_ln=$(($# - 1))
	_ld=${1#"$R"}
	_ll=$(ls -ln "$1" 2>/dev/null) || _ll=
	case $_ll in
	total*"$_nl"*) _ll=${_ll#*"$_nl"} ;;
	*) _ll= ;;
	esac
	_o=$IFS
	IFS=$_nl
	set -f
	# shellcheck disable=SC2086 # split into lines on purpose
	set -- $_ll
	set +f
	IFS=$_o
	[ "$#" -eq "$_ln" ] || _ll=
}

# next_link NAME: takes the listing's next line; when it is the symlink
# NAME ("l... NAME -> TARGET", the part before the first " -> " ending in
# NAME), resolve_in_root finds TARGET as the last link it read instead of
# running readlink. Any other line (out of step, a name with spaces or
# "->") is passed over, and NAME costs its readlink.
next_link() {
	[ -n "$_ll" ] || return 0
	_x=${_ll%%"$_nl"*}
	case $_ll in
	*"$_nl"*) _ll=${_ll#*"$_nl"} ;;
	*) _ll= ;;
	esac
	case $_x in l*" $1 -> "*) ;; *) return 0 ;; esac
	_y=${_x%% -> *}
	[ "${_y##* }" = "$1" ] || return 0
	_y=${_x#*" $1 -> "}
	# busybox ls prints a control byte of a target as "?" (seed_link).
	case $_y in '' | *[!A-Za-z0-9/._:+,=@%~-]*) return 0 ;; esac
	_l2=$_l1 _t2=$_t1 _l1=$_ld/$1 _t1=$_y
}

# link_table PATH...: under a root prefix, the targets of the symlinks
# PATH... (physical paths) read with one ls instead of one readlink each
# (a node's PCI drivers and RDMA devices: one link each); seed_link puts
# one into resolve_in_root's last two links just before it is read. _lt
# is the listing, one line a PATH, or empty when it is not used: on a live
# root, when a PATH holds a character outside [A-Za-z0-9/._:+,=@%~-] (ls
# might quote or escape it, and a space could make one line stand for
# another), when ls fails, or when the lines are not one per PATH (a
# target holding a newline). A PATH it does not have costs its readlink.
_lt=
link_table() {
	_lt=
	[ -n "$R" ] && [ -n "$_lon" ] && [ "$#" -gt 0 ] || return 0
	for _lp in "$@"; do
		case $_lp in /*) ;; *) return 0 ;; esac
		case $_lp in *[!A-Za-z0-9/._:+,=@%~-]*) return 0 ;; esac
	done
	_lt=$(QUOTING_STYLE=literal ls -lnd -- "$@" 2>/dev/null) || _lt=
	_lz=$_lt$_nl
	_lc=0
	while [ -n "$_lz" ]; do
		_lz=${_lz#*"$_nl"}
		_lc=$((_lc + 1))
	done
	[ "$_lc" -eq "$#" ] || _lt=
}

# seed_link PATH: when the table of link_table has the line of the
# symlink PATH ("l... PATH -> TARGET", the part before the first " -> "
# ending in " PATH"; PATH has no spaces), resolve_in_root finds TARGET as
# the last link it read. Otherwise nothing: PATH costs its readlink. So
# does a TARGET with a character outside that set: busybox ls prints a
# newline or any other control byte in it as "?", and another ls might
# quote or escape it.
seed_link() {
	[ -n "$_lt" ] || return 0
	_lz=$_lt$_nl
	while [ -n "$_lz" ]; do
		_lx=${_lz%%"$_nl"*}
		_lz=${_lz#*"$_nl"}
		case $_lx in l*" $1 -> "*) ;; *) continue ;; esac
		_ly=${_lx%% -> *}
		[ "${_ly##* }" = "$1" ] || continue
		_ly=${_lx#*" $1 -> "}
		case $_ly in '' | *[!A-Za-z0-9/._:+,=@%~-]*) return 0 ;; esac
		_l2=$_l1 _t2=$_t1 _l1=${1#"$R"} _t1=$_ly
		return 0
	done
}

# device_links VDIR PDIR LINK: link_table of the link LINK of each entry
# of VDIR (PDIR its physical path, from resolve_dir VDIR), before the loop
# over VDIR; the listing of list_links PDIR is used here and put back for
# that loop.
device_links() {
	_lt=
	[ -n "$R" ] && [ -n "$_lon" ] || return 0
	_lw=$_ll
	_lv=$1
	_ls=$2
	_lk=$3
	set --
	for _lp in "$_ls"/*; do
		next_link "${_lp##*/}"
		if resolve_path "$_lv/${_lp##*/}" && [ -h "$_r/$_lk" ]; then
			set -- "$@" "$_r/$_lk"
		fi
	done
	_ll=$_lw
	link_table "$@"
}

# run_command NAME COMMAND...: COMMAND's output and exit status, as the
# cmd record NAME.
run_command() {
	_n=$1
	shift
	_o=$("$@" 2>&1)
	_rc=$?
	printf '%s cmd %s %s\n%s\n%s eof\n' "$mark" "$_n" "$_rc" "$_o" "$mark"
}

# on_path NAME: _b is the first executable file NAME in $PATH. A command
# whose real binary matters is run by that path: a busybox sh built to
# prefer its applets (FEATURE_SH_STANDALONE, as Debian's busybox-static)
# runs its own applet for a bare name even before $PATH, and busybox's
# rpm reads no rpm database. A name with a slash is always the file;
# relative $PATH entries are skipped.
on_path() {
	_b=
	_o=$IFS
	IFS=:
	set -f
	for _d in $PATH; do
		case $_d in /*) ;; *) continue ;; esac
		if [ -f "$_d/$1" ] && [ -x "$_d/$1" ]; then
			_b=$_d/$1
			break
		fi
	done
	set +f
	IFS=$_o
	[ -n "$_b" ]
}

# may_run: whether the binary on_path found (_b) may be run for the node.
# On the live system, any. Under a simulated root, only a stand-in inside
# the root: the controller's own tools say nothing of it. Under a host root
# (GPUFORM_PROBE_HOST_ROOT: the node's / mounted read-only into a pod, as
# verify --local -host-root reads it), only this machine's own, never one
# of the root's: the node's files are read there, nothing there is run.
may_run() {
	[ -n "$R" ] || return 0
	if [ -n "${GPUFORM_PROBE_HOST_ROOT:-}" ]; then
		case $_b in "$R"/* | "${GPUFORM_ROOT:-/nonexistent}"/*) return 1 ;; esac
		return 0
	fi
	case $_b in "$R"/* | "${GPUFORM_ROOT:-/nonexistent}"/*) return 0 ;; esac
	return 1
}

# Identity and kernel.
# KEY=value lines, read with the queued files.
grep_later '^' /etc/os-release
resolve_path /etc/os-release
[ -f "$_r" ] || grep_later '^' /usr/lib/os-release
read_value /proc/sys/kernel/osrelease
# Kernel text, every line and each ending in a newline: read with the
# queued files (grep_later), as the shell's read takes a syscall a byte.
grep_later '^' /proc/cmdline
# The node's own name and identity: the kernel's host name (an unpacked
# image has none, so /etc/hostname too) and the systemd machine id, which
# tells two hosts apart that an inventory gave the same address.
read_value /proc/sys/kernel/hostname /etc/hostname /etc/machine-id
grep_later '^' /proc/driver/nvidia/version
grep_later '^' /proc/modules
if resolve_path /proc/sys/kernel/arch && [ -f "$_r" ]; then
	read_value /proc/sys/kernel/arch
elif [ -z "$R" ]; then
	run_command uname-m uname -m
fi
read_file /var/run/reboot-required
# Who the probe runs as (after become), so that plan can say before apply
# that it lacks root. Under a root prefix what counts is whether the root
# is writable, not the uid, so it is not asked there.
# Read with the queued files (grep_now), from /proc/self/status where the
# node has one, else by id -u.
_euid=
if [ -z "$R" ]; then
	if [ -r /proc/self/status ]; then _euid=euid; else run_command euid id -u; fi
fi

# Packages: dpkg status is large on real nodes, keep the fields parsed.
# grep, not grep_later: grep filters a status of 700 kB in a third of
# the CPU awk takes, more than the exec it costs.
grep_file '^(Package|Status|Version|Architecture):|^$' /var/lib/dpkg/status
# dpkg journals state changes in updates/ and folds them into status only
# later: a killed dpkg leaves the packages' last states there.
for _u in "$R"/var/lib/dpkg/updates/[0-9]*; do
	[ -f "$_u" ] && grep_later '^(Package|Status|Version|Architecture):|^$' "${_u#"$R"}"
done
# NVIDIA's driver packages in apt's lists (the repository candidates), so
# that a floating branch ("580") resolves to an exact release in the plan.
# The names are the resources' (facts.Reads.RepoPackages, in
# $gpuform_repo_packages), joined into one awk regular expression.
set -- "$R"/var/lib/apt/lists/*_Packages
if [ -f "$1" ] && [ -n "$gpuform_repo_packages" ]; then
	_re=
	set -f
	for _n in $gpuform_repo_packages; do
		_re=${_re:+$_re|}$_n
	done
	set +f
	# shellcheck disable=SC2016 # $2 is awk's field, not the shell's
	run_command apt-candidates awk -v re="^($_re)\$" '/^Package: /{p=$2} /^Version: /{if (p ~ re) print p, $2}' "$@"
fi
# The apt holds gpuform set itself (a hold someone else set is theirs).
read_file /var/lib/gpuform/apt-holds
read_file /etc/dnf/plugins/versionlock.list
if on_path rpm && { [ -z "${GPUFORM_PROBE_HOST_ROOT:-}" ] || may_run; } && { { resolve_path /var/lib/rpm && [ -e "$_r" ]; } || { resolve_path /usr/lib/sysimage/rpm && [ -e "$_r" ]; }; }; then
	run_command rpm "$_b" --root "${R:-/}" -qa --qf '%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}\t%{ARCH}\n'
fi

# CUDA toolkits and container runtime configuration.
if resolve_dir /usr/local; then
	for d in "$_r"/cuda*; do
		# /usr/local/cuda is usually a symlink (via /etc/alternatives on
		# Debian) whose absolute target only resolves on the live root.
		if [ -h "$d" ]; then
			read_link "/usr/local/${d##*/}"
		elif [ -d "$d" ]; then
			read_file "/usr/local/${d##*/}/version.json"
		fi
	done
fi
read_link /etc/alternatives/cuda
# The configuration files the resources edit in place, byte-exact, as
# they declare them (facts.Reads.ConfigFiles, in $gpuform_config_files):
# daemon.json, nccl.conf, containerd's config.toml, apptainer.conf,
# gres.conf, fstab, irqbalance's settings and others.
# shellcheck disable=SC2086 # the list is split into paths on purpose
read_config $gpuform_config_files

# containerd merges the files named by config.toml's top-level imports over
# it, in order (nvidia-ctk 1.18 and later writes its runtime to such a
# drop-in). One line per pattern (joined to /etc/containerd when relative,
# as containerd does): the pattern, then the files its last component
# matches inside the root, or "?" for a wildcard in a directory; then each
# file byte-exact. The shell only lists the array's strings ("..." or
# '...', as awk's match of either found them before): plan compares them
# with its own TOML reading of config.toml and trusts neither if they
# differ. It reads the file only up to the first table ([plugins]) or the
# array's end, a line at a time, where awk cost an exec.
if resolve_path /etc/containerd/config.toml && [ -f "$_r" ] && [ -r "$_r" ]; then
	_ip=
	_on=
	_dq='"'
	_sq="'"
	_l=
	while IFS= read -r _l || [ -n "$_l" ]; do
		_t=${_l#"${_l%%[! 	]*}"}
		case $_t in "["*) break ;; esac
		if [ -z "$_on" ]; then
			_u=${_t#imports}
			_u=${_u#"${_u%%[! 	]*}"}
			case $_t in imports*) ;; *) _u= ;; esac
			case $_u in =*) ;; *)
				_l=
				continue
				;;
			esac
			_on=1
			_l=${_l#*=}
		fi
		# Each string, at the earlier of the next " and '; a quote
		# without its closing one is passed over. _m is what follows
		# the last string: a ] there ends the array.
		_s=$_l
		_m=$_l
		while :; do
			_a=${_s%%"$_dq"*}
			_b=${_s%%"$_sq"*}
			if [ ${#_a} -lt ${#_b} ]; then
				_c=$_dq
				_a=${_s#"$_a"}
			elif [ ${#_b} -lt ${#_a} ]; then
				_c=$_sq
				_a=${_s#"$_b"}
			else
				break
			fi
			_a=${_a#?}
			case $_a in
			*"$_c"*)
				_ip="$_ip${_a%%"$_c"*}$_nl"
				_s=${_a#*"$_c"}
				_m=$_s
				;;
			*) _s=$_a ;;
			esac
		done
		case $_m in *"]"*) break ;; esac
		_l=
	done <"$_r" 2>/dev/null
	_ci=
	_cf=
	_o=$IFS
	IFS='
'
	set -f
	for _i in $_ip; do
		set +f
		IFS=$_o
		case $_i in /*) ;; *) _i=/etc/containerd/$_i ;; esac
		_d=${_i%/*}
		case $_d in *[][*?]*)
			_ci="$_ci$_i	?
"
			continue
			;;
		esac
		_l=$_i
		if resolve_path "$_d" && [ -d "$_r" ]; then
			for _g in "$_r"/${_i##*/}; do
				[ -f "$_g" ] || continue
				_l="$_l	$_d/${_g##*/}"
				_cf="$_cf$_d/${_g##*/}
"
			done
		fi
		_ci="$_ci$_l
"
	done
	printf '%s cmd containerd-imports 0\n%s\n%s eof\n' "$mark" "$_ci" "$mark"
	IFS='
'
	set -f
	# shellcheck disable=SC2086 # split into lines on purpose
	set -- $_cf
	set +f
	IFS=$_o
	read_config "$@"
fi
read_file /etc/nvidia-container-runtime/config.toml
read_file /etc/cdi/nvidia.yaml /var/run/cdi/nvidia.yaml
# pyxis's SPANK plugin where its packages and make install put it, and
# the plugstack drop-in that loads it.
record_exists /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so /usr/lib/aarch64-linux-gnu/slurm/spank_pyxis.so \
	/usr/lib64/slurm/spank_pyxis.so /usr/local/lib/slurm/spank_pyxis.so

# Memory, /dev/shm, sysctls, limits, hugepages.
grep_later '^(MemTotal|HugePages_Total|HugePages_Free|Hugepagesize):' /proc/meminfo
grep_later '^[^ ]+ /dev/shm ' /proc/mounts
read_value /sys/kernel/mm/transparent_hugepage/enabled
for s in kernel/numa_balancing vm/swappiness vm/overcommit_memory vm/max_map_count \
	vm/zone_reclaim_mode vm/nr_hugepages kernel/shmmax kernel/shmall kernel/pid_max \
	net/core/rmem_max net/core/wmem_max net/core/netdev_max_backlog \
	net/ipv4/tcp_rmem net/ipv4/tcp_wmem fs/file-max; do
	resolve_path "/proc/sys/$s" && [ -f "$_r" ] && read_value "/proc/sys/$s"
done
# Every sysctl the kernel has, by name, so that plan can refuse a key that
# sysctl -p would reject. find does not follow symlinks.
if resolve_path /proc/sys && [ -d "$_r" ]; then
	printf '%s names /proc/sys\n' "$mark"
	(cd "$_r" && find . -type f 2>/dev/null)
	printf '%s eof\n' "$mark"
fi
# The limits files' entries: the lines with something before any comment
# (limits.conf is mostly comments, which the shell would read a byte a
# syscall).
grep_later '^[ 	]*[^# 	]' /etc/security/limits.conf
if resolve_dir /etc/security/limits.d; then
	for p in "$_r"/*.conf; do
		[ -h "$p" ] || [ -f "$p" ] || continue
		p=/etc/security/limits.d/${p##*/}
		is_managed_file "$p" || grep_later '^[ 	]*[^# 	]' "$p"
	done
fi

# CPU and NUMA. cpuinfo separates its keys from the colon with tabs (and
# spaces): [ \t] written out, as an old mawk (1.3.3) has no [[:space:]].
grep_later '^(processor|vendor_id|cpu family|model|model name|physical id|CPU implementer|CPU part)[ 	]*:' /proc/cpuinfo
# Whether this is a virtual machine: systemd-detect-virt on a live node
# (CPUID and DMI), the DMI vendor and product under a root prefix. An NCCL
# topology file is written for VMs only.
read_value /sys/class/dmi/id/sys_vendor /sys/class/dmi/id/product_name
# The BIOS version and date (firmware { bios }, firmware.domain_drift).
for a in bios_version bios_date; do
	resolve_path "/sys/class/dmi/id/$a" && [ -f "$_r" ] && read_value "/sys/class/dmi/id/$a"
done
[ -n "$R" ] || run_command detect-virt systemd-detect-virt --vm
# The GPUs' NVLink fabric registration (cluster UUID and clique id), only
# when the controller asks (GPUFORM_PROBE_FABRIC: a node block whose
# nvlink_domain is read from the node): NVML has no file for it, so
# nvidia-smi -q, of whose output only the Fabric sections (and the lines
# that open each GPU's) are kept, at most 64 KiB. Under a root prefix only
# a stand-in inside the root is asked, as for the container clients.
if [ -n "${GPUFORM_PROBE_FABRIC:-}" ]; then
	if on_path nvidia-smi && may_run; then
		_o=$("$_b" -q 2>&1)
		_rc=$?
		if [ "$_rc" = 0 ]; then
			_o=$(printf '%s\n' "$_o" | awk 'function out(l) { n += length(l) + 1; if (n > 65536) exit; print l } /^GPU / { out($0); next } /^[ \t]*Fabric[ \t]*$/ { f = 1; d = match($0, /[^ \t]/); out($0); next } f { if ($0 ~ /^[ \t]*$/) next; if (match($0, /[^ \t]/) <= d) f = 0; else out($0) }')
		else
			_o=$(printf '%s\n' "$_o" | sed -n '1,5p')
		fi
	else
		_o="nvidia-smi: not found"
		_rc=127
	fi
	printf '%s cmd %s %s\n%s\n%s eof\n' "$mark" nvidia-smi-fabric "$_rc" "$_o" "$mark"
fi
# IMEX's own view of its domain, only when the controller asks
# (GPUFORM_PROBE_IMEX_STATUS: verify of a node that runs IMEX):
# nvidia-imex-ctl -N asks the local daemon, which asks every peer, so it
# runs under timeout(1) (20 s; exit 124 when cut), its output cut at 256 KiB.
if [ -n "${GPUFORM_PROBE_IMEX_STATUS:-}" ]; then
	if on_path nvidia-imex-ctl && may_run; then
		_c=$_b
		if on_path timeout; then
			_o=$("$_b" 20 "$_c" -N 2>&1)
			_rc=$?
			_o=$(printf '%s\n' "$_o" | awk '{ n += length($0) + 1; if (n > 262144) exit; print }')
		else
			_o="timeout(1) not found: nvidia-imex-ctl -N is not run unbounded"
			_rc=127
		fi
	else
		_o="nvidia-imex-ctl: not found"
		_rc=127
	fi
	printf '%s cmd %s %s\n%s\n%s eof\n' "$mark" nvidia-imex-ctl-N "$_rc" "$_o" "$mark"
fi
# The BMC's firmware revision (firmware { bmc }, firmware.domain_drift):
# ipmitool mc info over the in-band interface, read-only, only where both
# ipmitool and /dev/ipmi0 exist (a character device; under a root prefix
# the root's stand-in file, and only a stand-in inside the root is asked).
# It asks the BMC, so it runs under timeout(1) (10 s; exit 124 when cut),
# its output cut at 16 KiB. Absent either, nothing is sent: the BMC is
# not read.
if resolve_path /dev/ipmi0 && { [ -c "$_r" ] || { [ -n "$R" ] && [ -f "$_r" ]; }; } &&
	on_path ipmitool && may_run; then
	_c=$_b
	if on_path timeout; then
		_o=$("$_b" 10 "$_c" mc info 2>&1 </dev/null)
		_rc=$?
		_o=$(printf '%s\n' "$_o" | awk '{ n += length($0) + 1; if (n > 16384) exit; print }')
	else
		_o="timeout(1) not found: ipmitool mc info is not run unbounded"
		_rc=127
	fi
	printf '%s cmd %s %s\n%s\n%s eof\n' "$mark" ipmitool-mc-info "$_rc" "$_o" "$mark"
fi
read_value /sys/devices/system/cpu/online
if resolve_dir /sys/devices/system/node; then
	for p in "$_r"/node[0-9]*; do
		p=/sys/devices/system/node/${p##*/}
		{ resolve_path "$p" && [ -d "$_r" ]; } || continue
		read_value "$p/cpulist" "$p/distance"
		grep_later 'MemTotal' "$p/meminfo"
	done
fi
# Only the distinct governors matter: a 224-CPU node would otherwise send
# 224 identical records.
_seen=" "
if resolve_dir /sys/devices/system/cpu; then
	for p in "$_r"/cpu[0-9]*; do
		p=/sys/devices/system/cpu/${p##*/}/cpufreq/scaling_governor
		{ resolve_path "$p" && [ -f "$_r" ] && IFS= read -r _x 2>/dev/null <"$_r"; } || continue
		case $_seen in *" $_x "*) continue ;; esac
		_seen="$_seen$_x "
		read_value "$p"
	done
fi

# The systemd units the resources watch (facts.Reads.Units, in
# $gpuform_units), each announced by a unit record so that the parser
# knows a unit that has no records. On a live root ask systemctl; under a
# root prefix read the unit files, the .wants symlinks that "enable"
# creates, and the invocation records systemd keeps in /run/systemd/units
# for started units.
#
# Each systemctl costs about 2 ms of CPU to start, so on a live root it
# runs twice for all the units, not once a unit. list-unit-files prints
# "NAME STATE [PRESET]" for each unit file it finds among the names, the
# states is-enabled prints, and nothing for a name without a unit file
# (exit 1 when none has one); is-active prints one line a unit, in the
# order asked. The parser maps both. Its arguments are glob patterns, so
# a name that is not plain (an instance "a@b.service", an escape "\x2d")
# is asked with is-enabled on its own, and so is every unit when the
# listing fails with a message: is-enabled stops at the first unit it does
# not know, so it is asked once a unit.
_live_units=
if [ -z "$R" ] && command -v systemctl >/dev/null 2>&1; then
	_live_units=1
fi
_listed=
_asked=
for u in $gpuform_units; do
	printf '%s unit %s\n' "$mark" "$u"
	if [ -n "$_live_units" ]; then
		case $u in
		*[!A-Za-z0-9:_.-]*) _asked="$_asked $u" ;;
		*) _listed="$_listed $u" ;;
		esac
	else
		record_exists "/etc/systemd/system/$u" "/lib/systemd/system/$u" "/usr/lib/systemd/system/$u" \
			"/run/systemd/units/invocation:$u"
		if resolve_dir /etc/systemd/system; then
			for w in "$_r"/*.wants; do
				record_exists "/etc/systemd/system/${w##*/}/$u"
			done
		fi
		read_link "/etc/systemd/system/$u"
	fi
done
if [ -n "$_listed" ]; then
	# shellcheck disable=SC2086 # one argument per unit
	run_command unit-files systemctl list-unit-files --no-legend --no-pager --full -- $_listed
	if [ "$_rc" != 0 ] && [ -n "$_o" ]; then
		_asked="$_listed$_asked"
	fi
fi
for u in $_asked; do
	run_command "is-enabled:$u" systemctl is-enabled "$u"
done
# is-active asks the running systemd. Where none runs (no
# /run/systemd/system, the test systemctl makes itself: a container, a
# chroot) it can only say that it cannot operate; the probe records the
# missing directory instead, from which the parser reads every unit's
# state as unknown, as it read systemctl's sentence, for no exec.
if [ -n "$_live_units" ] && [ -n "$gpuform_units" ]; then
	if [ -d /run/systemd/system ]; then
		printf '%s exists /run/systemd/system\n' "$mark"
		# shellcheck disable=SC2086 # one argument per unit, as announced
		run_command is-active systemctl is-active -- $gpuform_units
	else
		printf '%s missing /run/systemd/system\n' "$mark"
	fi
fi

# PCI devices of the classes gpuform cares about. Under a root each
# device's directory is resolved once (resolve_dir), its attributes from there.
if resolve_dir /sys/bus/pci/devices; then
	_pd=$_r
	list_links "$_pd"
	device_links /sys/bus/pci/devices "$_pd" driver
	for p in "$_pd"/*; do
		next_link "${p##*/}"
		q=/sys/bus/pci/devices/${p##*/}
		{ resolve_dir "$q" && [ -d "$_r" ]; } || continue
		_qd=$_r
		{ resolve_path "$q/class" && [ -f "$_r" ] && read -r cls 2>/dev/null <"$_r"; } || continue
		case $cls in
		0x0300* | 0x0302* | 0x0207* | 0x0200* | 0x0108*) ;;
		0x0680*)
			resolve_path "$q/vendor" && read -r ven 2>/dev/null <"$_r"
			[ "$ven" = 0x10de ] || continue
			;;
		*) continue ;;
		esac
		seed_link "$_qd/driver"
		read_dir_link "$q" "$q/driver"
		for a in class vendor device subsystem_vendor subsystem_device numa_node \
			current_link_speed max_link_speed current_link_width max_link_width; do
			resolve_path "$q/$a" && [ -f "$_r" ] && read_value "$q/$a"
		done
		record_entries "$q/net"
		record_entries "$q/infiniband"
		# An RDMA NIC's interrupts and the CPUs each may run on (affinity
		# { nic_irq_affinity }). The kernel renumbers IRQs at every boot,
		# so they are read here, never remembered.
		# An RDMA NIC's upstream port's maxima (nic.pcie_link): the link
		# trains to the lower of the NIC's and the slot's. The port is the
		# parent of the device's physical directory in /sys/devices.
		if resolve_path "$q/infiniband" && [ -d "$_r" ]; then
			_u=
			if [ -z "$R" ]; then
				cd -P "$q" 2>/dev/null && _u=${PWD%/*}
				cd /
			elif resolve_path "$q" && [ -d "$_r" ]; then
				_u=${_r#"$R"}
				_u=${_u%/*}
			fi
			case ${_u##*/} in
			*:*.*)
				for a in max_link_speed max_link_width; do
					resolve_path "$_u/$a" && [ -f "$_r" ] && read_value "$_u/$a"
				done
				;;
			esac
		fi
		if resolve_path "$q/infiniband" && [ -d "$_r" ] && resolve_dir "$q/msi_irqs" && [ -d "$_r" ]; then
			for i in "$_r"/*; do
				[ -e "$i" ] || continue
				i=${i##*/}
				printf '%s exists %s\n' "$mark" "$q/msi_irqs/$i"
				read_value "/proc/irq/$i/smp_affinity_list"
			done
		fi
	done
fi

# RDMA devices, their ports and network interfaces.
if resolve_dir /sys/class/infiniband; then
	_pd=$_r
	list_links "$_pd"
	device_links /sys/class/infiniband "$_pd" device
	for p in "$_pd"/*; do
		next_link "${p##*/}"
		[ -e "$p" ] || [ -h "$p" ] || continue
		q=/sys/class/infiniband/${p##*/}
		resolve_dir "$q" || continue
		seed_link "$_r/device"
		read_dir_link "$q" "$q/device"
		# The adapter's firmware (firmware { nic_firmware }).
		resolve_path "$q/fw_ver" && [ -f "$_r" ] && read_value "$q/fw_ver"
		record_entries "$q/device/net"
		if resolve_dir "$q/device/net" && [ -d "$_r" ]; then
			for n in "$_r"/*; do
				[ -d "$n" ] || continue
				read_value "$q/device/net/${n##*/}/mtu"
			done
		fi
		{ resolve_path "$q/ports" && [ -d "$_r" ]; } || continue
		for port in "$_r"/*; do
			port=$q/ports/${port##*/}
			{ resolve_path "$port" && [ -d "$_r" ]; } || continue
			read_value "$port/link_layer" "$port/rate" "$port/state" "$port/phys_state"
		done
	done
fi

# Boot configuration.
read_file /etc/default/grub
if resolve_dir /etc/default/grub.d; then
	for p in "$_r"/*; do
		[ -h "$p" ] || [ -f "$p" ] || continue
		p=/etc/default/grub.d/${p##*/}
		is_managed_file "$p" || read_file "$p"
	done
fi

# Container images, for the digests gpuform pulls (container_images): only
# where the runtime's daemon socket exists, so that a client without a
# daemon is never asked. Under a root prefix only a client inside the root
# is asked (a simulated node's): the controller's own says nothing. Under a
# host root, below. (The loops' names are their own: resolve_path sets
# _t, _c and more of its own.)
for _it in docker:/run/docker.sock ctr:/run/containerd/containerd.sock; do
	[ -z "${GPUFORM_PROBE_HOST_ROOT:-}" ] || break
	_is=${_it#*:}
	_it=${_it%%:*}
	{ resolve_path "$_is" && [ -e "$_r" ]; } || continue
	_b=$(command -v "$_it" 2>/dev/null) || continue
	if [ -n "$R" ]; then
		case $_b in "$R"/* | "${GPUFORM_ROOT:-/nonexistent}"/*) ;; *) continue ;; esac
	fi
	case $_it in
	docker) run_command docker-images docker image ls --digests --no-trunc --format '{{.ID}} {{.Repository}} {{.Tag}} {{.Digest}}' ;;
	ctr) run_command ctr-images ctr -n k8s.io images ls ;;
	esac
done
# Under a host root (the node's / mounted into a pod), this machine's own
# client asks the node's daemon through the node's socket under the root
# (docker -H, ctr --address): a unix socket is connected to, not written,
# so the read-only mount serves, and nothing under the root is run. Where
# the node's store cannot be asked from here, an images-notrun record says
# why, so that the store is not run rather than absent: no client on this
# machine's PATH (none outside the root), or a root whose /run is empty
# (the container runtime bound / without its submounts), where a missing
# socket says nothing of the node.
if [ -n "${GPUFORM_PROBE_HOST_ROOT:-}" ] && [ -n "$R" ]; then
	_rs=
	if resolve_path /run && [ -d "$_r" ]; then
		for _y in "$_r"/*; do
			{ [ -e "$_y" ] || [ -h "$_y" ]; } && _rs=1
			break
		done
	fi
	for _it in docker:/run/docker.sock ctr:/run/containerd/containerd.sock; do
		_is=${_it#*:}
		_it=${_it%%:*}
		if ! { resolve_path "$_is" && [ -S "$_r" ]; }; then
			[ -n "$_rs" ] || printf '%s cmd %s-images-notrun 0\n%s\n%s eof\n' "$mark" "$_it" \
				"the node's /run is not visible under the host root $R (empty: the container runtime bound the node's / without its submounts), so whether the node has $_is is not known" "$mark"
			continue
		fi
		if ! { on_path "$_it" && may_run; }; then
			printf '%s cmd %s-images-notrun 0\n%s\n%s eof\n' "$mark" "$_it" \
				"the node has $_is, but this machine has no $_it client on PATH to ask it with (nothing under the host root is run): add $_it to the image" "$mark"
			continue
		fi
		# The node's daemon may hang: asked under timeout(1), 30 s.
		_ib=$_b
		if ! { on_path timeout && may_run; }; then
			printf '%s cmd %s-images 127\n%s\n%s eof\n' "$mark" "$_it" "timeout(1) not found: the node's $_it is not asked unbounded" "$mark"
			continue
		fi
		case $_it in
		docker) run_command docker-images "$_b" 30 "$_ib" -H "unix://$_r" image ls --digests --no-trunc --format '{{.ID}} {{.Repository}} {{.Tag}} {{.Digest}}' ;;
		ctr) run_command ctr-images "$_b" 30 "$_ib" --address "$_r" -n k8s.io images ls ;;
		esac
	done
fi

# Image files gpuform pulled for enroot and Apptainer (container_images),
# in the directories /etc/gpuform/image-dirs lists (the file itself is read
# with the rest of /etc/gpuform below): each .sqsh and .sif file's name,
# which carries its digest, and where each tag's symlink leads.
# Each file's identity (device:inode, size, modification time) goes with
# it, to be compared with what /etc/gpuform/image-files recorded when
# gpuform pulled it: a file under a digest's name that gpuform did not pull
# on this node, or that changed since, is not taken for that build.
if resolve_path /etc/gpuform/image-dirs && [ -f "$_r" ] && [ -r "$_r" ]; then
	_list=$_r
	_ids=
	_nl='
'
	while IFS= read -r _d || [ -n "$_d" ]; do
		case $_d in /*) ;; *) continue ;; esac
		case $_d in *[!A-Za-z0-9._/-]* | *//* | */../* | */..) continue ;; esac
		{ resolve_dir "$_d" && [ -d "$_r" ]; } || continue
		for _y in "$_r"/*.sqsh "$_r"/*.sif; do
			if [ -h "$_y" ]; then
				_t=$(readlink "$_y" 2>/dev/null) && printf '%s link %s\n%s\n' "$mark" "$_d/${_y##*/}" "$_t"
			elif [ -f "$_y" ]; then
				printf '%s exists %s\n' "$mark" "$_d/${_y##*/}"
				_s=$(stat -c '%d:%i %s %Y' "$_y" 2>/dev/null) && _ids=$_ids$_s" $_d/${_y##*/}"$_nl
			fi
		done
	done <"$_list"
	printf '%s cmd image-file-ids 0\n%s\n%s eof\n' "$mark" "$_ids" "$mark"
fi

# The directories the spec's image_dir will use, which the controller names
# in GPUFORM_PROBE_IMAGE_DIRS (space-separated): the owner and mode of each
# (of its nearest existing parent when it does not exist yet: mkdir -p
# makes it there) and of every directory above it, as the pull step judges
# them, so that plan refuses a directory other users may write to before
# apply changes anything. One line each: "DIR UID OCTAL-MODE MODE PATH",
# nearest first, after the probe's own uid ("me UID").
if [ -n "${GPUFORM_PROBE_IMAGE_DIRS:-}" ]; then
	_nl='
'
	_o="me $(id -u)"
	for _d in $GPUFORM_PROBE_IMAGE_DIRS; do
		case $_d in /*) ;; *) continue ;; esac
		case $_d in *[!A-Za-z0-9._/-]* | *//* | */../* | */..) continue ;; esac
		_p=$_d
		while ! { resolve_path "$_p" && [ -d "$_r" ]; }; do
			[ "$_p" = / ] && break
			_p=${_p%/*}
			[ -n "$_p" ] || _p=/
		done
		{ resolve_path "$_p" && [ -d "$_r" ]; } || continue
		_q=$_r
		while :; do
			_s=$(stat -c '%u %a %A' "$_q" 2>/dev/null) || break
			_v=${_q#"$R"}
			_o=$_o$_nl"$_d $_s ${_v:-/}"
			[ "$_q" = "${R:-/}" ] || [ "$_q" = / ] && break
			_q=${_q%/*}
			[ -n "$_q" ] || _q=/
		done
	done
	printf '%s cmd image-dir-stats 0\n%s\n%s eof\n' "$mark" "$_o" "$mark"
fi

# Files gpuform writes, as the resources declare them: the ones it
# writes in full (facts.Reads.ManagedFiles, byte-exact with read_config),
# then any other file with "gpuform" in its name in the managed
# directories (facts.Reads.ManagedDirs), and everything in /etc/gpuform.
for p in $gpuform_managed_files; do
	printf '%s managed %s\n' "$mark" "$p"
done
# shellcheck disable=SC2086 # the list is split into paths on purpose
read_config $gpuform_managed_files
for d in $gpuform_managed_dirs; do
	resolve_dir "$d" || continue
	_dr=$_r
	for p in "$_dr"/*; do
		case $d:${p##*/} in /etc/gpuform:* | *:*gpuform*) ;; *) continue ;; esac
		[ -h "$p" ] || [ -f "$p" ] || continue
		p=$d/${p##*/}
		is_managed_file "$p" && continue
		printf '%s managed %s\n' "$mark" "$p"
		read_file "$p"
	done
done

# What the package repositories offer of the packages plan names in
# $GPUFORM_PROBE_PACKAGES (the ones the spec installs), with gpuform_offers
# (offers.sh, which facts.Script puts in front of this), from the
# repository metadata the host has: nothing is refreshed.
if [ -n "${GPUFORM_PROBE_PACKAGES:-}" ]; then
	# The package family of the distribution, as facts.OS.Family reads
	# os-release's ID and ID_LIKE (a host may carry both dpkg and rpm).
	GPUFORM_FAMILY=
	if resolve_path /etc/os-release && [ -r "$_r" ]; then
		for _w in $(sed -n -e 's/^ID=//p' -e 's/^ID_LIKE=//p' "$_r" | tr -d "\"'"); do
			case $_w in
			debian | ubuntu) GPUFORM_FAMILY=${GPUFORM_FAMILY:-debian} ;;
			rhel | centos | fedora | rocky | almalinux | amzn) GPUFORM_FAMILY=${GPUFORM_FAMILY:-rhel} ;;
			esac
		done
	fi
	# shellcheck disable=SC2034 # read by gpuform_offers (offers.sh)
	GPUFORM_PACKAGES=$GPUFORM_PROBE_PACKAGES
	[ -z "$GPUFORM_FAMILY" ] || run_command offers gpuform_offers
fi

# The queued files (grep_later), read now. Arm cpuinfo has no "physical
# id"; count packages from sysfs topology there (grep_now says, with no
# second read of cpuinfo).
grep_now
if [ -z "$_phys" ] && resolve_dir /sys/devices/system/cpu; then
	# Only the distinct package ids matter (the parser counts sockets).
	_seen=" "
	for p in "$_r"/cpu[0-9]*; do
		p=/sys/devices/system/cpu/${p##*/}/topology/physical_package_id
		{ resolve_path "$p" && [ -f "$_r" ] && IFS= read -r _x 2>/dev/null <"$_r"; } || continue
		case $_seen in *" $_x "*) continue ;; esac
		_seen="$_seen$_x "
		read_value "$p"
	done
fi

printf '%s end\n' "$mark"
