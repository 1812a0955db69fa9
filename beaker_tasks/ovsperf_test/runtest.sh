#!/bin/bash
# ovsperf_test: the engine ovsperf on the DUT (docs/engines.md): ovsperf-lab with OVS-DPDK on the DUT's
# test NICs and ovsperf-trafficgen on the TG, started over SSH; VSperf-format results to the collector.
#
# OVSPERF_ACTION=setup: ovsperf-lab in a venv (OVSPERF_VENV) of a Python >= 3.11, its requirements (the
#   base and 'labhost' groups of pyproject.toml, pinned by packaging/constraints.txt) from the package index,
#   the fetched repository on the venv's path; an SSH key pair for reaching the TG. No reboot (setup_dpdk,
#   which runs next on the DUT, reboots it and binds the test NICs).
# OVSPERF_ACTION=run: the DUT's lab options from the inventory (python3 -m vsperf_configs.labargs), the TG
#   reachable over SSH with the generator installed, `ovsperf-lab run --config SCENARIO <lab options>
#   --output <work>/results` under OVSPERF_TIMEOUT_S, the results directory it names (it writes
#   ovsperf-metadata.json itself, last) sent to COLLECTOR as vsperf_test sends VSperf's (lib/results.sh).
#
# Parameters (environment): OVSPERF_ACTION, SCENARIO, INVENTORY, CATALOG, COLLECTOR, DUT_HOSTNAME (inventory
# key, default `hostname -f`), OVSPERF_TIMEOUT_S, OVSPERF_LAB_ARGS, OVSPERF_VENV, OVSPERF_LAB_PYTHON, OVSPERF_LAB,
# TRAFFICGEN_BINARY, VSPERF_RESULTS_FILE; see README.md.
set -o nounset -o pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/task.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/task.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/results.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/results.sh"

: "${OVSPERF_ACTION:=}"
: "${SCENARIO:=}"
: "${INVENTORY:=}"
: "${CATALOG:=}"
: "${OVSPERF_TIMEOUT_S:=43200}"
: "${OVSPERF_LAB_ARGS:=}"
: "${OVSPERF_VENV:=/root/ovsperf-venv}"
: "${OVSPERF_LAB_PYTHON:=}"
: "${OVSPERF_LAB:=${OVSPERF_VENV}/bin/ovsperf-lab}"
: "${TRAFFICGEN_BINARY:=/usr/local/bin/ovsperf-trafficgen}"
# The roles' Python (pyproject.toml: every role requirement is for Python >= 3.11).
OVSPERF_TEST_PYTHON_MIN_MINOR=11

# --- setup ---------------------------------------------------------------------------------

# ovsperf_test_python_fits VERSION: whether the lab runs on Python VERSION (MAJOR.MINOR).
ovsperf_test_python_fits() {
    local major minor
    IFS=. read -r major minor <<<"$1"
    [[ "${major}" =~ ^[0-9]+$ && "${minor}" =~ ^[0-9]+$ ]] && ((major == 3 && minor >= OVSPERF_TEST_PYTHON_MIN_MINOR))
}

# Choose the Python of the lab's venv: OVSPERF_LAB_PYTHON, else the first of python3.13 … python3 that
# is 3.11 or later. Sets OVSPERF_TEST_PYTHON; aborts otherwise.
ovsperf_test_choose_python() {
    local candidate version
    OVSPERF_TEST_PYTHON=""
    for candidate in "${OVSPERF_LAB_PYTHON}" python3.13 python3.12 python3.11 python3; do
        [[ -n "${candidate}" ]] || continue
        version="$(task_python_version "${candidate}")" || continue
        if ovsperf_test_python_fits "${version}"; then
            OVSPERF_TEST_PYTHON="${candidate}"
            break
        fi
        [[ "${candidate}" != "${OVSPERF_LAB_PYTHON}" ]] ||
            task_abort "OVSPERF_LAB_PYTHON '${OVSPERF_LAB_PYTHON}' is Python ${version}; ovsperf-lab needs 3.${OVSPERF_TEST_PYTHON_MIN_MINOR} or later."
    done
    [[ -n "${OVSPERF_TEST_PYTHON}" ]] ||
        task_abort "No Python 3.${OVSPERF_TEST_PYTHON_MIN_MINOR} or later on ${DUT_HOSTNAME} for ovsperf-lab (python3.13, python3.12," \
            "python3.11, python3): install python3.11 (RHEL 8/9: dnf install python3.11), or set OVSPERF_LAB_PYTHON."
    task_log "  ovsperf-lab's Python: ${OVSPERF_TEST_PYTHON} ($(task_python_version "${OVSPERF_TEST_PYTHON}"))"
}

