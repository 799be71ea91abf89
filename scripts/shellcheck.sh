#!/usr/bin/env bash
# Runs shellcheck over every shell script the repository tracks: each *.sh
# as the shell its shebang names (bash for most of scripts/*.sh, sh for
# scripts/test.sh) and as POSIX sh (-s sh) without one (what gpuform runs
# on nodes: provision/*/scripts, the prelude, the probe, and the simulated
# nodes' stand-in library), and .ci/run. A finding fails it.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v shellcheck >/dev/null 2>&1 || { echo "scripts/shellcheck.sh: shellcheck is not installed (apt-get install shellcheck)" >&2; exit 1; }
posix=()
shebang=(.ci/run)
while IFS= read -r -d '' f; do
  if head -n 1 "$f" | grep -q '^#!'; then
    shebang+=("$f")
  else
    posix+=("$f")
  fi
done < <(git ls-files -z -- '*.sh')
shellcheck -s sh "${posix[@]}"
shellcheck "${shebang[@]}"
echo "shellcheck: ${#posix[@]} POSIX sh scripts and ${#shebang[@]} with a shebang: clean"
