#!/bin/bash
# Lab shim of restraint's rstrnt-report-log -l FILE: the file is copied to the lab's spool
# ($NIGHTLY_SPOOL); the executor makes it a task file the hub serves.
set -o nounset -o pipefail
spool="${NIGHTLY_SPOOL:?}"
[[ "${1:-}" == -l && -n "${2:-}" ]] || {
    echo "usage: rstrnt-report-log -l FILE" >&2
    exit 2
}
mkdir -p "${spool}/files" || exit 1
copy="$(mktemp -p "${spool}/files" "log-XXXXXX")" || exit 1
cp -- "$2" "${copy}" || exit 1
printf 'log\t%s\t%s\n' "$(basename -- "$2")" "${copy}" >>"${spool}/events"
