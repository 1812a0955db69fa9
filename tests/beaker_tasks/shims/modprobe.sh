#!/bin/bash
# Test shim of modprobe: record; fail with SHIM_MODPROBE_RC.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
exit "${SHIM_MODPROBE_RC:-0}"
