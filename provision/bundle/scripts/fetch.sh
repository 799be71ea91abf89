# shellcheck shell=sh
# fetch.sh FILE CHUNK
#
# Writes the CHUNK-th piece of 32 MiB of FILE to standard output: a file
# comes back in pieces, each under the transport's output bound.
set -eu
dd if="$1" bs=1048576 skip=$(($2 * 32)) count=32 2>/dev/null
