# shellcheck shell=sh
# tools_present.sh TOOL...
#
# Prints each TOOL the node has, one a line. On a simulated node only the
# root's own stand-ins count: its PATH goes on to the controller's, whose
# nvbandwidth or fio would measure that machine and write there. On any
# other node R is empty and every absolute path matches.
for n in "$@"; do
	p=$(command -v "$n" 2>/dev/null) && case $p in "$R"/*) echo "$n" ;; esac
done
exit 0
