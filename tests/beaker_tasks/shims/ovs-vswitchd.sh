#!/bin/bash
# Test shim of ovs-vswitchd --version.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
echo "ovs-vswitchd (Open vSwitch) 3.1.0"
