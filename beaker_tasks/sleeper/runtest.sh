#!/bin/bash
# sleeper: keep the machines of a job reserved for SLEEP_HOURS hours (debugging reservation).
#
# The end time is recorded when the task first starts, so a reboot during the reservation resumes
# with the time left instead of starting over. `touch ${TASK_STATE_DIR}/release` (default
# /var/lib/ovsperf-tasks/sleeper/release) ends the reservation early. The Beaker watchdog is
# extended to cover the reservation (rstrnt-adjust-watchdog).
#
# Parameters (environment): SLEEP_HOURS (required, decimal, at most 720), SLEEPER_TICK_S (how often
# to check for release [s], default 60).
set -o nounset -o pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/task.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/task.sh"

: "${SLEEP_HOURS:=}"
: "${SLEEPER_TICK_S:=60}"
SLEEPER_MAX_HOURS=720

sleeper_params() {
    task_require_params SLEEP_HOURS
    [[ "${SLEEP_HOURS}" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
        task_abort "SLEEP_HOURS '${SLEEP_HOURS}' is not a number of hours."
    SLEEPER_SECONDS="$(awk -v h="${SLEEP_HOURS}" 'BEGIN { printf "%d", h * 3600 }')"
    ((SLEEPER_SECONDS > 0 && SLEEPER_SECONDS <= SLEEPER_MAX_HOURS * 3600)) ||
        task_abort "SLEEP_HOURS '${SLEEP_HOURS}' is not in (0, ${SLEEPER_MAX_HOURS}] hours."
    if [[ ! "${SLEEPER_TICK_S}" =~ ^[0-9]+$ ]] || ((SLEEPER_TICK_S == 0)); then
        task_abort "SLEEPER_TICK_S '${SLEEPER_TICK_S}' is not a positive number of seconds."
    fi
}

sleeper_sleep() {
    local end_file="${TASK_STATE_DIR}/end_epoch" release="${TASK_STATE_DIR}/release" end now left
    if [[ -f "${end_file}" ]] && ((TASK_REBOOTCOUNT > 0)); then
        end="$(<"${end_file}")"
        task_log "Resuming the reservation after a reboot; it ends at $(date -d "@${end}")"
    else
        end=$(($(date +%s) + SLEEPER_SECONDS))
        printf '%s\n' "${end}" >"${end_file}" || task_abort "Cannot write '${end_file}'."
        rm -f "${release}"
    fi
    now="$(date +%s)"
    left=$((end - now))
    if task_have rstrnt-adjust-watchdog; then
        rstrnt-adjust-watchdog "$((left > 0 ? left + 3600 : 3600))" || task_log "Cannot extend the watchdog."
    fi
    task_phase_start Test reserve
    task_log "  Reserved until $(date -d "@${end}"); touch ${release} to release earlier"
    local next_progress=$((now + 3600)) ticks=0 max_ticks=$(((left > 0 ? left : 0) / SLEEPER_TICK_S + 2))
    while ((now < end && ticks < max_ticks)); do
        if [[ -e "${release}" ]]; then
            task_log "  Released early by ${release}"
            break
        fi
        sleep "$((end - now < SLEEPER_TICK_S ? end - now : SLEEPER_TICK_S))"
        ticks=$((ticks + 1))
        now="$(date +%s)"
        if ((now >= next_progress)); then
            task_log "  $(((end - now) / 60)) min of the reservation left"
            next_progress=$((next_progress + 3600))
        fi
    done
    task_phase_end
}

task_init sleeper
sleeper_params
sleeper_sleep
task_finish
