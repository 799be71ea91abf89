# shellcheck shell=sh
# apt_install.sh LOCK_TIMEOUT HOLD PINNING NOT_OFFERED HOLDS_FILE NAME PATTERN... -- REMOVE...
#
# One apt transaction: each NAME at the newest version its PATTERN (a
# version or an apt glob, "580.95.05-*") matches in apt's lists, with the
# dependencies those pin with "=" (a driver meta package's kernel module
# package) at their exact versions, PINNING (when not empty) at its
# newest version if the repository has it, and each REMOVE removed.
#
# The lists are refreshed when a wanted release is not a candidate
# (published after the last refresh), and only then. A release still not
# offered after that fails with NOT_OFFERED's message when there is one,
# and otherwise leaves apt to say which version it did not find.
#
# HOLD "hold" puts what was installed on hold, with what the set pulled in
# with "=" so that an upgrade cannot move the kernel module package alone,
# and records the holds in HOLDS_FILE. LOCK_TIMEOUT is how long, in
# seconds, apt waits for another apt or dpkg (unattended-upgrades, a
# killed apply's dpkg) instead of failing.
set -eu
lock_timeout=$1 hold=$2 pinning=$3 not_offered=$4 holds_file=$5
shift 5
export DEBIAN_FRONTEND=noninteractive
# Versions are apt globs, never file names.
set -f

# candidate NAME PATTERN prints the newest version of NAME in apt's lists
# that PATTERN matches.
candidate() {
	apt-cache madison "$1" 2>/dev/null | while IFS='|' read -r _ v _; do
		v=$(printf '%s' "$v" | tr -d ' ')
		# shellcheck disable=SC2254 # PATTERN is a glob on purpose
		case $v in $2) printf '%s\n' "$v"; break ;; esac
	done
}

# exact_deps NAME VERSION prints "dep=version" for each dependency pinned
# with "=": apt keeps an installed newer dependency otherwise, and the
# downgrade fails.
exact_deps() {
	apt-cache show "$1=$2" 2>/dev/null | sed -n 's/^Depends: //p' | head -n 1 | tr ',' '\n' | grep -v '|' |
		sed -n 's/^ *\([a-z0-9][a-z0-9.+-]*\)\(:[a-z0-9]*\)\{0,1\} *(= *\([^)]*\)).*$/\1=\3/p'
}

# resolve NAME PATTERN... [-- ...] prints "name=version" for each NAME and
# its exact dependencies, and fails when a PATTERN matches no candidate
# (printing "name=PATTERN" for it).
resolve() {
	missing=0
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		v=$(candidate "$1" "$2")
		if [ -n "$v" ]; then printf '%s=%s\n' "$1" "$v"; exact_deps "$1" "$v"; else printf '%s=%s\n' "$1" "$2"; missing=1; fi
		shift 2
	done
	return $missing
}

# pinning_spec prints "PINNING=version" when the lists have PINNING.
pinning_spec() {
	[ -n "$pinning" ] || return 0
	v=$(candidate "$pinning" '*')
	[ -z "$v" ] || printf '%s=%s\n' "$pinning" "$v"
}

# record_holds FILE SPEC...: adds the package of each "name=version" SPEC
# to FILE (under the root), gpuform's record of the holds it set, and
# drops each package of a "name-" SPEC, one removed.
record_holds() {
	f="$R$1"
	shift
	mkdir -p -- "${f%/*}"
	{ cat "$f" 2>/dev/null || true; for s in "$@"; do case $s in *-) ;; *) printf '%s\n' "${s%%=*}" ;; esac; done; } | sort -u >"$f.new"
	for s in "$@"; do
		case $s in *-)
			grep -vxF -- "${s%-}" "$f.new" >"$f.tmp" || true
			mv -f -- "$f.tmp" "$f.new"
			;;
		esac
	done
	mv -f -- "$f.new" "$f"
}

if ! specs=$(resolve "$@"); then
	apt-get update -q -o DPkg::Lock::Timeout="$lock_timeout" >/dev/null || true
	if ! specs=$(resolve "$@") && [ -n "$not_offered" ]; then
		printf '%s\n' "gpuform: $not_offered." >&2
		exit "$EXIT_NOT_OFFERED"
	fi
fi
specs="$specs
$(pinning_spec)"
# What is left after "--": the packages to remove.
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift 2; done
shift
removes=$#
# One "name=version" per line.
IFS='
'
for s in $specs; do set -- "$@" "$s"; done
unset IFS
while [ "$removes" -gt 0 ]; do
	set -- "$@" "$1-"
	shift
	removes=$((removes - 1))
done
# confold keeps a configuration file the operator edited; the held-packages
# switch lets a pinned downgrade or upgrade of a held package through.
apt-get install -y -q --no-install-recommends --allow-downgrades --allow-change-held-packages \
	-o DPkg::Lock::Timeout="$lock_timeout" -o Dpkg::Options::=--force-confold "$@"
[ "$hold" = hold ] || exit 0
deps=''
for s in "$@"; do case $s in *-) ;; *) deps="$deps ${s%%=*}" ;; esac; done
# shellcheck disable=SC2086 # one word per package
apt-mark hold $deps >/dev/null
record_holds "$holds_file" "$@"