# Write the lab's requirements (pyproject.toml: the base dependencies and the 'labhost' group: the
# measurement, without bisect's Koji client) to FILE.
ovsperf_test_requirements() {
    "${OVSPERF_VENV}/bin/python" - "${TASK_REPO_ROOT}/pyproject.toml" "$1" <<'PY'
import sys
import tomllib

with open(sys.argv[1], "rb") as handle:
    project = tomllib.load(handle)["project"]
wanted = list(project["dependencies"]) + list(project["optional-dependencies"]["labhost"])
with open(sys.argv[2], "w", encoding="utf-8") as handle:
    handle.write("".join(line + "\n" for line in wanted))
PY
}

# Make OVSPERF_VENV run ovsperf-lab from the fetched repository: its requirements from the package
# index (pinned by packaging/constraints.txt when the repository has it), the repository on the venv's
# path (a .pth file; templates/ is the package ovsperf_templates), and bin/ovsperf-lab.
ovsperf_test_install() {
    local version site constraints="${TASK_REPO_ROOT}/packaging/constraints.txt"
    if [[ ! -x "${OVSPERF_VENV}/bin/python" ]]; then
        "${OVSPERF_TEST_PYTHON}" -m venv "${OVSPERF_VENV}" || return 1
    fi
    version="$(task_python_version "${OVSPERF_VENV}/bin/python")" || return 1
    ovsperf_test_python_fits "${version}" || {
        printf "'%s' is a Python %s venv; remove it (ovsperf-lab needs 3.%s or later)\n" "${OVSPERF_VENV}" "${version}" \
            "${OVSPERF_TEST_PYTHON_MIN_MINOR}"
        return 1
    }
    ovsperf_test_requirements "${OVSPERF_VENV}/ovsperf-lab-requirements.txt" || return 1
    local -a pin=()
    [[ ! -f "${constraints}" ]] || pin=(-c "${constraints}")
    timeout "${TASK_NET_TIMEOUT_S}" "${OVSPERF_VENV}/bin/pip" install -q \
        -r "${OVSPERF_VENV}/ovsperf-lab-requirements.txt" ${pin[@]+"${pin[@]}"} || return 1
    site="${OVSPERF_VENV}/lib/python${version}/site-packages"
    mkdir -p "${site}" &&
        printf '%s\n' "${TASK_REPO_ROOT}" >"${site}/ovsperf-repository.pth" &&
        ln -sfn "${TASK_REPO_ROOT}/templates" "${site}/ovsperf_templates" &&
        printf '#!/bin/sh\n# Written by the ovsperf ovsperf_test task: the lab of the fetched repository.\nexec "%s" -m ovsperf_lab "$@"\n' \
            "${OVSPERF_VENV}/bin/python" >"${OVSPERF_VENV}/bin/ovsperf-lab.tmp" &&
        chmod 755 "${OVSPERF_VENV}/bin/ovsperf-lab.tmp" &&
        mv -f "${OVSPERF_VENV}/bin/ovsperf-lab.tmp" "${OVSPERF_VENV}/bin/ovsperf-lab"
}

# The lab answers --help with its usage (an exit status of 0 alone would pass a wrapper that runs nothing).
ovsperf_test_lab_answers() {
    local usage
    usage="$("${OVSPERF_LAB}" --help)" || return 1
    [[ "${usage}" == "usage: ovsperf-lab"* ]] || {
        echo "'${OVSPERF_LAB} --help' printed no usage of ovsperf-lab."
        return 1
    }
}

ovsperf_test_setup() {
    task_load_dut_inventory
    task_phase_start Setup install
    ovsperf_test_choose_python
    task_run "Install ovsperf-lab of ${TASK_REPO_ROOT} into ${OVSPERF_VENV}" ovsperf_test_install ||
        task_abort "Cannot install ovsperf-lab into '${OVSPERF_VENV}' (package index down?): $(tail -n 1 "${TASK_PHASE_LOG}")"
    task_run "ovsperf-lab runs (${OVSPERF_LAB} --help)" ovsperf_test_lab_answers ||
        task_abort "'${OVSPERF_LAB} --help' fails: the lab is not installed."
    task_run "Create the SSH key pair for the traffic generator host" task_ssh_key "ovsperf-lab@${DUT_HOSTNAME}" ||
        task_abort "Cannot create an SSH key pair."
    task_phase_end
}

