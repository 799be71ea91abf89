# shellcheck shell=sh
# systemd_unit.sh ACTION UNIT
#
# ACTION is one of:
#   enable-now        enable UNIT and start it
#   enable            enable UNIT (it starts at the next boot: a unit that
#                     needs a driver not yet loaded)
#   try-restart       restart UNIT if it runs; a stopped one stays stopped
#   restart           restart UNIT
#   restart-if-active restart UNIT if it is active
set -eu
action=$1 unit=$2
case $action in
enable-now) systemctl enable --now "$unit" ;;
enable) systemctl enable "$unit" ;;
try-restart) systemctl try-restart "$unit" ;;
restart) systemctl restart "$unit" ;;
restart-if-active)
	if systemctl is-active --quiet "$unit"; then systemctl restart "$unit"; fi
	;;
*) fail "systemd_unit.sh: unknown action $action" ;;
esac
