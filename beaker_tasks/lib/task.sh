# shellcheck shell=bash
# Shared helper of the ovsperf Beaker tasks: phases, run-and-report, results, logs, abort,
# reboot-resume and parameters. Sourced by each beaker_tasks/<task>/runtest.sh (STYLE.md §8).
#
# Results go through restraint (rstrnt-report-result, rstrnt-report-log, rstrnt-abort,
# rstrnt-reboot), else the legacy RHTS commands (rhts-report-result, rhts-submit-log, rhts-abort,
# rhts-reboot), else plain output, so every task also runs standalone: ./runtest.sh with its
# parameters in the environment. Result conventions (CKI): a measured failure is FAIL; a lab
# problem (no hugepages, NIC missing, repository down, bad parameter) is WARN followed by an abort;
# never PASS.
#
# Tests and dry runs may redirect the system paths the tasks read or write:
#   TASK_STATE_DIR (default /var/lib/ovsperf-tasks/<task>), TASK_SYSFS (/sys), TASK_PROC (/proc),
#   TASK_ETC (/etc).
# Network operations (git, pip, ssh, rsync) are bounded by TASK_NET_TIMEOUT_S (default 1800 s).

TASK_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TASK_REPO_ROOT="$(cd "${TASK_LIB_DIR}/../.." && pwd)"
TASK_NAME=""
TASK_PHASE=""
TASK_PHASE_KIND=""
TASK_PHASE_RESULT=""
TASK_PHASE_LOG=""
TASK_PHASE_COUNT=0
TASK_WORST="PASS"
TASK_REBOOTCOUNT=0

# Print a message to stderr and exit 2 (a bug or misuse of this helper, not a lab result).
die() {
    printf 'task.sh: %s\n' "$*" >&2
    exit 2
}

task_log() {
    printf ':: [ %s ] %s\n' "$(date '+%H:%M:%S')" "$*"
}

# Whether a command is available.
task_have() {
    command -v "$1" >/dev/null 2>&1
}

# Start the task: name, reboot count, state and log directories. Call once, first.
task_init() {
    local name="$1"
    [[ -n "${name}" ]] || die "task_init needs the task name"
    TASK_NAME="${name}"
    TASK_REBOOTCOUNT="${RSTRNT_REBOOTCOUNT:-${REBOOTCOUNT:-0}}"
    [[ "${TASK_REBOOTCOUNT}" =~ ^[0-9]+$ ]] || die "reboot count '${TASK_REBOOTCOUNT}' is not a number"
    : "${TASK_STATE_DIR:=/var/lib/ovsperf-tasks/${name}}"
    : "${TASK_SYSFS:=/sys}"
    : "${TASK_PROC:=/proc}"
    : "${TASK_ETC:=/etc}"
    : "${TASK_NET_TIMEOUT_S:=1800}"
    TASK_LOG_DIR="${TASK_STATE_DIR}/logs/boot${TASK_REBOOTCOUNT}"
    TASK_RESULTS_FILE="${TASK_STATE_DIR}/results.txt"
    mkdir -p "${TASK_LOG_DIR}" || die "cannot create '${TASK_LOG_DIR}'"
    # File descriptor 3 stays the task's console (the harness's live log) even inside task_run,
    # which sends a step's output to the phase log: long steps tee their progress to it.
    exec 3>&1
    if [[ -z "${RSTRNT_JOBID:-}" && -z "${JOBID:-}" ]]; then
        TASK_STANDALONE=1
    else
        TASK_STANDALONE=0
    fi
    task_log "Task ${TASK_NAME}: reboot count ${TASK_REBOOTCOUNT}, job '${RSTRNT_JOBID:-${JOBID:-}}' (standalone ${TASK_STANDALONE})," \
        "state in ${TASK_STATE_DIR}"
}

