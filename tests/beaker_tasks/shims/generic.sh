#!/bin/bash
# Test shim: record the call (name and shell-quoted arguments) and succeed.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
