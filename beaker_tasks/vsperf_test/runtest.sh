#!/bin/bash
# vsperf_test: prepare the DUT (or its guest) for VSperf, or run one scenario and ship the results.
#
# VSPERF_ACTION=setup (DUT, boot 0): tuned cpu-partitioning with the DUT's isolated CPUs, IRQs kept
#   off them, NetworkManager off the test NICs, VSperf checked out at a pinned commit with its Python
#   dependencies in a venv of a Python it runs on (3.6 to 3.9), an SSH key pair for reaching the
#   MoonGen host, our guest "DPDK source tree" adapter (guest-dpdk/) at VSPERF_GUEST_DPDK_DIR with an
#   rte_version.h of the DUT's packaged DPDK; reboot; (boot 1+) checks.
# VSPERF_ACTION=setup GUEST=1 (inside the guest): DPDK present, vfio-pci in no-IOMMU mode; in a
#   Beaker job, then the perfsync state GUEST_READY for the DUT.
# VSPERF_ACTION=run: generate the VSperf configuration (vsperf-config) for SCENARIO on this DUT,
#   with our no-op pod (pods/: VSperf 10 makes a Kubernetes pod per p2p test otherwise) and VSperf's
#   own hugetlbfs mount (VSPERF_HUGEPAGE_DIR, one mount per test: VSperf unmounts HUGEPAGE_DIR after
#   each), wait for the Beaker guest's GUEST_READY and shut it off (guest scenarios), run VSperf (with
#   --integration for the overlay tests, deployment op2p: VSperf's integration tests), take the
#   results directory from its log ("Creating result directory: ..."), check that a CSV exists for
#   every requested test (VSperf exits 0 when tests fail), keep every version of MoonGen's raw logs
#   (VSperf overwrites /tmp/moongen/<n>/moongen-run.log per frame size), turn the DUT telemetry our
#   VSperf collector captured around each test (collectors/ovsperf_telemetry.py) into
#   ovsperf-telemetry.json, write ovsperf-metadata.json LAST,
#   rsync the directory to COLLECTOR (user@host:/path/ci_in; optional) over SSH, upload logs to Beaker.
#
# Parameters (environment): VSPERF_ACTION, SCENARIO, GUEST, COLLECTOR, VSPERF_COMMIT, INVENTORY, CATALOG,
# DUT_HOSTNAME (inventory key, default `hostname -f`), VSPERF_REPO, VSPERF_DIR, VSPERF_VENV,
# VSPERF_BASE_PYTHON, VSPERF_PYTHON_CANDIDATES, VSPERF_HUGEPAGE_DIR, VSPERF_TIMEOUT_S, MOONGEN_LOG_DIR,
# MOONGEN_LOG_POLL_S, GUEST_NAME, GUEST_ADDRESS, GUEST_RECIPE_URL, GUEST_TIMEOUT_S,
# GUEST_SHUTDOWN_TIMEOUT_S, VSPERF_TELEMETRY (1: our collector, 0: VSperf's pidstat only), VSPERF_GUEST_DPDK_DIR,
# VSPERF_RESULTS_FILE (a file to write the results directory's path into, for ovsperf-remote);
# see README.md.
set -o nounset -o pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/task.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/task.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/results.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/results.sh"

: "${VSPERF_ACTION:=}"
: "${SCENARIO:=}"
: "${GUEST:=0}"
: "${INVENTORY:=}"
: "${CATALOG:=}"
# opnfv/vswitchperf master after the Jerma release (2020-12-01), the version reference/vsperf.md describes.
: "${VSPERF_COMMIT:=90ef48d4342a983c7733b8c21bb902d1dab2685a}"
: "${VSPERF_REPO:=https://github.com/opnfv/vswitchperf}"
: "${VSPERF_DIR:=/root/vswitchperf}"
: "${VSPERF_VENV:=/root/vsperf-venv}"
: "${VSPERF_BASE_PYTHON:=}"
: "${VSPERF_PYTHON_CANDIDATES:=python3.9 python3.8 python3.7 python3.6 python3 /usr/libexec/platform-python}"
: "${VSPERF_HUGEPAGE_DIR:=/dev/hugepages-vsperf}"
: "${VSPERF_TIMEOUT_S:=43200}"
: "${VSPERF_SETUP_REBOOT:=1}"
: "${MOONGEN_LOG_DIR:=/tmp/moongen}"
: "${MOONGEN_LOG_POLL_S:=2}"
: "${GUEST_NAME:=ovsperf-guest}"
: "${GUEST_ADDRESS:=}"
: "${GUEST_RECIPE_URL:=}"
: "${GUEST_TIMEOUT_S:=14400}"
: "${GUEST_SHUTDOWN_TIMEOUT_S:=300}"
: "${VSPERF_TELEMETRY:=1}"
# Where setup installs guest-dpdk/ (VSperf's PATHS['dpdk']['src']['path'] for testpmd guests).
: "${VSPERF_GUEST_DPDK_DIR:=/opt/ovsperf/vsperf-guest-dpdk}"
VSPERF_TEST_METADATA="${TASK_METADATA_FILE}"
VSPERF_TEST_TELEMETRY="${TASK_TELEMETRY_FILE}"
# Our VSperf collector (VSperf's pidstat + OVS's PMD counters around each test).
VSPERF_TEST_COLLECTORS="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/collectors"
# Our VSperf pod, which does nothing: VSperf 10 makes a Kubernetes pod for every p2p test otherwise.
VSPERF_TEST_PODS="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/pods"
# Our "DPDK source tree" for VSperf's testpmd guests: it runs the guest's packaged DPDK tools.
VSPERF_TEST_GUEST_DPDK="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/guest-dpdk"
# The file that marks VSPERF_GUEST_DPDK_DIR as ours (setup never replaces a directory without it).
VSPERF_TEST_GUEST_DPDK_MARK=".ovsperf-vsperf-guest-dpdk"
# Python versions VSperf runs on: its pinned requirements need < 3.10 (jinja2 2.7.3 imports
# collections.Mapping), VSperf itself needs imp (gone in 3.12) and 3.6 (RHEL 8) at least.
VSPERF_TEST_PYTHON_MIN="3.6"
VSPERF_TEST_PYTHON_BELOW="3.10"
# The source name of our hugetlbfs mounts at VSPERF_HUGEPAGE_DIR (/proc/mounts' first field).
VSPERF_TEST_HUGETLBFS_SOURCE="ovsperf-vsperf"