# task_report NAME RESULT [METRIC] [LOGFILE]: report one result (PASS|WARN|FAIL|SKIP).
# METRIC must be an integer of at most 10 digits (Beaker stores Numeric(10,0)).
task_report() {
    local name="$1" result="$2" metric="${3:-}" logfile="${4:-}"
    case "${result}" in
        PASS | WARN | FAIL | SKIP) ;;
        *) die "result '${result}' is not PASS, WARN, FAIL or SKIP" ;;
    esac
    if [[ -n "${metric}" && ! "${metric}" =~ ^-?[0-9]{1,10}$ ]]; then
        die "metric '${metric}' is not an integer of at most 10 digits"
    fi
    printf '%s %s %s\n' "${result}" "${name}" "${metric}" >>"${TASK_RESULTS_FILE}"
    task_log "RESULT ${name}: ${result}${metric:+ (${metric})}"
    if task_have rstrnt-report-result; then
        local -a args=()
        [[ -n "${logfile}" && -f "${logfile}" ]] && args+=(-o "${logfile}")
        args+=("${name}" "${result}")
        [[ -n "${metric}" ]] && args+=("${metric}")
        rstrnt-report-result "${args[@]}" || task_log "rstrnt-report-result failed for ${name}"
    elif task_have rhts-report-result; then
        rhts-report-result "${name}" "${result}" "${logfile:-/dev/null}" "${metric:-0}" ||
            task_log "rhts-report-result failed for ${name}"
    fi
    case "${result}" in
        FAIL) TASK_WORST="FAIL" ;;
        WARN) [[ "${TASK_WORST}" == "FAIL" ]] || TASK_WORST="WARN" ;;
    esac
    return 0
}

# task_upload FILE...: attach files to the task's results (Beaker logs).
task_upload() {
    local file
    for file in "$@"; do
        [[ -f "${file}" ]] || {
            task_log "Not uploading '${file}': no such file"
            continue
        }
        if task_have rstrnt-report-log; then
            rstrnt-report-log -l "${file}" || task_log "rstrnt-report-log failed for ${file}"
        elif task_have rhts-submit-log; then
            rhts-submit-log -l "${file}" || task_log "rhts-submit-log failed for ${file}"
        else
            task_log "Log: ${file}"
        fi
    done
}

# task_phase_start Setup|Test|Cleanup NAME: open a phase. A failing command in a Test phase is a
# FAIL (a measured failure); in Setup and Cleanup phases it is a WARN (as beakerlib does).
task_phase_start() {
    local kind="$1" name="$2"
    [[ -z "${TASK_PHASE}" ]] || die "phase '${TASK_PHASE}' is still open when starting '${name}'"
    case "${kind}" in
        Setup | Test | Cleanup) ;;
        *) die "phase kind '${kind}' is not Setup, Test or Cleanup" ;;
    esac
    TASK_PHASE="${name}"
    TASK_PHASE_KIND="${kind}"
    TASK_PHASE_RESULT="PASS"
    TASK_PHASE_COUNT=$((TASK_PHASE_COUNT + 1))
    TASK_PHASE_LOG="${TASK_LOG_DIR}/$(printf '%02d' "${TASK_PHASE_COUNT}")-${name}.log"
    : >"${TASK_PHASE_LOG}"
    task_log "PHASE ${name} (${kind}) start"
}