# --- run -----------------------------------------------------------------------------------

# ovsperf_test_labargs INVENTORY FILE: the DUT's lab options, each word ended by NUL, into FILE.
ovsperf_test_labargs() {
    task_ovsperf_module vsperf_configs.labargs --inventory "$1" --host "${DUT_HOSTNAME}" --null >"$2"
}

# Read the DUT's ovsperf-lab options from the inventory into OVSPERF_TEST_LABARGS (NUL-separated words:
# no word splitting or globbing), the TG's USER@ADDRESS into OVSPERF_TEST_TG, and --guest-image when a
# test of the scenario needs the guest and the inventory gives its image.
ovsperf_test_config() {
    task_phase_start Setup config
    OVSPERF_TEST_WORK="${TASK_STATE_DIR}/run-$(date +%Y%m%d-%H%M%S)"
    mkdir -p "${OVSPERF_TEST_WORK}/results" || task_abort "Cannot create '${OVSPERF_TEST_WORK}/results'."
    local inventory labargs="${OVSPERF_TEST_WORK}/lab-options.txt" i listing
    inventory="$(task_repo_path "${INVENTORY}")"
    task_run "The lab options of ${DUT_HOSTNAME} from ${INVENTORY}" ovsperf_test_labargs "${inventory}" "${labargs}" ||
        task_abort "The inventory gives no lab options for ${DUT_HOSTNAME}: $(grep ': error: ' "${TASK_PHASE_LOG}" | tail -n 1)"
    mapfile -d '' -t OVSPERF_TEST_LABARGS <"${labargs}"
    OVSPERF_TEST_TG=""
    for ((i = 0; i + 1 < ${#OVSPERF_TEST_LABARGS[@]}; i++)); do
        [[ "${OVSPERF_TEST_LABARGS[i]}" != "--tg-ssh" ]] || OVSPERF_TEST_TG="${OVSPERF_TEST_LABARGS[i + 1]}"
    done
    [[ -n "${OVSPERF_TEST_TG}" ]] || task_abort "The lab options of ${DUT_HOSTNAME} name no --tg-ssh."
    # OVSPERF_LAB_ARGS: more ovsperf-lab run options (a short search on slow hosts), split on blanks.
    local -a extra=()
    local word
    read -r -a extra <<<"${OVSPERF_LAB_ARGS}"
    for word in ${extra[@]+"${extra[@]}"}; do
        [[ "${word}" =~ ^[A-Za-z0-9_.,:=/+-]{1,200}$ ]] ||
            task_abort "OVSPERF_LAB_ARGS word '${word:0:80}' is not an option or value (letters, digits, '_.,:=/+-')."
        [[ ! "${word}" =~ ^--(output|config|catalog)(=|$) ]] ||
            task_abort "OVSPERF_LAB_ARGS may not give ${word%%=*}: the task sets it."
    done
    OVSPERF_TEST_LABARGS+=(${extra[@]+"${extra[@]}"})
    task_log "  ovsperf-lab options: ${OVSPERF_TEST_LABARGS[*]}"
    local -a catalog=()
    [[ -z "${CATALOG}" ]] || catalog=(--catalog "$(task_repo_path "${CATALOG}")")
    listing="$(task_vsperf_config -q --scenario "${SCENARIO}" --host "${DUT_HOSTNAME}" --inventory "${inventory}" \
        ${catalog[@]+"${catalog[@]}"} --list-tests)" || task_abort "Unknown scenario '${SCENARIO}' (vsperf-config --list-tests)."
    OVSPERF_TEST_GUEST=()
    if [[ -n "${INV_GUEST_IMAGE:-}" ]] && grep -qv ' p2p$' <<<"${listing}"; then
        OVSPERF_TEST_GUEST=(--guest-image "${INV_GUEST_IMAGE}")
    fi
    task_phase_end
}

ovsperf_test_tg_ready() {
    # shellcheck disable=SC2086 # COLLECTOR_SSH is a command with options
    timeout 120 ${COLLECTOR_SSH} "${OVSPERF_TEST_TG}" test -x "${TRAFFICGEN_BINARY}"
}

ovsperf_test_preflight() {
    task_phase_start Setup preflight
    local hugepages
    hugepages="$(task_hugepages_total)"
    ((hugepages > 0)) || task_abort "No hugepages are reserved on ${DUT_HOSTNAME}."
    task_run "ovsperf-lab runs (${OVSPERF_LAB} --help)" ovsperf_test_lab_answers ||
        task_abort "'${OVSPERF_LAB}' does not run (run OVSPERF_ACTION=setup first)."
    task_run "Traffic generator ${OVSPERF_TEST_TG} reachable over SSH with ${TRAFFICGEN_BINARY}" ovsperf_test_tg_ready ||
        task_abort "Cannot reach ${OVSPERF_TEST_TG} over SSH with an executable '${TRAFFICGEN_BINARY}' (build_trafficgen ran there?)."
    local -a nics
    read -r -a nics <<<"${INV_TEST_NICS}"
    task_log_versions "${nics[@]}"
    task_phase_end
}

# The lab's log (stderr) goes to its log file and, live, to the console (fd 3); its stdout (the results
# directory's path, last) to a file of its own.
ovsperf_test_lab() {
    local -a catalog=()
    [[ -z "${CATALOG}" ]] || catalog=(--catalog "$(task_repo_path "${CATALOG}")")
    { timeout --kill-after=60 "${OVSPERF_TIMEOUT_S}" "${OVSPERF_LAB}" ${catalog[@]+"${catalog[@]}"} run \
        --config "${SCENARIO}" "${OVSPERF_TEST_LABARGS[@]}" ${OVSPERF_TEST_GUEST[@]+"${OVSPERF_TEST_GUEST[@]}"} \
        --output "${OVSPERF_TEST_WORK}/results" >"${OVSPERF_TEST_WORK}/ovsperf-lab-stdout.txt"; } 2>&1 |
        tee "${OVSPERF_TEST_WORK}/ovsperf-lab.log" >&3
}

ovsperf_test_measure() {
    task_phase_start Test ovsperf-lab
    task_run "Run ovsperf-lab for ${SCENARIO} (at most ${OVSPERF_TIMEOUT_S} s)" ovsperf_test_lab
    cat "${OVSPERF_TEST_WORK}/ovsperf-lab.log" >>"${TASK_PHASE_LOG}"
    OVSPERF_TEST_RESULTS="$(awk 'NF { last = $0 } END { print last }' "${OVSPERF_TEST_WORK}/ovsperf-lab-stdout.txt")"
    if [[ "$(dirname "${OVSPERF_TEST_RESULTS}")" != "${OVSPERF_TEST_WORK}/results" ||
        ! "$(basename "${OVSPERF_TEST_RESULTS}")" =~ ^results_[0-9]{4}-[0-9]{2}-[0-9]{2}_[0-9]{2}-[0-9]{2}-[0-9]{2}$ ||
        ! -d "${OVSPERF_TEST_RESULTS}" ]]; then
        task_fail "ovsperf-lab named no results directory under ${OVSPERF_TEST_WORK}/results (its last line: '${OVSPERF_TEST_RESULTS}')."
        task_upload "${OVSPERF_TEST_WORK}/ovsperf-lab.log"
        task_phase_end
        return 1
    fi
    [[ -f "${OVSPERF_TEST_RESULTS}/${TASK_METADATA_FILE}" ]] ||
        task_fail "ovsperf-lab wrote no ${TASK_METADATA_FILE} into ${OVSPERF_TEST_RESULTS}: an unfinished run."
    task_phase_end
    return 0 # a failed run still has results to collect
}

ovsperf_test_collect() {
    task_phase_start Cleanup collect
    task_run "Keep ovsperf-lab's log" cp "${OVSPERF_TEST_WORK}/ovsperf-lab.log" "${OVSPERF_TEST_RESULTS}/ovsperf-lab.log"
    task_deliver_results "${OVSPERF_TEST_RESULTS}" "${OVSPERF_TEST_WORK}" "${DUT_HOSTNAME}" \
        "${OVSPERF_TEST_WORK}/ovsperf-lab.log"
    task_phase_end
}

ovsperf_test_run() {
    task_require_params SCENARIO
    task_check_collector
    [[ "${OVSPERF_TIMEOUT_S}" =~ ^[1-9][0-9]{0,6}$ ]] || task_abort "OVSPERF_TIMEOUT_S '${OVSPERF_TIMEOUT_S}' is not a number of seconds."
    task_load_dut_inventory
    ovsperf_test_config
    ovsperf_test_preflight
    ovsperf_test_measure || task_finish
    ovsperf_test_collect
}

task_init ovsperf_test
case "${OVSPERF_ACTION}" in
    setup) ovsperf_test_setup ;;
    run) ovsperf_test_run ;;
    *) task_abort "OVSPERF_ACTION '${OVSPERF_ACTION}' is not 'setup' or 'run'." ;;
esac
task_finish
