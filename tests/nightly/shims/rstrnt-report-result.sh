#!/bin/bash
# Lab shim of restraint's rstrnt-report-result [-o LOGFILE] NAME RESULT [METRIC]: the result goes to
# the lab's spool ($NIGHTLY_SPOOL/events), its log copied beside it; the executor hands both to the hub.
set -o nounset -o pipefail
spool="${NIGHTLY_SPOOL:?}"
log="-"
if [[ "${1:-}" == -o ]]; then
    mkdir -p "${spool}/files" || exit 1
    log="$(mktemp -p "${spool}/files" "result-XXXXXX")" || exit 1
    cp -- "$2" "${log}" || exit 1
    printf '%s\n' "$(basename -- "$2")" >"${log}.name"
    shift 2
fi
(($# >= 2)) || {
    echo "usage: rstrnt-report-result [-o LOGFILE] NAME RESULT [METRIC]" >&2
    exit 2
}
printf 'result\t%s\t%s\t%s\t%s\n' "$1" "$2" "${3:-}" "${log}" >>"${spool}/events"