# Degrade the open phase to RESULT unless it is already worse.
task__phase_degrade() {
    local result="$1"
    case "${result}/${TASK_PHASE_RESULT}" in
        FAIL/*) TASK_PHASE_RESULT="FAIL" ;;
        WARN/PASS) TASK_PHASE_RESULT="WARN" ;;
    esac
}

# task_run DESCRIPTION CMD [ARG...]: run a command in the open phase, log its output, mark the
# phase failed (FAIL in a Test phase, WARN otherwise) when it exits non-zero; return its status.
task_run() {
    local description="$1"
    shift
    [[ -n "${TASK_PHASE}" ]] || die "task_run '${description}' outside a phase"
    printf '+ %s\n' "$*" >>"${TASK_PHASE_LOG}"
    "$@" >>"${TASK_PHASE_LOG}" 2>&1
    local rc=$?
    if ((rc == 0)); then
        task_log "  ok: ${description}"
    else
        task_log "  FAILED (exit ${rc}): ${description}: $*"
        printf 'FAILED (exit %s): %s\n' "${rc}" "${description}" >>"${TASK_PHASE_LOG}"
        if [[ "${TASK_PHASE_KIND}" == "Test" ]]; then
            task__phase_degrade FAIL
        else
            task__phase_degrade WARN
        fi
    fi
    return "${rc}"
}

# task_fail MESSAGE / task_warn MESSAGE: record a failed check in the open phase.
task_fail() {
    task_log "  FAIL: $*"
    printf 'FAIL: %s\n' "$*" >>"${TASK_PHASE_LOG:-/dev/null}"
    task__phase_degrade FAIL
}

task_warn() {
    task_log "  WARN: $*"
    printf 'WARN: %s\n' "$*" >>"${TASK_PHASE_LOG:-/dev/null}"
    task__phase_degrade WARN
}

# task_phase_end: close the phase and report it as <task>/<phase> with its log; return 0 if it
# passed, 1 otherwise.
task_phase_end() {
    [[ -n "${TASK_PHASE}" ]] || die "task_phase_end without an open phase"
    local name="${TASK_PHASE}" result="${TASK_PHASE_RESULT}"
    task_log "PHASE ${name} end: ${result}"
    task_report "${TASK_NAME}/${name}" "${result}" "" "${TASK_PHASE_LOG}"
    TASK_PHASE=""
    TASK_PHASE_KIND=""
    [[ "${result}" == "PASS" ]]
}

# task_abort MESSAGE: a lab problem. Report WARN (closing the open phase), abort the recipe, exit 2.
# Copy stdin to stdout dropping bytes that are not UTF-8 (without iconv: unchanged).
task_valid_utf8() {
    if task_have iconv; then
        iconv -c -f UTF-8 -t UTF-8 2>/dev/null || true
    else
        cat
    fi
}

task_abort() {
    local message name="abort" logfile
    # One line, no control characters (a parameter may carry a newline or an escape sequence
    # into the console, the task log and Beaker's result: C0, DEL and UTF-8's C1 such as CSI),
    # at most 2000 bytes, valid UTF-8 (a character cut at the end is dropped).
    message="$(printf '%s' "$*" | LC_ALL=C tr '\000-\037\177' '?' | LC_ALL=C sed 's/\xc2[\x80-\x9f]/?/g' |
        LC_ALL=C head -c 2000 | task_valid_utf8)"
    task_log "ABORT: ${message}"
    printf '%s\n' "${message}" >&2
    if [[ -n "${TASK_PHASE}" ]]; then
        printf 'ABORT: %s\n' "${message}" >>"${TASK_PHASE_LOG}"
        name="${TASK_PHASE}"
        logfile="${TASK_PHASE_LOG}"
        TASK_PHASE=""
    else
        logfile="${TASK_LOG_DIR}/abort.log"
        printf 'ABORT: %s\n' "${message}" >"${logfile}"
    fi
    task_report "${TASK_NAME}/${name}" WARN "" "${logfile}"
    task_upload "${logfile}"
    if task_have rstrnt-abort; then
        rstrnt-abort -t recipe
    elif task_have rhts-abort; then
        rhts-abort -t recipe
    fi
    exit 2
}

# task_skip MESSAGE: unsupported hardware or nothing to do. Report SKIP and exit 0.
task_skip() {
    task_log "SKIP: $*"
    task_report "${TASK_NAME}" SKIP
    exit 0
}

# task_require_params NAME...: abort (WARN) when a parameter is empty.
task_require_params() {
    local param
    for param in "$@"; do
        [[ -n "${!param:-}" ]] || task_abort "Parameter ${param} is required (set it as a task <param> or in the environment)."
    done
}

# task_done STEP: whether STEP was completed (on this or an earlier boot). task_mark STEP records it.
task_done() {
    [[ -f "${TASK_STATE_DIR}/$1.done" ]]
}

task_mark() {
    date '+%Y-%m-%dT%H:%M:%S%z' >"${TASK_STATE_DIR}/$1.done" || die "cannot write state '${TASK_STATE_DIR}/$1.done'"
}

# task_reboot: reboot through the harness and resume with the next reboot count. Standalone, ask
# the user to reboot and rerun. Never inside an open phase (beakerlib's rule).
task_reboot() {
    [[ -z "${TASK_PHASE}" ]] || die "task_reboot inside the open phase '${TASK_PHASE}'"
    local next=$((TASK_REBOOTCOUNT + 1))
    task_log "Rebooting; the task resumes with reboot count ${next}"
    if task_have rstrnt-reboot; then
        rstrnt-reboot
    elif task_have rhts-reboot; then
        rhts-reboot
    else
        task_log "Standalone run: reboot the machine, then run again with REBOOTCOUNT=${next}"
    fi
    exit 0
}

# task_finish: print the summary and exit 1 if anything failed, else 0.
task_finish() {
    [[ -z "${TASK_PHASE}" ]] || task_phase_end
    task_log "Task ${TASK_NAME} finished: ${TASK_WORST}"
    [[ "${TASK_WORST}" != "FAIL" ]] || exit 1
    exit 0
}

# task_os_family: print 'debian' for a Debian-family host (os-release ID or ID_LIKE), else 'redhat'.
task_os_family() {
    local file="${TASK_ETC}/os-release" id="" like=""
    if [[ -r "${file}" ]]; then
        id="$(sed -n 's/^ID=//p' "${file}" | tr -d "\"' ")"
        like="$(sed -n 's/^ID_LIKE=//p' "${file}" | tr -d "\"'")"
    fi
    if [[ "${id}" == "debian" || " ${like} " == *" debian "* ]]; then
        echo debian
    else
        echo redhat
    fi
}

# Resolve a path given relative to the repository the tasks were fetched from.
task_repo_path() {
    case "$1" in
        /*) printf '%s\n' "$1" ;;
        *) printf '%s\n' "${TASK_REPO_ROOT}/$1" ;;
    esac
}

# task_python: print the Python to run our package with: $OVSPERF_PYTHON, else the newest of
# python3.12, python3.11, python3.9, python3 that is at least 3.9 and has PyYAML (RHEL 8's python3
# is 3.6, too old for vsperf_configs).
task_python() {
    local candidate
    for candidate in "${OVSPERF_PYTHON:-}" python3.12 python3.11 python3.9 python3; do
        if [[ -n "${candidate}" ]] && task_have "${candidate}" &&
            "${candidate}" -c 'import sys, yaml; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
            printf '%s\n' "${candidate}"
            return 0
        fi
    done
    return 1
}

# task_ovsperf_module MODULE ARG...: run 'python -m MODULE' of the ovsperf package, installed or
# straight from the fetched repository (ovsperf_common.metadata, ovsperf_common.resultdir, ...).
task_ovsperf_module() {
    local python module="$1"
    shift
    python="$(task_python)" || {
        printf '%s: no Python 3.9 or later with PyYAML found (set OVSPERF_PYTHON)\n' "${module}" >&2
        return 2
    }
    PYTHONPATH="${TASK_REPO_ROOT}${PYTHONPATH:+:${PYTHONPATH}}" "${python}" -m "${module}" "$@"
}

# task_vsperf_config ARG...: run vsperf-config, installed or straight from the fetched repository.
task_vsperf_config() {
    if task_have vsperf-config; then
        vsperf-config "$@"
    else
        task_ovsperf_module vsperf_configs.cli "$@"
    fi
}

# task_ssh_key COMMENT: make root's ed25519 key pair (~/.ssh/id_ed25519) unless it exists: the DUT's
# key for the traffic generator host (perf_synchronization SYNC_DATA=ssh-pubkey carries it over).
task_ssh_key() {
    [[ -f "${HOME}/.ssh/id_ed25519" ]] && return 0
    mkdir -p "${HOME}/.ssh" && chmod 700 "${HOME}/.ssh" &&
        ssh-keygen -q -t ed25519 -N '' -C "$1" -f "${HOME}/.ssh/id_ed25519"
}

# --- CPU isolation (tuned cpu-partitioning, irqbalance) ---------------------------------------

# task_tuned_isolate CPULIST: write tuned's cpu-partitioning variables (isolated_cores).
task_tuned_isolate() {
    mkdir -p "${TASK_ETC}/tuned" &&
        printf '# Written by the ovsperf %s task.\nisolated_cores=%s\n' "${TASK_NAME}" "$1" \
            >"${TASK_ETC}/tuned/cpu-partitioning-variables.conf"
}

# task_ban_irqs CPULIST [DIR]: keep irqbalance off CPULIST (IRQBALANCE_BANNED_CPULIST, other lines
# kept) in /etc/DIR/irqbalance: DIR is sysconfig (Red Hat, the default) or default (Debian).
task_ban_irqs() {
    local file="${TASK_ETC}/${2:-sysconfig}/irqbalance"
    mkdir -p "${file%/*}" && touch "${file}" || return 1
    grep -v '^IRQBALANCE_BANNED_CPULIST=' "${file}" >"${file}.ovsperf" || true # grep exits 1 on an empty file
    printf 'IRQBALANCE_BANNED_CPULIST=%s\n' "$1" >>"${file}.ovsperf" &&
        mv "${file}.ovsperf" "${file}"
}

# Whether tuned's active profile is cpu-partitioning.
task_tuned_active() {
    tuned-adm active | grep -q 'cpu-partitioning'
}

# --- host synchronisation (perf_synchronization/perfsync.py) ----------------------------------

# task_sync_state STATE: print the state name as published inside this Beaker job,
# <STATE>.J<job id>: every recipe of the job (guest included) agrees on it, and a state left on a
# reused machine by an earlier job never satisfies a waiter of this one. Run by ovsperf-remote (no
# job, OVSPERF_RUN_ID set): <STATE>.R<run id>, for the same reason. Standalone: STATE itself.
task_sync_state() {
    local job="${RSTRNT_JOBID:-${JOBID:-}}"
    if [[ -n "${job}" ]]; then
        printf '%s.J%s\n' "$1" "${job#J:}"
    elif [[ -n "${OVSPERF_RUN_ID:-}" ]]; then
        printf '%s.R%s\n' "$1" "${OVSPERF_RUN_ID}"
    else
        printf '%s\n' "$1"
    fi
}

# task_perfsync ARG...: run perfsync.py (standard library only, so the platform python3 will do).
task_perfsync() {
    "${OVSPERF_PYTHON:-python3}" "${TASK_LIB_DIR}/../perf_synchronization/perfsync.py" "$@"
}

# task_sync_open_port: open perfsync's TCP port when firewalld runs (restraint's own sync suffers
# from a closed 6776, reference/beaker.md §5).
task_sync_open_port() {
    local port="${PERFSYNC_PORT:-6780}"
    if task_have firewall-cmd && firewall-cmd --state >/dev/null 2>&1; then
        task_run "Open TCP ${port} in firewalld" firewall-cmd --add-port="${port}/tcp" ||
            task_warn "Cannot open TCP ${port}; peers may not reach this host."
    fi
}

# task_find_inventory: when INVENTORY is empty, use $OVSPERF_INVENTORY, /etc/ovsperf/inventory.yaml or
# <repository>/lab/inventory.yaml, the first that exists (a lab keeps its inventory in its fork).
task_find_inventory() {
    [[ -z "${INVENTORY:-}" ]] || return 0
    local candidate
    for candidate in "${OVSPERF_INVENTORY:-}" /etc/ovsperf/inventory.yaml "${TASK_REPO_ROOT}/lab/inventory.yaml"; do
        if [[ -n "${candidate}" && -f "${candidate}" ]]; then
            INVENTORY="${candidate}"
            task_log "Using the host inventory ${INVENTORY}"
            return 0
        fi
    done
    return 0
}

# task_load_inventory HOST: read HOST's inventory entry (parameter INVENTORY) into INV_* variables
# (INV_TEST_NICS, INV_ISOLATED_CPUS, INV_PMD_CPUS, INV_MOONGEN_ADDRESS, ...). Return 1 on error.
task_load_inventory() {
    local host="$1" output key value
    output="$(task_vsperf_config -q --host "${host}" --inventory "$(task_repo_path "${INVENTORY}")" --host-env)" ||
        return 1
    while IFS='=' read -r key value; do
        [[ "${key}" =~ ^[A-Z][A-Z0-9_]*$ ]] || continue
        printf -v "INV_${key}" '%s' "${value}"
    done <<<"${output}"
}

# task_load_dut_inventory: find the inventory (INVENTORY, required), read the entry of DUT_HOSTNAME
# (default `hostname -f`) into INV_* variables; abort (WARN) when it cannot be read or is not a DUT.
task_load_dut_inventory() {
    task_find_inventory
    task_require_params INVENTORY
    : "${DUT_HOSTNAME:=$(hostname -f)}"
    task_load_inventory "${DUT_HOSTNAME}" ||
        task_abort "Cannot read the inventory entry of '${DUT_HOSTNAME}' from '${INVENTORY}'."
    [[ "${INV_ROLE}" == "dut" ]] || task_abort "'${DUT_HOSTNAME}' is not a DUT in '${INVENTORY}'."
}

# task_python_version PYTHON: print PYTHON's MAJOR.MINOR version; return 1 when it does not run.
task_python_version() {
    "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null
}

# task_pci_netdev PCI: print the kernel network interface of a PCI NIC (empty when bound to DPDK).
task_pci_netdev() {
    local dir="${TASK_SYSFS}/bus/pci/devices/$1/net" entry
    [[ -d "${dir}" ]] || return 0
    for entry in "${dir}"/*; do
        [[ -e "${entry}" ]] && printf '%s\n' "$(basename "${entry}")"
    done
    return 0
}

# task_pci_driver PCI: print the driver a PCI device is bound to (empty when none).
task_pci_driver() {
    local link="${TASK_SYSFS}/bus/pci/devices/$1/driver"
    [[ -L "${link}" ]] && basename "$(readlink "${link}")"
    return 0
}

# task_pci_present PCI: whether the PCI device exists.
task_pci_present() {
    [[ -e "${TASK_SYSFS}/bus/pci/devices/$1" ]]
}

# task_hugepages_total: print the number of reserved hugepages of all sizes [1].
task_hugepages_total() {
    local total=0 file count
    for file in "${TASK_SYSFS}"/kernel/mm/hugepages/hugepages-*/nr_hugepages; do
        [[ -f "${file}" ]] || continue
        count="$(<"${file}")"
        [[ "${count}" =~ ^[0-9]+$ ]] && total=$((total + count))
    done
    printf '%s\n' "${total}"
}

