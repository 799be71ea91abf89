# shellcheck shell=sh
# sysctl_apply.sh FILE WHEN
#
# Applies the settings of FILE (a sysctl.d drop-in) to the running kernel.
# WHEN "if-present" skips a FILE that is not there (under the root);
# "always" lets sysctl say it is missing.
set -eu
file=$1 when=$2
if [ "$when" = if-present ] && [ ! -f "$R$file" ]; then exit 0; fi
run_binary sysctl -q -p "$file"
