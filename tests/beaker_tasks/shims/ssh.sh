#!/bin/bash
# Test shim of ssh: record; exit SHIM_SSH_RC (255 = unreachable).
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
exit "${SHIM_SSH_RC:-0}"
