#!/bin/bash
# Test shim of mount: record; 'mount -t hugetlbfs SOURCE DIR' adds DIR on top of the fake mount table
# ${TASK_PROC}/mounts (the /proc/mounts the tasks and the fake VSperf read), as the kernel stacks mounts.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
if [[ "$1 $2" == "-t hugetlbfs" && $# -eq 4 ]]; then
    [[ -d "$4" ]] || { echo "mount: $4: mount point does not exist." >&2; exit 32; }
    printf '%s %s hugetlbfs rw,relatime,pagesize=1024M 0 0\n' "$3" "$4" >>"${TASK_PROC:?}/mounts"
fi
exit 0
