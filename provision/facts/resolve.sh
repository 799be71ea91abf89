# gpuform root-confined path resolution. POSIX sh (dash, busybox ash).
# Shared by the facts probe and by every step that writes a file, so that
# what the probe reads and what a step writes are the same file.
#
# resolve_in_root PATH resolves PATH (absolute, as the node sees it) under the root
# prefix $R the way the kernel resolves it inside chroot "$R": every
# component, relative and absolute symlinks, ".." clamped at the root, at
# most 40 links (Linux's limit) so that a loop ends. It sets _r to the
# physical path ("$R" followed by the resolved path) and returns 0, or sets
# _e to why not and returns 1. A component that does not exist ends the
# lookup of links: the rest is appended as it is. Only a symlink costs a
# fork (readlink), fewer with _lon=1 (below); $R must be a physical path
# (cd -P; pwd -P).
#
# resolve_path PATH is resolve_in_root under a root prefix and plain "$R$PATH" on a live root,
# where the kernel resolves it: real nodes pay nothing for reads.
#
# resolve_dir DIR resolves DIR with resolve_path and remembers it, so that resolve_in_root of paths under
# DIR (hundreds of sysfs attributes) starts from there.
_cl=
_cp=
# With _lon=1 (the probe, which only reads) resolve_in_root remembers the
# last two links it read (_l1/_t1, _l2/_t2): the probe reads many paths
# through the same link (a sysfs device's attributes), and each readlink
# is a fork. A step that writes leaves _lon empty: links may change.
_lon=
_l1=
_t1=
_l2=
_t2=
resolve_in_root() {
	_e=
	_k=${1#/}
	_c=
	if [ -n "$_cl" ]; then
		case $1 in "$_cl" | "$_cl"/*)
			_k=${1#"$_cl"}
			_c=$_cp
			;;
		esac
	fi
	_n=0
	while [ -n "$_k" ]; do
		case $_k in
		*/*)
			_h=${_k%%/*}
			_k=${_k#*/}
			;;
		*)
			_h=$_k
			_k=
			;;
		esac
		case $_h in
		'' | .) continue ;;
		..)
			_c=${_c%/*}
			continue
			;;
		esac
		if [ -h "$R$_c/$_h" ]; then
			_n=$((_n + 1))
			if [ "$_n" -gt 40 ]; then
				_e="too many levels of symbolic links"
				_r=
				return 1
			fi
			if [ -n "$_lon" ] && [ "$_c/$_h" = "$_l1" ]; then
				_t=$_t1
			elif [ -n "$_lon" ] && [ "$_c/$_h" = "$_l2" ]; then
				_t=$_t2
				_l2=$_l1 _t2=$_t1 _l1=$_c/$_h _t1=$_t
			else
				if ! _t=$(readlink "$R$_c/$_h" 2>/dev/null) || [ -z "$_t" ]; then
					_e="unreadable symbolic link"
					_r=
					return 1
				fi
				_l2=$_l1 _t2=$_t1 _l1=$_c/$_h _t1=$_t
			fi
			case $_t in /*) _c= ;; esac
			_k=$_t${_k:+/$_k}
		else
			_c=$_c/$_h
		fi
	done
	_r=$R$_c
	[ -n "$_r" ] || _r=/
	return 0
}

resolve_path() {
	if [ -n "$R" ]; then
		resolve_in_root "$1"
	else
		_e=
		_r=$1
	fi
}

resolve_dir() {
	_cl=
	resolve_path "$1" || return 1
	if [ -n "$R" ]; then
		_cl=$1
		_cp=${_r#"$R"}
	fi
	return 0
}
