# shellcheck shell=sh
# cleanup.sh DIR
#
# Removes the download directory apt_download.sh made.
set -eu
case $1 in
*/var/tmp/gpuform-bundle.*) rm -rf -- "$1" ;;
*) fail "not a bundle download directory: $1" ;;
esac
