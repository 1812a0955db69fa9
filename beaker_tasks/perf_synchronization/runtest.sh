#!/bin/bash
# perf_synchronization: set a state on this host, or wait (bounded) until a peer host has set one.
#
# Each host serves the states it has set over HTTP (perfsync.py, TCP ${PERFSYNC_PORT}); states live
# on disk, so a reboot loses nothing. A state may carry small data, which is how the hosts exchange
# SSH keys without any secret in the job: the DUT publishes its public key (SYNC_DATA=ssh-pubkey)
# and the traffic generator installs it into authorized_keys; the traffic generator publishes its
# host keys (SYNC_DATA=ssh-hostkey) and the DUT installs them into known_hosts.
#
# Parameters (environment):
#   SYNC_ACTION=set|wait, SYNC_STATE (e.g. MOONGEN_READY),
#   SYNC_PEER (wait: host name(s) of the peer, space-separated), SYNC_TIMEOUT_S (wait, default 3600),
#   SYNC_DATA (optional): 'ssh-pubkey', 'ssh-hostkey', or a file path (set: publish it;
#   wait: write the peer's data there), SYNC_HOST_NAMES (set ssh-hostkey: names for known_hosts,
#   default `hostname -f` and `hostname -I`), PERFSYNC_PORT (default 6780), PERFSYNC_STATE_DIR.
# The peer never arriving is a lab problem: WARN and abort, naming state, peer and time waited.
# Inside a Beaker job the state is published as <SYNC_STATE>.J<job id>: every recipe of the job
# (guest included) agrees on the name, and a state left on a reused machine by an earlier job can
# never satisfy a waiter of this one.
set -o nounset -o pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/task.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/task.sh"

: "${SYNC_ACTION:=}"
: "${SYNC_STATE:=}"
: "${SYNC_PEER:=}"
: "${SYNC_TIMEOUT_S:=3600}"
: "${SYNC_DATA:=}"
: "${SYNC_HOST_NAMES:=}"
: "${PERFSYNC_PORT:=6780}"
: "${PERFSYNC_STATE_DIR:=/var/lib/ovsperf-perfsync}"
export PERFSYNC_PORT PERFSYNC_STATE_DIR
PERF_SYNC_JOB="${RSTRNT_JOBID:-${JOBID:-}}"
PERF_SYNC_STATE="$(task_sync_state "${SYNC_STATE}")"

perf_sync_params() {
    task_require_params SYNC_ACTION SYNC_STATE
    case "${SYNC_ACTION}" in
        set) ;;
        wait)
            task_require_params SYNC_PEER
            if [[ ! "${SYNC_TIMEOUT_S}" =~ ^[0-9]+$ ]] || ((SYNC_TIMEOUT_S == 0)); then
                task_abort "SYNC_TIMEOUT_S '${SYNC_TIMEOUT_S}' is not a positive number of seconds."
            fi
            ;;
        *) task_abort "SYNC_ACTION '${SYNC_ACTION}' is not 'set' or 'wait'." ;;
    esac
    [[ "${SYNC_STATE}" =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$ ]] ||
        task_abort "SYNC_STATE '${SYNC_STATE}' is not 1-48 letters, digits, '_', '.', '-'."
    [[ "${PERF_SYNC_STATE}" =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ ]] ||
        task_abort "Job id '${PERF_SYNC_JOB}' makes the state name '${PERF_SYNC_STATE}' invalid."
}

# perf_sync_hostkeys FILE: write this host's SSH host keys as known_hosts lines "NAMES TYPE KEY".
perf_sync_hostkeys() {
    local file="$1" names key found=0
    names="${SYNC_HOST_NAMES:-$(hostname -f) $(hostname -I 2>/dev/null)}"
    names="$(printf '%s' "${names}" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')"
    : >"${file}"
    for key in "${TASK_ETC}"/ssh/ssh_host_*_key.pub; do
        [[ -f "${key}" ]] || continue
        printf '%s %s\n' "${names}" "$(cut -d' ' -f1,2 "${key}")" >>"${file}"
        found=1
    done
    ((found))
}

perf_sync_set() {
    task_phase_start Setup "set-${SYNC_STATE}"
    task_sync_open_port
    local -a args=(--set "${PERF_SYNC_STATE}")
    local data=""
    case "${SYNC_DATA}" in
        "") ;;
        ssh-pubkey)
            for data in "${HOME}/.ssh/id_ed25519.pub" "${HOME}/.ssh/id_rsa.pub" ""; do
                [[ -z "${data}" || -f "${data}" ]] && break
            done
            [[ -n "${data}" ]] || task_abort "No SSH public key in ${HOME}/.ssh to publish (run vsperf_test setup first)."
            ;;
        ssh-hostkey)
            data="${TASK_LOG_DIR}/hostkeys-${SYNC_STATE}.txt"
            task_run "Collect this host's SSH host keys" perf_sync_hostkeys "${data}" ||
                task_abort "No SSH host keys in ${TASK_ETC}/ssh to publish."
            ;;
        *)
            data="${SYNC_DATA}"
            [[ -f "${data}" ]] || task_abort "SYNC_DATA file '${data}' does not exist."
            ;;
    esac
    [[ -z "${data}" ]] || args+=(--data "${data}")
    task_run "Set state ${PERF_SYNC_STATE}${data:+ with data from ${data}}" task_perfsync "${args[@]}" ||
        task_abort "Cannot set state '${SYNC_STATE}' (see the log: state server on TCP ${PERFSYNC_PORT})."
    task_phase_end
}

perf_sync_wait() {
    task_phase_start Setup "wait-${SYNC_STATE}"
    local -a extra=()
    case "${SYNC_DATA}" in
        "") ;;
        ssh-pubkey) extra=(--install authorized_keys) ;;
        ssh-hostkey) extra=(--install known_hosts) ;;
        *) extra=(--output "${SYNC_DATA}") ;;
    esac
    local peer started elapsed
    for peer in ${SYNC_PEER}; do
        started="$(date +%s)"
        if ! task_run "Wait up to ${SYNC_TIMEOUT_S} s for state ${PERF_SYNC_STATE} from ${peer}" \
            task_perfsync --wait "${PERF_SYNC_STATE}" --peer "${peer}" --timeout "${SYNC_TIMEOUT_S}" ${extra[@]+"${extra[@]}"}; then
            elapsed=$(($(date +%s) - started))
            task_abort "Peer '${peer}' did not set state '${PERF_SYNC_STATE}' (waited ${elapsed} s of ${SYNC_TIMEOUT_S} s):" \
                "$(grep '^perfsync: ' "${TASK_PHASE_LOG}" | tail -n 1)"
        fi
    done
    task_phase_end
}

task_init perf_synchronization
perf_sync_params
if [[ "${SYNC_ACTION}" == "set" ]]; then
    perf_sync_set
else
    perf_sync_wait
fi
task_finish