vsperf_test_inventory() {
    task_load_dut_inventory
    read -r -a VSPERF_TEST_NICS <<<"${INV_TEST_NICS}"
}

vsperf_test_check_nics() {
    local pci
    for pci in "${VSPERF_TEST_NICS[@]}"; do
        task_pci_present "${pci}" || task_abort "Test NIC ${pci} is missing on ${DUT_HOSTNAME}."
    done
}

# --- setup ---------------------------------------------------------------------------------

# Keep NetworkManager off the test NICs, now and after reboots.
vsperf_test_unmanage_nics() {
    local pci netdev names=""
    for pci in "${VSPERF_TEST_NICS[@]}"; do
        netdev="$(task_pci_netdev "${pci}")"
        [[ -n "${netdev}" ]] || continue
        names+="${names:+;}interface-name:${netdev}"
        if task_have nmcli; then
            nmcli device set "${netdev}" managed no || return 1
        fi
    done
    [[ -n "${names}" ]] || return 0
    mkdir -p "${TASK_ETC}/NetworkManager/conf.d" &&
        printf '# Written by the ovsperf vsperf_test task.\n[keyfile]\nunmanaged-devices=%s\n' "${names}" \
            >"${TASK_ETC}/NetworkManager/conf.d/99-ovsperf-unmanaged.conf"
}

vsperf_test_checkout() {
    if [[ -d "${VSPERF_DIR}/.git" ]]; then
        task_run "Fetch VSperf" timeout "${TASK_NET_TIMEOUT_S}" git -C "${VSPERF_DIR}" fetch origin || task_abort "Cannot fetch '${VSPERF_REPO}' (repository down?)."
    else
        task_run "Clone VSperf" timeout "${TASK_NET_TIMEOUT_S}" git clone "${VSPERF_REPO}" "${VSPERF_DIR}" ||
            task_abort "Cannot clone '${VSPERF_REPO}' (repository down?)."
    fi
    task_run "Check out VSperf ${VSPERF_COMMIT}" git -C "${VSPERF_DIR}" checkout --detach "${VSPERF_COMMIT}" ||
        task_abort "Commit ${VSPERF_COMMIT} does not exist in '${VSPERF_REPO}'."
    local head
    head="$(git -C "${VSPERF_DIR}" rev-parse HEAD)"
    [[ "${head}" == "${VSPERF_COMMIT}"* ]] || task_abort "VSperf is at ${head}, not at the pinned ${VSPERF_COMMIT}."
}

