#!/bin/bash
# Test shim of ethtool -i.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
echo "driver: ixgbe"
echo "firmware-version: 0x800003e7"
