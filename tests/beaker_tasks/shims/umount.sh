#!/bin/bash
# Test shim of umount: record; 'umount DIR' removes the topmost (last) entry on DIR from the fake mount
# table ${TASK_PROC}/mounts, or fails as umount does when nothing is mounted there.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
table="${TASK_PROC:?}/mounts"
last="$(awk -v dir="$1" '$2 == dir { n = NR } END { print n + 0 }' "${table}")"
if ((last == 0)); then
    echo "umount: $1: not mounted." >&2
    exit 32
fi
awk -v skip="${last}" 'NR != skip' "${table}" >"${table}.tmp" && mv "${table}.tmp" "${table}"
