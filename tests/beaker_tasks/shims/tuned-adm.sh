#!/bin/bash
# Test shim of tuned-adm: 'active' prints SHIM_TUNED_PROFILE; exit SHIM_TUNED_RC.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
if [[ "$1" == active ]]; then
    echo "Current active profile: ${SHIM_TUNED_PROFILE:-cpu-partitioning}"
fi
exit "${SHIM_TUNED_RC:-0}"