# vsperf_test_python_fits VERSION: return 0 when VSperf runs on Python VERSION (MAJOR.MINOR).
vsperf_test_python_fits() {
    local major minor
    IFS=. read -r major minor <<<"$1"
    [[ "${major}" =~ ^[0-9]+$ && "${minor}" =~ ^[0-9]+$ ]] || return 1
    ((major == 3 && minor >= ${VSPERF_TEST_PYTHON_MIN#3.} && minor < ${VSPERF_TEST_PYTHON_BELOW#3.}))
}

# Choose the Python of VSperf's venv: VSPERF_BASE_PYTHON, else the first candidate VSperf runs on
# (RHEL 9: python3 is 3.9; RHEL 8: python39 or python36). Sets VSPERF_TEST_PYTHON; aborts otherwise.
vsperf_test_choose_python() {
    local candidate version
    if [[ -n "${VSPERF_BASE_PYTHON}" ]]; then
        version="$(task_python_version "${VSPERF_BASE_PYTHON}")" ||
            task_abort "VSPERF_BASE_PYTHON '${VSPERF_BASE_PYTHON}' does not run."
        vsperf_test_python_fits "${version}" ||
            task_abort "VSPERF_BASE_PYTHON '${VSPERF_BASE_PYTHON}' is Python ${version}; VSperf ${VSPERF_COMMIT:0:8}" \
                "needs ${VSPERF_TEST_PYTHON_MIN} to <${VSPERF_TEST_PYTHON_BELOW} (its pinned requirements fail on 3.10," \
                "it imports imp, gone in 3.12): install python39 (RHEL 8) or use RHEL 9's python3."
        VSPERF_TEST_PYTHON="${VSPERF_BASE_PYTHON}"
    else
        VSPERF_TEST_PYTHON=""
        local -a candidates
        # Split on blanks only: no pathname expansion of a candidate like 'python3*'.
        read -r -a candidates <<<"${VSPERF_PYTHON_CANDIDATES}"
        for candidate in "${candidates[@]}"; do
            version="$(task_python_version "${candidate}")" || continue
            if vsperf_test_python_fits "${version}"; then
                VSPERF_TEST_PYTHON="${candidate}"
                break
            fi
        done
        [[ -n "${VSPERF_TEST_PYTHON}" ]] ||
            task_abort "No Python VSperf runs on (${VSPERF_TEST_PYTHON_MIN} to <${VSPERF_TEST_PYTHON_BELOW}) among" \
                "${VSPERF_PYTHON_CANDIDATES}: install python39 (RHEL 8) or use RHEL 9's python3, or set VSPERF_BASE_PYTHON."
    fi
    task_log "  VSperf's Python: ${VSPERF_TEST_PYTHON} ($(task_python_version "${VSPERF_TEST_PYTHON}"))"
}

# vsperf_test_check_venv: abort unless VSPERF_VENV's python is one VSperf runs on.
vsperf_test_check_venv() {
    local version
    version="$(task_python_version "${VSPERF_VENV}/bin/python")" ||
        task_abort "'${VSPERF_VENV}/bin/python' does not run."
    vsperf_test_python_fits "${version}" ||
        task_abort "'${VSPERF_VENV}' is a Python ${version} venv; VSperf needs ${VSPERF_TEST_PYTHON_MIN} to" \
            "<${VSPERF_TEST_PYTHON_BELOW}: remove it and run VSPERF_ACTION=setup again."
}

# Install VSperf's requirements as pinned, except pycrypto (no release since 2013; it does not
# build on current toolchains): pycryptodome provides the one module VSperf imports from it
# (Crypto.Cipher.AES in its collectd collector). MarkupSafe 2.1 dropped soft_unicode, which
# jinja2 2.7.3 imports, hence the constraint.
vsperf_test_python_deps() {
    if [[ ! -x "${VSPERF_VENV}/bin/python" ]]; then
        "${VSPERF_TEST_PYTHON}" -m venv "${VSPERF_VENV}" || return 1
    fi
    sed -e 's/^pycrypto[[:space:]]*$/pycryptodome/' "${VSPERF_DIR}/requirements.txt" \
        >"${VSPERF_VENV}/ovsperf-requirements.txt" || return 1
    printf 'MarkupSafe<2.1\n' >"${VSPERF_VENV}/ovsperf-constraints.txt" || return 1
    timeout "${TASK_NET_TIMEOUT_S}" "${VSPERF_VENV}/bin/pip" install -q \
        -r "${VSPERF_VENV}/ovsperf-requirements.txt" -c "${VSPERF_VENV}/ovsperf-constraints.txt"
}

# --- the guest's "DPDK source tree" (guest-dpdk/) ------------------------------------------------
# VSperf copies PATHS['dpdk']['src']['path'] into each testpmd guest as DPDK/, runs its
# ./*tools/dpdk*bind.py, `make` in app/test-pmd and ./testpmd (vnfs/qemu/qemu.py _configure_testpmd),
# and reads lib/librte_eal/common/include/rte_version.h for its results (tools/systeminfo.py).

# Print the DUT's packaged DPDK version (rpm, else dpkg; without epoch and release); 1 if unknown.
vsperf_test_dpdk_version() {
    local version
    version="$(rpm -q --qf '%{VERSION}\n' dpdk 2>/dev/null | head -n 1)"
    [[ "${version}" =~ ^[0-9] ]] || version="$(dpkg-query -W -f '${Version}' dpdk 2>/dev/null)"
    version="${version#*:}"
    version="${version%%-*}"
    [[ "${version}" =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || return 1
    printf '%s\n' "${version}"
}

# vsperf_test_rte_version_h VERSION: print an rte_version.h for DPDK VERSION (YY.MM[.MINOR]), or,
# when VERSION is empty, one without RTE_VER_* lines (VSperf then reports the version as None).
# The lines are as DPDK's rte_version.h writes them and VSperf's parser reads them: one space apart,
# RTE_VER_SUFFIX quoted, RTE_VER_RELEASE 16 for a release.
vsperf_test_rte_version_h() {
    local year month minor
    printf '/* Written by the ovsperf vsperf_test task; only VSperf reads it (tools/systeminfo.py). */\n'
    if [[ -z "$1" ]]; then
        printf '/* The DUT'"'"'s packaged DPDK version is unknown (no rpm or dpkg package dpdk). */\n'
        return 0
    fi
    IFS=. read -r year month minor <<<"$1"
    printf '/* The DUT'"'"'s packaged DPDK %s; its guest installs the same build. */\n' "$1"
    printf '#define RTE_VER_PREFIX "DPDK"\n#define RTE_VER_YEAR %d\n#define RTE_VER_MONTH %d\n' \
        "$((10#${year}))" "$((10#${month}))"
    printf '#define RTE_VER_MINOR %d\n#define RTE_VER_SUFFIX ""\n#define RTE_VER_RELEASE 16\n' \
        "$((10#${minor:-0}))"
}

# Install guest-dpdk/ at VSPERF_GUEST_DPDK_DIR (a fresh copy, swapped in), replacing only a
# directory of ours (it holds VSPERF_TEST_GUEST_DPDK_MARK).
vsperf_test_install_guest_dpdk() {
    local dest="${VSPERF_GUEST_DPDK_DIR}" new version include
    if [[ -e "${dest}" || -L "${dest}" ]] && [[ ! -f "${dest}/${VSPERF_TEST_GUEST_DPDK_MARK}" ]]; then
        task_log "  '${dest}' exists and is not ours (no ${VSPERF_TEST_GUEST_DPDK_MARK}): not replacing it."
        return 1
    fi
    mkdir -p "$(dirname "${dest}")" || return 1
    new="${dest}.new.$$"
    rm -rf "${new}" && cp -R "${VSPERF_TEST_GUEST_DPDK}" "${new}" || return 1
    find "${new}" -name __pycache__ -prune -exec rm -rf {} + || return 1
    chmod -R u=rwX,go=rX "${new}" && chmod 0755 "${new}/usertools/dpdk-devbind.py" || return 1
    version="$(vsperf_test_dpdk_version)" || version=""
    task_log "  DPDK on ${DUT_HOSTNAME}: ${version:-unknown} (rte_version.h for VSperf's results)"
    include="${new}/lib/librte_eal/common/include"
    mkdir -p "${include}" && vsperf_test_rte_version_h "${version}" >"${include}/rte_version.h" || return 1
    printf 'Installed by the ovsperf vsperf_test task from %s; replaced by its next setup.\n' \
        "${VSPERF_TEST_GUEST_DPDK}" >"${new}/${VSPERF_TEST_GUEST_DPDK_MARK}" || return 1
    if [[ -e "${dest}" ]]; then
        rm -rf "${dest}.old.$$" && mv "${dest}" "${dest}.old.$$" || return 1
    fi
    mv "${new}" "${dest}" && rm -rf "${dest}.old.$$"
}

vsperf_test_setup_host() {
    vsperf_test_inventory
    if ((TASK_REBOOTCOUNT == 0)); then
        task_phase_start Setup environment
        vsperf_test_check_nics
        task_log_versions "${VSPERF_TEST_NICS[@]}"
        task_phase_end

        task_phase_start Setup persistent
        task_run "Write tuned isolated_cores=${INV_ISOLATED_CPUS}" task_tuned_isolate "${INV_ISOLATED_CPUS}" ||
            task_abort "Cannot write the tuned variables."
        task_run "Activate tuned profile cpu-partitioning" tuned-adm profile cpu-partitioning ||
            task_abort "tuned-adm cannot activate cpu-partitioning (is tuned-profiles-cpu-partitioning installed?)."
        task_run "Ban IRQs from CPUs ${INV_ISOLATED_CPUS}" task_ban_irqs "${INV_ISOLATED_CPUS}"
        task_run "Restart irqbalance" systemctl restart irqbalance
        task_run "Keep NetworkManager off the test NICs" vsperf_test_unmanage_nics
        vsperf_test_checkout
        vsperf_test_choose_python
        [[ ! -x "${VSPERF_VENV}/bin/python" ]] || vsperf_test_check_venv
        task_run "Install VSperf's Python dependencies into ${VSPERF_VENV}" vsperf_test_python_deps ||
            task_abort "Cannot install VSperf's Python dependencies (package index down?)."
        task_run "Create the SSH key pair for the MoonGen host" task_ssh_key "ovsperf-vsperf@${DUT_HOSTNAME}" ||
            task_abort "Cannot create an SSH key pair."
        task_run "Install the guest's DPDK adapter for VSperf's testpmd at ${VSPERF_GUEST_DPDK_DIR}" \
            vsperf_test_install_guest_dpdk ||
            task_abort "Cannot install the guest DPDK adapter at '${VSPERF_GUEST_DPDK_DIR}' (see the log above)."
        task_mark persistent
        task_phase_end
        [[ "${VSPERF_SETUP_REBOOT}" != "1" ]] || task_reboot
    elif ! task_done persistent; then
        task_abort "Rebooted (count ${TASK_REBOOTCOUNT}) before the persistent setup finished; see the previous boot's logs."
    fi

    task_phase_start Setup verify
    vsperf_test_check_nics
    local hugepages
    hugepages="$(task_hugepages_total)"
    ((hugepages > 0)) || task_abort "No hugepages are reserved on ${DUT_HOSTNAME}; set them on the kernel command line."
    task_run "tuned profile is cpu-partitioning" task_tuned_active ||
        task_warn "tuned's active profile is not cpu-partitioning."
    [[ -x "${VSPERF_VENV}/bin/python" && -f "${VSPERF_DIR}/vsperf" ]] ||
        task_abort "VSperf is not installed in '${VSPERF_DIR}' with '${VSPERF_VENV}'."
    vsperf_test_check_venv
    [[ -f "${VSPERF_GUEST_DPDK_DIR}/${VSPERF_TEST_GUEST_DPDK_MARK}" ]] ||
        task_abort "The guest DPDK adapter is not installed at '${VSPERF_GUEST_DPDK_DIR}' (run VSPERF_ACTION=setup again)."
    task_phase_end
}

vsperf_test_guest_noiommu() {
    mkdir -p "${TASK_ETC}/modprobe.d" "${TASK_ETC}/modules-load.d" &&
        printf 'options vfio enable_unsafe_noiommu_mode=1\n' >"${TASK_ETC}/modprobe.d/ovsperf-vfio-noiommu.conf" &&
        printf 'vfio-pci\n' >"${TASK_ETC}/modules-load.d/ovsperf-vfio-pci.conf"
}

vsperf_test_setup_guest() {
    task_phase_start Setup guest
    task_have dpdk-testpmd || task_have testpmd || task_abort "DPDK (dpdk-testpmd) is not installed in the guest."
    task_run "Make vfio no-IOMMU mode persistent" vsperf_test_guest_noiommu
    task_run "Load vfio in no-IOMMU mode" modprobe vfio enable_unsafe_noiommu_mode=1 ||
        task_abort "Cannot load vfio in the guest."
    task_run "Load vfio-pci" modprobe vfio-pci || task_abort "Cannot load vfio-pci in the guest."
    local mode
    mode="$(cat "${TASK_SYSFS}/module/vfio/parameters/enable_unsafe_noiommu_mode" 2>/dev/null)"
    [[ "${mode}" == "Y" || "${mode}" == "1" ]] ||
        task_abort "vfio is not in no-IOMMU mode (enable_unsafe_noiommu_mode='${mode}'); unload vfio and retry."
    # Inside a Beaker job the DUT's `run` waits for this state before it shuts the guest down and
    # lets VSperf boot its image (the guest's FQDN is unknown to the job, so the DUT asks libvirt).
    if [[ -n "${RSTRNT_JOBID:-${JOBID:-}}" ]]; then
        task_sync_open_port
        task_run "Tell the DUT that the guest is ready (state $(task_sync_state GUEST_READY))" \
            task_perfsync --set "$(task_sync_state GUEST_READY)" ||
            task_abort "Cannot publish state GUEST_READY (perfsync server on TCP ${PERFSYNC_PORT:-6780})."
    fi
    task_phase_end
}

# --- run -----------------------------------------------------------------------------------

vsperf_test_config() {
    task_phase_start Setup config
    VSPERF_TEST_WORK="${TASK_STATE_DIR}/run-$(date +%Y%m%d-%H%M%S)"
    mkdir -p "${VSPERF_TEST_WORK}" || task_abort "Cannot create '${VSPERF_TEST_WORK}'."
    VSPERF_TEST_CONF="${VSPERF_TEST_WORK}/vsperf-${SCENARIO}.conf"
    local listing
    local -a args=(-q --scenario "${SCENARIO}" --host "${DUT_HOSTNAME}" --inventory "$(task_repo_path "${INVENTORY}")")
    [[ -z "${CATALOG}" ]] || args+=(--catalog "$(task_repo_path "${CATALOG}")")
    local -a telemetry=()
    [[ "${VSPERF_TELEMETRY}" != "1" ]] || telemetry=(--telemetry-collector-dir "${VSPERF_TEST_COLLECTORS}")
    task_run "Generate the VSperf configuration for ${SCENARIO} on ${DUT_HOSTNAME}" \
        task_vsperf_config "${args[@]}" ${telemetry[@]+"${telemetry[@]}"} --pod-dir "${VSPERF_TEST_PODS}" \
        --hugepage-dir "${VSPERF_HUGEPAGE_DIR}" --guest-dpdk-dir "${VSPERF_GUEST_DPDK_DIR}" --output "${VSPERF_TEST_CONF}" ||
        task_abort "vsperf-config failed: $(grep '^vsperf-config: ' "${TASK_PHASE_LOG}" | tail -n 1)"
    listing="$(task_vsperf_config "${args[@]}" --pod-dir "${VSPERF_TEST_PODS}" --list-tests)" ||
        task_abort "vsperf-config cannot list the tests of ${SCENARIO}."
    mapfile -t VSPERF_TEST_TESTS <<<"${listing}"
    [[ -n "${VSPERF_TEST_TESTS[0]:-}" ]] || task_abort "Scenario ${SCENARIO} has no tests."
    task_upload "${VSPERF_TEST_CONF}"
    task_phase_end
}

# --- the Beaker guest (guest scenarios) ---------------------------------------------------------

# Print the FQDN Beaker recorded for guest GUEST_NAME in this recipe's XML (<guestrecipe guestname=…
# system=…>, set when the guest's install finished): GUEST_RECIPE_URL, else the lab controller's
# http://$LAB_CONTROLLER:8000/recipes/$RECIPEID/. Return 1 when it is not known (yet).
vsperf_test_guest_from_recipe() {
    local url="${GUEST_RECIPE_URL}" recipe="${RSTRNT_RECIPEID:-${RECIPEID:-}}"
    if [[ -z "${url}" && -n "${LAB_CONTROLLER:-}" && -n "${recipe}" ]]; then
        url="http://${LAB_CONTROLLER}:8000/recipes/${recipe}/"
    fi
    [[ -n "${url}" ]] || return 1
    "${OVSPERF_PYTHON:-python3}" - "${url}" "${GUEST_NAME}" <<'PY'
import sys
import urllib.request
import xml.etree.ElementTree as ET

url, name = sys.argv[1:3]
try:
    with urllib.request.urlopen(url, timeout=30) as answer:
        root = ET.fromstring(answer.read())
except Exception as err:  # unreachable, HTTP error or not XML: not known (yet)
    print("recipe XML %s: %s" % (url, err), file=sys.stderr)
    sys.exit(1)
for guest in root.iter("guestrecipe"):
    if guest.get("guestname") == name and guest.get("system"):
        print(guest.get("system"))
        sys.exit(0)
sys.exit(1)
PY
}

# Print the guest's address: GUEST_ADDRESS, else libvirt's view of the domain's interfaces (guest
# agent, DHCP lease, the host's ARP table), else the FQDN in the recipe XML (virt/install bridges the
# guest onto the lab network, where the host may never have talked to it). Return 1 when none is
# known yet.
vsperf_test_guest_address() {
    if [[ -n "${GUEST_ADDRESS}" ]]; then
        printf '%s\n' "${GUEST_ADDRESS}"
        return 0
    fi
    local source address
    for source in agent lease arp; do
        # Columns: Name, MAC address, Protocol, Address/prefix; skip the guest's loopback.
        address="$(virsh domifaddr "${GUEST_NAME}" --source "${source}" 2>/dev/null |
            awk '$3 == "ipv4" && $1 != "lo" { sub(/\/.*/, "", $4); print $4; exit }')"
        if [[ -n "${address}" ]]; then
            printf '%s\n' "${address}"
            return 0
        fi
    done
    vsperf_test_guest_from_recipe
}

vsperf_test_guest_state() {
    virsh domstate "${GUEST_NAME}" 2>/dev/null | head -n 1
}

# Shut the guest down (ACPI, then forced after GUEST_SHUTDOWN_TIMEOUT_S) and wait until it is off.
vsperf_test_guest_shutdown() {
    local deadline=$((SECONDS + GUEST_SHUTDOWN_TIMEOUT_S))
    [[ "$(vsperf_test_guest_state)" == "shut off" ]] && return 0
    virsh shutdown "${GUEST_NAME}" || return 1
    while ((SECONDS < deadline)); do
        [[ "$(vsperf_test_guest_state)" == "shut off" ]] && return 0
        sleep 2
    done
    task_log "  ${GUEST_NAME} ignored the shutdown for ${GUEST_SHUTDOWN_TIMEOUT_S} s; destroying it."
    virsh destroy "${GUEST_NAME}" || return 1
    [[ "$(vsperf_test_guest_state)" == "shut off" ]]
}

# A guest scenario in a Beaker job: the DUT runs virt/install + virt/start, and the guest recipe
# prepares the image (vsperf_test setup GUEST=1) while the DUT goes on; nothing in Beaker makes the
# DUT wait for it (reference/beaker.md §4.3). So: find the guest's address through libvirt, wait
# (bounded) for its GUEST_READY state, then shut the domain off, because VSperf boots the guest image
# itself and two QEMUs must never write the same disk. Without a libvirt domain GUEST_NAME (a
# standalone run with a prepared image) there is nothing to wait for.
vsperf_test_wait_guest() {
    local entry needs_guest=0
    for entry in "${VSPERF_TEST_TESTS[@]}"; do
        case "${entry##* }" in pvp | pvvp) needs_guest=1 ;; esac
    done
    ((needs_guest)) || return 0
    if ! task_have virsh || [[ -z "$(vsperf_test_guest_state)" ]]; then
        task_log "No libvirt domain '${GUEST_NAME}' on ${DUT_HOSTNAME}: VSperf boots the inventory's guest image as it is."
        return 0
    fi
    task_phase_start Setup guest-ready
    local deadline=$((SECONDS + GUEST_TIMEOUT_S)) address="" state
    state="$(task_sync_state GUEST_READY)"
    while ! address="$(vsperf_test_guest_address)"; do
        ((SECONDS < deadline)) || task_abort "The address of guest '${GUEST_NAME}' is unknown to libvirt after ${GUEST_TIMEOUT_S} s" \
            "(virsh domifaddr --source agent|lease|arp) nor in the recipe XML; set GUEST_ADDRESS."
        sleep 10
    done
    task_run "Wait up to $((deadline - SECONDS)) s for state ${state} from guest ${GUEST_NAME} (${address})" \
        task_perfsync --wait "${state}" --peer "${address}" --timeout "$((deadline > SECONDS ? deadline - SECONDS : 1))" ||
        task_abort "Guest '${GUEST_NAME}' (${address}) did not set state '${state}' within ${GUEST_TIMEOUT_S} s:" \
            "$(grep '^perfsync: ' "${TASK_PHASE_LOG}" | tail -n 1)"
    task_run "Shut guest ${GUEST_NAME} off so that VSperf can boot its image" vsperf_test_guest_shutdown ||
        task_abort "Cannot shut guest '${GUEST_NAME}' off (virsh domstate: '$(vsperf_test_guest_state)')."
    # VSperf boots the inventory's guest_image: it should be the disk the guest recipe prepared.
    local disks
    disks="$(virsh domblklist "${GUEST_NAME}" --details 2>/dev/null | awk '$2 == "disk" { print $4 }')"
    if [[ -n "${INV_GUEST_IMAGE:-}" ]] && ! grep -qxF -- "${INV_GUEST_IMAGE}" <<<"${disks}"; then
        task_warn "VSperf boots ${INV_GUEST_IMAGE}, but guest ${GUEST_NAME} was prepared on '${disks//$'\n'/ }';" \
            "set guest_image of ${DUT_HOSTNAME} in the inventory to that disk."
    fi
    task_phase_end
}

vsperf_test_moongen_reachable() {
    # shellcheck disable=SC2086 # COLLECTOR_SSH is a command with options
    timeout 120 ${COLLECTOR_SSH} "${INV_MOONGEN_USER}@${INV_MOONGEN_ADDRESS}" \
        test -f "${INV_MOONGEN_BASE_DIR}/trafficgen.lua" -a -x "${INV_MOONGEN_BASE_DIR}/MoonGen/build/MoonGen"
}

# The peer runs TRex (inventory generator trex): VSperf logs in over SSH and connects to the
# server's sync (RPC) port, TCP 4501, and its async (publisher) port, TCP 4500
# (tools/pkt_gen/trex/trex_client.py connect(); setup_trex start opens both in firewalld).
# shellcheck disable=SC2016,SC2086 # $1, $2 are the inner shell's; COLLECTOR_SSH is a command with options
vsperf_test_trex_reachable() {
    timeout 120 ${COLLECTOR_SSH} "${INV_MOONGEN_USER}@${INV_MOONGEN_ADDRESS}" true || return 1
    local port
    for port in 4501 4500; do
        timeout 10 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "${INV_MOONGEN_ADDRESS}" "${port}" || {
            printf 'TRex at %s does not accept connections on TCP %s\n' "${INV_MOONGEN_ADDRESS}" "${port}" >&2
            return 1
        }
    done
}

# --- VSperf's own hugetlbfs mount ------------------------------------------------------------
# VSperf (tools/hugepages.py, testcases/testcase.py) mounts hugetlbfs at HUGEPAGE_DIR before a test
# only when no hugetlbfs is mounted anywhere, but after every test that uses DPDK or a guest runs
# `umount HUGEPAGE_DIR` whenever one is. HUGEPAGE_DIR is therefore VSPERF_HUGEPAGE_DIR, never the
# host's /dev/hugepages, and we stack one hugetlbfs mount there per test: each test's umount takes
# one, and every test's QEMU still finds hugetlbfs at HUGEPAGE_DIR (its mem-path).

# vsperf_test_hugetlbfs [DIR] [ours|others]: print the hugetlbfs mounts (source mount-point) on DIR
# (all when DIR is empty), those whose source is ours or the others, bottom first.
vsperf_test_hugetlbfs() {
    awk -v dir="${1:-}" -v which="${2:-}" -v ours="${VSPERF_TEST_HUGETLBFS_SOURCE}" '
        $3 == "hugetlbfs" && (dir == "" || $2 == dir) &&
            (which == "" || (which == "ours") == ($1 == ours)) { print $1, $2 }' "${TASK_PROC}/mounts"
}

# vsperf_test_hugepages_release: unmount our mounts on VSPERF_HUGEPAGE_DIR (left by an earlier run
# or by VSperf), topmost first, as long as the topmost is ours.
vsperf_test_hugepages_release() {
    local top
    while top="$(vsperf_test_hugetlbfs "${VSPERF_HUGEPAGE_DIR}" | tail -n 1)" && [[ -n "${top}" ]]; do
        [[ "${top%% *}" == "${VSPERF_TEST_HUGETLBFS_SOURCE}" ]] || return 1
        umount "${VSPERF_HUGEPAGE_DIR}" || return 1
    done
}

# vsperf_test_hugepages_mount COUNT: COUNT hugetlbfs mounts of ours on VSPERF_HUGEPAGE_DIR.
vsperf_test_hugepages_mount() {
    local i
    mkdir -p "${VSPERF_HUGEPAGE_DIR}" || return 1
    for ((i = 0; i < $1; i++)); do
        mount -t hugetlbfs "${VSPERF_TEST_HUGETLBFS_SOURCE}" "${VSPERF_HUGEPAGE_DIR}" || return 1
    done
    (($(vsperf_test_hugetlbfs "${VSPERF_HUGEPAGE_DIR}" ours | wc -l) == $1))
}

vsperf_test_hugepages_prepare() {
    local others
    others="$(vsperf_test_hugetlbfs "${VSPERF_HUGEPAGE_DIR}" others)"
    [[ -z "${others}" ]] ||
        task_abort "'${VSPERF_HUGEPAGE_DIR}' is a hugetlbfs mount of the host's (${others%% *}); VSperf unmounts" \
            "HUGEPAGE_DIR after each test: set VSPERF_HUGEPAGE_DIR to a directory of VSperf's own."
    task_run "Unmount what an earlier run left on ${VSPERF_HUGEPAGE_DIR}" vsperf_test_hugepages_release ||
        task_abort "Cannot unmount the old hugetlbfs mounts on '${VSPERF_HUGEPAGE_DIR}'."
    VSPERF_TEST_HOST_HUGETLBFS="$(vsperf_test_hugetlbfs "" others)"
    task_run "Mount hugetlbfs on ${VSPERF_HUGEPAGE_DIR} for VSperf (${#VSPERF_TEST_TESTS[@]}x, one per test)" \
        vsperf_test_hugepages_mount "${#VSPERF_TEST_TESTS[@]}" ||
        task_abort "Cannot mount hugetlbfs on '${VSPERF_HUGEPAGE_DIR}' for VSperf."
}

# After VSperf: unmount what is left of ours; the host's hugetlbfs mounts must all still be there.
vsperf_test_hugepages_restore() {
    task_run "Unmount VSperf's hugetlbfs mounts left on ${VSPERF_HUGEPAGE_DIR}" vsperf_test_hugepages_release ||
        task_warn "Cannot unmount the hugetlbfs mounts left on '${VSPERF_HUGEPAGE_DIR}'."
    local now
    now="$(vsperf_test_hugetlbfs "" others)"
    [[ "${now}" == "${VSPERF_TEST_HOST_HUGETLBFS}" ]] ||
        task_warn "The host's hugetlbfs mounts changed while VSperf ran (before: '${VSPERF_TEST_HOST_HUGETLBFS//$'\n'/, }';" \
            "after: '${now//$'\n'/, }'); remount them (e.g. systemctl restart dev-hugepages.mount)."
}

vsperf_test_preflight() {
    task_phase_start Setup preflight
    local hugepages
    hugepages="$(task_hugepages_total)"
    ((hugepages > 0)) || task_abort "No hugepages are reserved on ${DUT_HOSTNAME}."
    [[ -x "${VSPERF_VENV}/bin/python" && -f "${VSPERF_DIR}/vsperf" ]] ||
        task_abort "VSperf is not installed in '${VSPERF_DIR}' (run VSPERF_ACTION=setup first)."
    vsperf_test_check_venv
    vsperf_test_check_nics
    # testpmd guests: VSperf copies this directory into each guest (PATHS['dpdk']['src']['path']).
    if grep -q "^PATHS\['dpdk'\]\['src'\]\['path'\] = " "${VSPERF_TEST_CONF}"; then
        [[ -f "${VSPERF_GUEST_DPDK_DIR}/${VSPERF_TEST_GUEST_DPDK_MARK}" ]] ||
            task_abort "The guest DPDK adapter VSperf copies into testpmd guests is not installed at" \
                "'${VSPERF_GUEST_DPDK_DIR}' (run VSPERF_ACTION=setup again)."
    fi
    if [[ "${INV_GENERATOR:-moongen}" == "trex" ]]; then
        task_run "TRex host ${INV_MOONGEN_ADDRESS} reachable over SSH, its server on TCP 4501 and 4500" vsperf_test_trex_reachable ||
            task_abort "Cannot reach TRex at ${INV_MOONGEN_USER}@${INV_MOONGEN_ADDRESS} (SSH, and its server on TCP 4501 and 4500:" \
                "setup_trex start)."
    else
        task_run "MoonGen host ${INV_MOONGEN_ADDRESS} reachable over SSH with a built MoonGen" vsperf_test_moongen_reachable ||
            task_abort "Cannot reach MoonGen at ${INV_MOONGEN_USER}@${INV_MOONGEN_ADDRESS}:${INV_MOONGEN_BASE_DIR} over SSH."
    fi
    if [[ -e "${MOONGEN_LOG_DIR}" ]]; then
        # VSperf's scratch copy of the previous run (already archived by that run's collect phase).
        rm -rf "${MOONGEN_LOG_DIR}.previous"
        mv "${MOONGEN_LOG_DIR}" "${MOONGEN_LOG_DIR}.previous" ||
            task_abort "Cannot move the old MoonGen logs '${MOONGEN_LOG_DIR}' aside."
    fi
    vsperf_test_hugepages_prepare
    task_log_versions "${VSPERF_TEST_NICS[@]}"
    task_phase_end
}

vsperf_test_vsperf() {
    local -a names=() mode=()
    local entry
    for entry in "${VSPERF_TEST_TESTS[@]}"; do
        names+=("$(cut -d' ' -f2 <<<"${entry}")")
        # VSperf's overlay tests (deployment op2p) are integration tests: only --integration finds them.
        [[ "${entry##* }" != "op2p" ]] || mode=(--integration)
    done
    # VSperf's output goes to its log and, live, to the console (fd 3): a run takes hours.
    (cd "${VSPERF_DIR}" && timeout --kill-after=60 "${VSPERF_TIMEOUT_S}" "${VSPERF_VENV}/bin/python" ./vsperf \
        --conf-file "${VSPERF_TEST_CONF}" ${mode[@]+"${mode[@]}"} --xunit --xunit-dir "${VSPERF_TEST_WORK}/xunit" \
        "${names[@]}") 2>&1 |
        tee "${VSPERF_TEST_WORK}/vsperf-stdout.log" >&3
}

# VSperf copies each MoonGen run's log to ${MOONGEN_LOG_DIR}/<run>/moongen-run.log and overwrites it
# with the next frame size and the next test (reference/vsperf.md §3.5), so a copy taken after the run
# holds only the last one. vsperf_test_moongen_sweep DEST [final] archives every new version as
# DEST/<seq>-run<run>-moongen-run.log; while VSperf runs, a version is taken once its checksum held
# still for one poll (scp has finished writing it: the next MoonGen run takes at least a trial).
vsperf_test_moongen_sweep() {
    local dest="$1" final="${2:-}" log run sum last
    for log in "${MOONGEN_LOG_DIR}"/*/moongen-run.log; do
        [[ -f "${log}" ]] || continue
        run="$(basename "$(dirname "${log}")")"
        sum="$(cksum <"${log}")" || continue
        last="$(cat "${dest}/.last-${run}" 2>/dev/null)"
        [[ "${sum}" != "${last}" ]] || continue
        if [[ -z "${final}" && "${VSPERF_TEST_PENDING[${run}]:-}" != "${sum}" ]]; then
            VSPERF_TEST_PENDING[${run}]="${sum}" # changed since the last poll: maybe still being written
            continue
        fi
        VSPERF_TEST_MOONGEN_SEQ=$((VSPERF_TEST_MOONGEN_SEQ + 1))
        cp "${log}" "${dest}/$(printf '%03d' "${VSPERF_TEST_MOONGEN_SEQ}")-run${run}-moongen-run.log" &&
            printf '%s\n' "${sum}" >"${dest}/.last-${run}"
    done
}

# Background: sweep every MOONGEN_LOG_POLL_S until killed, at most for the VSperf run's bound.
vsperf_test_moongen_keeper() {
    local dest="$1" deadline=$((SECONDS + VSPERF_TIMEOUT_S + 120))
    declare -A VSPERF_TEST_PENDING=()
    while ((SECONDS < deadline)); do
        vsperf_test_moongen_sweep "${dest}"
        sleep "${MOONGEN_LOG_POLL_S}"
    done
}

vsperf_test_run_vsperf() {
    task_phase_start Test vsperf
    VSPERF_TEST_STARTED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    VSPERF_TEST_MOONGEN_ALL="${VSPERF_TEST_WORK}/moongen-all"
    VSPERF_TEST_MOONGEN_SEQ=0
    mkdir -p "${VSPERF_TEST_MOONGEN_ALL}"
    vsperf_test_moongen_keeper "${VSPERF_TEST_MOONGEN_ALL}" &
    local keeper=$!
    task_run "Run VSperf for ${SCENARIO} (at most ${VSPERF_TIMEOUT_S} s)" vsperf_test_vsperf
    kill "${keeper}" 2>/dev/null
    wait "${keeper}" 2>/dev/null
    vsperf_test_hugepages_restore
    # The last version of each log is stable now; number it after those the keeper took.
    VSPERF_TEST_MOONGEN_SEQ="$(find "${VSPERF_TEST_MOONGEN_ALL}" -name '*-moongen-run.log' | wc -l)"
    declare -A VSPERF_TEST_PENDING=()
    vsperf_test_moongen_sweep "${VSPERF_TEST_MOONGEN_ALL}" final
    VSPERF_TEST_FINISHED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    cat "${VSPERF_TEST_WORK}/vsperf-stdout.log" >>"${TASK_PHASE_LOG}"
    VSPERF_TEST_RESULTS="$(sed -n 's/.*Creating result directory: *//p' "${VSPERF_TEST_WORK}/vsperf-stdout.log" | tail -n 1)"
    VSPERF_TEST_MISSING=()
    if [[ -z "${VSPERF_TEST_RESULTS}" || ! -d "${VSPERF_TEST_RESULTS}" ]]; then
        task_fail "VSperf reported no results directory ('Creating result directory' missing or '${VSPERF_TEST_RESULTS}' absent)."
        VSPERF_TEST_RESULTS=""
        task_upload "${VSPERF_TEST_WORK}/vsperf-stdout.log"
        task_phase_end
        return 1
    fi
    local entry index name deployment csv rows
    for entry in "${VSPERF_TEST_TESTS[@]}"; do
        read -r index name deployment <<<"${entry}"
        csv="${VSPERF_TEST_RESULTS}/$(task_ovsperf_module ovsperf_common.resultdir name "${index}" "${name}" "${deployment}")"
        rows=0
        [[ -f "${csv}" ]] && rows=$(($(wc -l <"${csv}") - 1))
        if ((rows < 1)); then
            VSPERF_TEST_MISSING+=("${name}")
            task_fail "VSperf wrote no results for test ${name} (expected ${csv}); see vsperf-overall_*.log."
        else
            task_log "  ${name}: ${rows} result row(s) in $(basename "${csv}")"
        fi
    done
    if grep -q 'Failed to run test' "${VSPERF_TEST_WORK}/vsperf-stdout.log"; then
        task_fail "VSperf logged: $(grep 'Failed to run test' "${VSPERF_TEST_WORK}/vsperf-stdout.log" | head -n 1)"
    fi
    task_phase_end
    return 0 # a failed test still has results to collect
}

# Turn the collector's raw captures (ovsperf-telemetry-raw/) into ovsperf-telemetry.json.
vsperf_test_telemetry() {
    local entry index name deployment
    local -a args=()
    for entry in "${VSPERF_TEST_TESTS[@]}"; do
        read -r index name deployment <<<"${entry}"
        args+=(--test "${index}:${name}:${deployment}")
    done
    task_ovsperf_module ovsperf_common.vsperf_telemetry "${VSPERF_TEST_RESULTS}" "${args[@]}"
}

vsperf_test_write_metadata() {
    local dir="$1" entry index name deployment job="${RSTRNT_JOBID:-${JOBID:-}}"
    local -a args=(--scenario "${SCENARIO}" --producer vsperf_test
        --results-dir "$(basename "${VSPERF_TEST_RESULTS}")"
        --started-at "${VSPERF_TEST_STARTED}" --finished-at "${VSPERF_TEST_FINISHED}"
        --host "dut=${DUT_HOSTNAME}" --host "trafficgen=${INV_MOONGEN_HOST}"
        --host "trafficgen_address=${INV_MOONGEN_ADDRESS}"
        --set "beaker_job_id=${job:+J:${job#J:}}" --set "beaker_recipe_id=${RSTRNT_RECIPEID:-${RECIPEID:-}}"
        --set "kernel=$(uname -r)" --set "vsperf_commit=$(git -C "${VSPERF_DIR}" rev-parse HEAD 2>/dev/null)"
        --set "status=$2" --packages-file -)
    for entry in "${VSPERF_TEST_TESTS[@]}"; do
        read -r index name deployment <<<"${entry}"
        args+=(--test "${index}:${name}:${deployment}")
    done
    for name in ${VSPERF_TEST_MISSING[@]+"${VSPERF_TEST_MISSING[@]}"}; do
        args+=(--missing-test "${name}")
    done
    rpm -qa --qf '%{NAME} %{VERSION}-%{RELEASE}.%{ARCH}\n' 'openvswitch*' 'dpdk*' 'qemu-kvm*' 'kernel' 2>/dev/null |
        task_ovsperf_module ovsperf_common.metadata "${dir}" "${args[@]}" >/dev/null
}

vsperf_test_collect() {
    task_phase_start Cleanup collect
    local status="PASS"
    ((${#VSPERF_TEST_MISSING[@]} == 0)) || status="FAIL"
    if [[ -d "${MOONGEN_LOG_DIR}" ]]; then
        task_run "Copy MoonGen's raw logs" cp -a "${MOONGEN_LOG_DIR}/." "${VSPERF_TEST_RESULTS}/moongen/"
        task_run "Keep every MoonGen log version VSperf overwrote ($(find "${VSPERF_TEST_MOONGEN_ALL}" -name '*.log' | wc -l))" \
            cp -a "${VSPERF_TEST_MOONGEN_ALL}" "${VSPERF_TEST_RESULTS}/moongen/all"
    elif [[ "${INV_GENERATOR:-moongen}" != "trex" ]]; then # VSperf's TRex driver writes no such logs
        task_warn "No MoonGen raw logs in ${MOONGEN_LOG_DIR}."
    fi
    if [[ -d "${VSPERF_TEST_WORK}/xunit" ]]; then
        task_run "Keep VSperf's xUnit report" cp -a "${VSPERF_TEST_WORK}/xunit" "${VSPERF_TEST_RESULTS}/xunit"
    fi
    task_run "Keep the VSperf configuration" cp "${VSPERF_TEST_CONF}" "${VSPERF_TEST_RESULTS}/ovsperf-vsperf.conf"
    task_run "Keep VSperf's console output" cp "${VSPERF_TEST_WORK}/vsperf-stdout.log" \
        "${VSPERF_TEST_RESULTS}/ovsperf-vsperf-stdout.log"
    if [[ -d "${VSPERF_TEST_RESULTS}/ovsperf-telemetry-raw" ]]; then
        task_run "Write the DUT telemetry (${VSPERF_TEST_TELEMETRY})" vsperf_test_telemetry ||
            task_warn "The DUT telemetry could not be written; the report will say 'not collected'."
    elif [[ "${VSPERF_TELEMETRY}" == "1" ]]; then
        task_log "  VSperf's collector captured no DUT telemetry (no ovsperf-telemetry-raw/): the report says 'not collected'."
    fi
    task_run "Write ${VSPERF_TEST_METADATA} (last)" vsperf_test_write_metadata "${VSPERF_TEST_RESULTS}" "${status}"
    task_deliver_results "${VSPERF_TEST_RESULTS}" "${VSPERF_TEST_WORK}" "${DUT_HOSTNAME}" \
        "${VSPERF_TEST_WORK}/vsperf-stdout.log"
    task_phase_end
}

vsperf_test_run() {
    task_require_params SCENARIO
    task_check_collector
    vsperf_test_inventory
    vsperf_test_config
    vsperf_test_wait_guest
    vsperf_test_preflight
    vsperf_test_run_vsperf || task_finish
    vsperf_test_collect
}

task_init vsperf_test
case "${VSPERF_ACTION}" in
    setup)
        if [[ "${GUEST}" == "1" ]]; then
            vsperf_test_setup_guest
        else
            vsperf_test_setup_host
        fi
        ;;
    run) vsperf_test_run ;;
    *) task_abort "VSPERF_ACTION '${VSPERF_ACTION}' is not 'setup' or 'run'." ;;
esac
task_finish
