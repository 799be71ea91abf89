# shellcheck shell=sh
# gpuform's node-side prelude. Every script gpuform runs on a node as a
# step of apply (and the apply lock around it) starts with this file:
# provision/nodesh embeds it and puts it in front of the script, and the
# script's values follow as positional arguments ("set -- ..." quoted by
# transport.Quote), never spliced into its text. POSIX sh: dash, bash and
# busybox ash run it alike. It sets nothing but variables and functions,
# so a script that runs without "set -e" (the lock, a step's check) can
# start with it too. Its directives for shellcheck are each on the line
# it concerns, so that they do not reach the script that follows: a
# variable set here is for that script (SC2034), and a script uses only
# some of the helpers (SC2317).

# Every file is addressed as "$R/..." under the root prefix: "" on a real
# node, a directory on a simulated one.
# shellcheck disable=SC2034
R=${GPUFORM_ROOT:-}

# Exit statuses gpuform's Go code tells apart (provision/nodesh's Exit*
# constants; TestPreludeExitStatuses keeps the two in step).
# EXIT_OS_ERROR: a file gpuform needs cannot be made or written (EX_OSERR).
# shellcheck disable=SC2034
EXIT_OS_ERROR=71
# EXIT_BUSY: another apply holds the host, or a step of one still runs
# (EX_TEMPFAIL); apply reports who.
# shellcheck disable=SC2034
EXIT_BUSY=75
# EXIT_NOT_OFFERED: no repository of the node offers the release asked
# for; apt-get's own status for a failed install, so it reads like apt's.
# shellcheck disable=SC2034
EXIT_NOT_OFFERED=100
# EXIT_INTERRUPTED: the step was stopped by a signal (128 + SIGINT).
# shellcheck disable=SC2034
EXIT_INTERRUPTED=130
# EXIT_NOT_FOUND: a tool the script needs is not on the node, as the shell
# says for a command not found.
# shellcheck disable=SC2034
EXIT_NOT_FOUND=127

# fail MESSAGE...: says "gpuform: MESSAGE" on standard error and ends the
# script with status 1.
# shellcheck disable=SC2317
fail() {
	printf 'gpuform: %s\n' "$*" >&2
	exit 1
}

# run_binary NAME [ARG...]: runs the executable file NAME that $PATH names
# first, with ARGs. A command whose real binary matters (dpkg, sysctl,
# mount, modprobe, ip, wget, reboot) is run through it: a busybox sh
# built to prefer its applets (FEATURE_SH_STANDALONE, as Debian's
# busybox-static) runs its own applet for a bare name even before $PATH,
# which would bypass both the node's real tool and a simulated root's
# stand-in. Relative $PATH entries are skipped. Without such a file it
# says so and returns EXIT_NOT_FOUND, as the shell does for a command not
# found.
# shellcheck disable=SC2317
run_binary() {
	binary_path "$1" || {
		printf 'gpuform: %s: not found\n' "$1" >&2
		return "$EXIT_NOT_FOUND"
	}
	shift
	"$_binary" "$@"
}

# binary_path NAME: sets _binary to the first executable file NAME in
# $PATH (absolute entries only), or returns 1 when there is none.
# shellcheck disable=SC2317
binary_path() {
	_binary=
	_path_rest=${PATH-}:
	while [ -n "$_path_rest" ]; do
		_path_dir=${_path_rest%%:*}
		_path_rest=${_path_rest#*:}
		case $_path_dir in /*) ;; *) continue ;; esac
		if [ -f "$_path_dir/$1" ] && [ -x "$_path_dir/$1" ]; then
			_binary=$_path_dir/$1
			return 0
		fi
	done
	return 1
}
