#!/bin/bash
# Test shim of dpkg-query -W -f FORMAT PACKAGE: SHIM_DPKG_VERSION as the version, else not installed.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
if [[ -z "${SHIM_DPKG_VERSION:-}" ]]; then
    echo "dpkg-query: no packages found matching ${*: -1}" >&2
    exit 1
fi
printf '%s' "${SHIM_DPKG_VERSION}"
