# shellcheck shell=sh
# apply_effect.sh ACTION [ARG...]: runs one of effect_lib.sh's actions as
# a step of its own: what puts a removed file's absence into effect
# (systemctl daemon-reload, after the unit's enable link is removed).
set -eu
apply_effect "$@"
