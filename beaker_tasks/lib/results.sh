# shellcheck shell=bash
# Shared results delivery of the measuring tasks (vsperf_test, ovsperf_test): the COLLECTOR rule, the
# results directory's path for ovsperf-remote, the tarball and uploads for Beaker, and the rsync to the
# collector with ovsperf-metadata.json last. Sourced after task.sh; call inside an open phase.
#
# Parameters (environment): COLLECTOR (user@host:/path/ci_in; optional), COLLECTOR_SSH, COLLECTOR_RETRIES,
# COLLECTOR_RETRY_DELAY_S, VSPERF_RESULTS_FILE (the file ovsperf-remote reads the results' path from; the
# runner sets it for both engines).

: "${COLLECTOR:=}"
: "${COLLECTOR_SSH:=ssh -o BatchMode=yes -o ConnectTimeout=30}"
: "${COLLECTOR_RETRIES:=3}"
: "${COLLECTOR_RETRY_DELAY_S:=30}"
: "${VSPERF_RESULTS_FILE:=}"
# The delivery contract's file names (ovsperf_common.metadata and labfiles own them).
TASK_METADATA_FILE="ovsperf-metadata.json"
TASK_TELEMETRY_FILE="ovsperf-telemetry.json"

# task_check_collector: abort (WARN) unless COLLECTOR is empty or follows the rule jobcreator and
# ovsperf-koji check --collector with: the path reaches the collector's shell (rsync <= 3.2.3), so
# nothing in it may be a shell character.
task_check_collector() {
    local why
    if [[ -n "${COLLECTOR}" ]] &&
        ! why="$(task_ovsperf_module ovsperf_common.fields rsync-destination --field COLLECTOR -- "${COLLECTOR}" 2>&1)"; then
        task_abort "COLLECTOR '${COLLECTOR}' is not user@host:/absolute/path: ${why##*error: }"
    fi
}

# task_tell_results FILE PATH: write PATH into FILE, atomically (ovsperf-remote reads it).
task_tell_results() {
    printf '%s\n' "$2" >"$1.tmp" && mv -f "$1.tmp" "$1"
}

# task_ship_results DIR: rsync DIR to COLLECTOR: everything first, the metadata file last (its presence
# tells process-ci-results that the directory is complete). Bounded retries.
task_ship_results() {
    local dir="$1" attempt
    # --timeout: I/O timeout [s], a stalled collector cannot hang us; --protect-args: the remote
    # path is not split or expanded by the collector's shell (rsync <= 3.2.3 does that by default).
    local -a rsync_ssh=(-e "${COLLECTOR_SSH}" --timeout=600 --protect-args)
    for ((attempt = 1; attempt <= COLLECTOR_RETRIES; attempt++)); do
        if rsync -a "${rsync_ssh[@]}" --exclude="${TASK_METADATA_FILE}" "${dir}" "${COLLECTOR}/" &&
            rsync -a "${rsync_ssh[@]}" "${dir}/${TASK_METADATA_FILE}" "${COLLECTOR}/$(basename "${dir}")/"; then
            return 0
        fi
        ((attempt < COLLECTOR_RETRIES)) && sleep "${COLLECTOR_RETRY_DELAY_S}"
    done
    return 1
}

# task_deliver_results DIR WORK HOST [LOG...]: after the metadata is written, tell ovsperf-remote where
# DIR is (VSPERF_RESULTS_FILE), pack DIR into WORK/<name>.tar.gz, upload LOG..., the metadata, the
# telemetry, the result CSVs and the tarball to Beaker, and send DIR to COLLECTOR (a collector that
# refuses is a WARN: the results stay in DIR on HOST).
task_deliver_results() {
    local dir="$1" work="$2" host="$3"
    shift 3
    if [[ -n "${VSPERF_RESULTS_FILE}" ]]; then
        task_run "Tell where the results are (${VSPERF_RESULTS_FILE})" \
            task_tell_results "${VSPERF_RESULTS_FILE}" "${dir}"
    fi
    task_run "Pack the results for Beaker" tar -C "$(dirname "${dir}")" -czf \
        "${work}/$(basename "${dir}").tar.gz" "$(basename "${dir}")"
    local -a csvs=()
    mapfile -t csvs < <(task_ovsperf_module ovsperf_common.resultdir csvs "${dir}")
    local -a telemetry=()
    [[ ! -f "${dir}/${TASK_TELEMETRY_FILE}" ]] || telemetry=("${dir}/${TASK_TELEMETRY_FILE}")
    task_upload "$@" "${dir}/${TASK_METADATA_FILE}" ${telemetry[@]+"${telemetry[@]}"} \
        ${csvs[@]+"${csvs[@]}"} "${work}/$(basename "${dir}").tar.gz"
    if [[ -z "${COLLECTOR}" ]]; then
        task_log "  No COLLECTOR given: the results stay in ${dir} and in the Beaker logs."
    elif ! task_run "Send ${dir} to ${COLLECTOR}" task_ship_results "${dir}"; then
        task_warn "The collector ${COLLECTOR} did not take the results; they stay in ${dir} on ${host}."
    fi
}
