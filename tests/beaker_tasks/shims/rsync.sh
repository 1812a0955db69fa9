#!/bin/bash
# Test shim of rsync: record, then copy for real with the remote 'user@host:' prefix of the
# destination dropped (the collector is a local directory). SHIM_RSYNC_RC makes it fail.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
[[ -n "${SHIM_RSYNC_RC:-}" ]] && exit "${SHIM_RSYNC_RC}"
args=()
while (($#)); do
    if [[ "$1" == -e ]]; then
        shift 2
        continue
    fi
    if (($# == 1)); then args+=("${1#*:}"); else args+=("$1"); fi
    shift
done
mkdir -p "${args[-1]}"
exec /usr/bin/rsync "${args[@]}"