# task_log_versions NIC_PCI...: record the environment (STYLE.md §5): kernel, command line, OVS,
# DPDK, NIC drivers and firmware. Best effort: a missing tool is noted, never fatal.
task_log_versions() {
    local pci netdev
    {
        printf 'kernel: %s\n' "$(uname -r)"
        printf 'cmdline: %s\n' "$(cat "${TASK_PROC}/cmdline" 2>/dev/null)"
        if task_have ovs-vswitchd; then ovs-vswitchd --version 2>&1 | head -n 1; else echo 'ovs-vswitchd: not installed'; fi
        if task_have rpm; then rpm -q openvswitch dpdk kernel 2>&1; fi
        if task_have dpdk-testpmd; then printf 'dpdk-testpmd: %s\n' "$(command -v dpdk-testpmd)"; fi
        for pci in "$@"; do
            printf 'NIC %s driver %s\n' "${pci}" "$(task_pci_driver "${pci}")"
            netdev="$(task_pci_netdev "${pci}")"
            if [[ -n "${netdev}" ]] && task_have ethtool; then ethtool -i "${netdev}" 2>&1; fi
        done
    } >"${TASK_LOG_DIR}/versions.log" 2>&1
    cat "${TASK_LOG_DIR}/versions.log"
    task_upload "${TASK_LOG_DIR}/versions.log"
}
