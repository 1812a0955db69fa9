#!/bin/bash
# setup_trex: install TRex from its release tarball and run its stateless server as trex.service
# (the traffic generator of VSperf's 'Trex' driver; docs/beaker_tasks.md "TRex").
#
# SETUP_TREX_ACTION=install (default), on the TG: download the tarball (bounded attempts within a
#   deadline), check its SHA-256 BEFORE anything is unpacked (a mismatch: WARN + abort, the download
#   removed, the install directory untouched), unpack it into the install directory (its top
#   directory stripped: t-rex-64 lands there), write /etc/trex_cfg.yaml from the inventory (TRex's
#   ports in order, their MACs read from sysfs while the kernel still drives the NICs and cached in
#   the state directory for a later run that finds them bound to DPDK, the platform CPUs) and the
#   unit trex.service (`t-rex-64 -i --iom 0 --cfg /etc/trex_cfg.yaml` in the install directory).
#   Runs before setup_dpdk, as build_moongen does. Never replaces what is not ours: an install
#   directory is replaced only when absent, empty or stamped by an earlier run (.ovsperf-sha256),
#   else WARN + abort; a configuration or unit file without our first line is kept as
#   <file>.ovsperf-orig (once) before ours is written. A running trex.service is stopped first.
#   On a DUT (its inventory role): the same download, check and unpack only, for VSperf's TRex client
#   library (vsperf-config points PATHS['trafficgen']['Trex'] at it); no configuration, no service.
# SETUP_TREX_ACTION=start, on the TG after setup_dpdk bound the NICs: open TCP TREX_ASYNC_PORT (4500)
#   and TREX_SYNC_PORT (4501) in firewalld when it runs, (re)start trex.service and wait until the
#   server accepts connections on its sync port within TREX_START_TIMEOUT_S; a server that does not
#   come up is WARN + abort with its log attached.
# SETUP_TREX_ACTION=stop, on the TG at the end of the job: stop trex.service, attach its log.
#
# Parameters (environment): SETUP_TREX_ACTION, INVENTORY, SETUP_TREX_HOST (inventory key, default
# `hostname -f`); without an inventory TREX_URL, TREX_SHA256, TREX_INSTALL_DIR, TREX_INTERFACES (PCI
# addresses of TRex's port 0 and port 1), GENERATOR_CPUS (comma-separated), NUMA_NODE, ROLE; and
# TREX_DOWNLOAD_ATTEMPTS (3), TREX_DOWNLOAD_TIMEOUT_S (TASK_NET_TIMEOUT_S), TREX_START_TIMEOUT_S (120),
# TREX_SYNC_PORT (4501), TREX_ASYNC_PORT (4500), TREX_SERVER_ADDRESS (127.0.0.1). Tests redirect /etc
# through TASK_ETC and replace systemctl and journalctl on PATH.
set -o nounset -o pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/task.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/task.sh"

: "${SETUP_TREX_ACTION:=install}"
: "${INVENTORY:=}"
: "${TREX_URL:=}"
: "${TREX_SHA256:=}"
: "${TREX_INSTALL_DIR:=}"
: "${TREX_INTERFACES:=}"
: "${GENERATOR_CPUS:=}"
: "${NUMA_NODE:=}"
: "${ROLE:=trafficgen}"
: "${TREX_DOWNLOAD_ATTEMPTS:=3}"
: "${TREX_DOWNLOAD_TIMEOUT_S:=}"
: "${TREX_START_TIMEOUT_S:=120}"
: "${TREX_SYNC_PORT:=4501}"
: "${TREX_ASYNC_PORT:=4500}"
: "${TREX_SERVER_ADDRESS:=127.0.0.1}"
SETUP_TREX_UNIT="trex.service"
# TRex's configuration (the server's default path) and where the unit goes.
SETUP_TREX_CFG_PATH="/etc/trex_cfg.yaml"
# The first line of every file this task writes: a file that starts otherwise is not ours.
SETUP_TREX_HEADER="# written by ovsperf setup_trex"
# The stamp of an install directory of ours: the SHA-256 of the tarball it was unpacked from.
SETUP_TREX_STAMP=".ovsperf-sha256"
# Most characters of TREX_URL (vsperf_configs/inventory.py MAX_TREX_URL_CHARS).
SETUP_TREX_MAX_URL_CHARS=1024
# Directories never installed into (with vsperf_configs/inventory.py SYSTEM_DIRS): the file
# system's top and system directories; a directory directly in /home is someone's home.
SETUP_TREX_SYSTEM_DIRS=(
    /bin /boot /dev /etc /home /lib /lib64 /media /mnt /opt /proc /root /run /sbin /srv /sys /tmp /usr /var
    /usr/bin /usr/include /usr/lib /usr/lib64 /usr/libexec /usr/local /usr/sbin /usr/share /usr/src
    /usr/local/bin /usr/local/lib /usr/local/lib64 /usr/local/sbin /usr/local/share
    /var/cache /var/lib /var/log /var/opt /var/run /var/spool /var/tmp
)
# Top directories nothing is installed under: kernel and boot file systems, the configuration.
SETUP_TREX_NO_INSTALL_TOPS=(boot dev etc proc run sys)

# setup_trex_check_install_dir DIR: return 0 when DIR may hold TRex: absolute; components of
# letters, digits and ._+- ('.' and '..' refused); at least two of them; not a system directory,
# nothing under /boot, /dev, /etc, /proc, /run or /sys, not a home directory itself (/home/NAME).
setup_trex_check_install_dir() {
    local dir="$1" part system
    local -a parts
    [[ "${dir}" =~ ^(/[A-Za-z0-9._+-]+)+$ ]] || return 1
    IFS='/' read -r -a parts <<<"${dir#/}"
    ((${#parts[@]} >= 2)) || return 1
    for part in "${parts[@]}"; do
        [[ "${part}" != "." && "${part}" != ".." ]] || return 1
    done
    for system in "${SETUP_TREX_SYSTEM_DIRS[@]}"; do
        [[ "${dir}" != "${system}" ]] || return 1
    done
    for system in "${SETUP_TREX_NO_INSTALL_TOPS[@]}"; do
        [[ "${parts[0]}" != "${system}" ]] || return 1
    done
    [[ ! ("${parts[0]}" == "home" && ${#parts[@]} == 2) ]]
}

setup_trex_params() {
    case "${SETUP_TREX_ACTION}" in
        install | start | stop) ;;
        *) task_abort "SETUP_TREX_ACTION '${SETUP_TREX_ACTION}' is not install, start or stop." ;;
    esac
    task_find_inventory
    local peer=""
    if [[ -n "${INVENTORY}" ]]; then
        : "${SETUP_TREX_HOST:=$(hostname -f)}"
        task_load_inventory "${SETUP_TREX_HOST}" ||
            task_abort "Cannot read the inventory entry of '${SETUP_TREX_HOST}' from '${INVENTORY}'."
        ROLE="${INV_ROLE}"
        if [[ "${ROLE}" == "dut" ]]; then
            # The DUT installs the TRex of its peer, for the client library VSperf imports.
            [[ "${INV_GENERATOR}" == "trex" ]] ||
                task_abort "The DUT '${SETUP_TREX_HOST}' does not drive TRex: its inventory peer's generator is '${INV_GENERATOR}'."
            peer="${INV_MOONGEN_HOST}"
            task_load_inventory "${peer}" ||
                task_abort "Cannot read the inventory entry of the DUT's traffic generator '${peer}' from '${INVENTORY}'."
        fi
        [[ -n "${INV_TREX_URL}" ]] ||
            task_abort "The inventory entry of '${peer:-${SETUP_TREX_HOST}}' has no 'trex:' record (url, sha256, install_dir, ports)."
        : "${TREX_URL:=${INV_TREX_URL}}"
        : "${TREX_SHA256:=${INV_TREX_SHA256}}"
        : "${TREX_INSTALL_DIR:=${INV_TREX_INSTALL_DIR}}"
        : "${TREX_INTERFACES:=${INV_TREX_INTERFACES}}"
        : "${GENERATOR_CPUS:=${INV_GENERATOR_CPUS}}"
        : "${NUMA_NODE:=${INV_NUMA_NODE}}"
    fi
    : "${TREX_DOWNLOAD_TIMEOUT_S:=${TASK_NET_TIMEOUT_S}}"
    local name
    for name in TREX_DOWNLOAD_ATTEMPTS TREX_DOWNLOAD_TIMEOUT_S TREX_START_TIMEOUT_S TREX_SYNC_PORT TREX_ASYNC_PORT; do
        [[ "${!name}" =~ ^[1-9][0-9]{0,5}$ ]] || task_abort "${name} '${!name}' is not a positive whole number."
    done
    for name in TREX_SYNC_PORT TREX_ASYNC_PORT; do
        ((${!name} <= 65535)) || task_abort "${name} '${!name}' is not a TCP port (1 to 65535)."
    done
    [[ "${TREX_SERVER_ADDRESS}" =~ ^[A-Za-z0-9.:-]+$ ]] ||
        task_abort "TREX_SERVER_ADDRESS '${TREX_SERVER_ADDRESS}' is not a host name or address."
    task_require_params TREX_INSTALL_DIR
    setup_trex_check_install_dir "${TREX_INSTALL_DIR}" ||
        task_abort "TREX_INSTALL_DIR '${TREX_INSTALL_DIR}' is not a directory to install TRex into: an absolute path" \
            "of at least two components (letters, digits, ._+-; no '.' or '..'), not a system directory such as" \
            "/opt, /usr/local or /var/lib, nothing under /boot, /dev, /etc, /proc, /run or /sys; e.g. /opt/trex."
    [[ "${SETUP_TREX_ACTION}" == "install" ]] || return 0
    task_require_params TREX_URL TREX_SHA256
    local url_re='^https?://[A-Za-z0-9.-]+(:([0-9]{1,5}))?/[A-Za-z0-9._~/%+-]*[A-Za-z0-9._~%+-]$'
    if ! [[ "${TREX_URL}" =~ ${url_re} ]] || ((${#TREX_URL} > SETUP_TREX_MAX_URL_CHARS || 10#${BASH_REMATCH[2]:-80} > 65535)); then
        task_abort "TREX_URL '${TREX_URL}' is not the http(s) URL of a tarball (at most ${SETUP_TREX_MAX_URL_CHARS}" \
            "characters of letters, digits and ._~/%+-, a port up to 65535, not ending in '/')."
    fi
    TREX_SHA256="${TREX_SHA256,,}"
    [[ "${TREX_SHA256}" =~ ^[0-9a-f]{64}$ ]] || task_abort "TREX_SHA256 '${TREX_SHA256}' is not a SHA-256 (64 hex digits)."
    [[ "${ROLE}" == "dut" ]] && return 0
    task_require_params TREX_INTERFACES GENERATOR_CPUS NUMA_NODE
    local -a interfaces cpus
    read -r -a interfaces <<<"${TREX_INTERFACES}"
    ((${#interfaces[@]} == 2)) || task_abort "TREX_INTERFACES '${TREX_INTERFACES}' is not two PCI addresses (TRex's port 0 and port 1)."
    local pci
    for pci in "${interfaces[@]}"; do
        [[ "${pci}" =~ ^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] ||
            task_abort "TREX_INTERFACES entry '${pci}' is not a PCI address like 0000:81:00.0."
    done
    [[ "${GENERATOR_CPUS}" =~ ^[0-9]+(,[0-9]+)*$ ]] ||
        task_abort "GENERATOR_CPUS '${GENERATOR_CPUS}' is not a comma-separated list of CPU ids."
    IFS=',' read -r -a cpus <<<"${GENERATOR_CPUS}"
    ((${#cpus[@]} >= 3)) ||
        task_abort "GENERATOR_CPUS '${GENERATOR_CPUS}' has fewer than 3 CPUs (TRex's master thread, its latency thread, a worker)."
    [[ "${NUMA_NODE}" =~ ^[0-9]+$ ]] || task_abort "NUMA_NODE '${NUMA_NODE}' is not a NUMA node number."
}

# setup_trex_sha256 FILE: print FILE's SHA-256 (lower-case hex).
setup_trex_sha256() {
    sha256sum "$1" | awk '{ print $1 }'
}

# setup_trex_download FILE: fetch TREX_URL into FILE in at most TREX_DOWNLOAD_ATTEMPTS attempts within
# TREX_DOWNLOAD_TIMEOUT_S in all; return 1 when no attempt succeeded before the deadline. Each attempt
# gets its share of what is left (the time left over the attempts left), so a server that accepts and
# never sends costs one share, not the whole deadline; curl also gives up on a connection that takes
# 30 s, or a transfer slower than 1 KiB/s for 60 s. A quick failure (404) pauses within its own share
# before the next attempt (5 s, 10 s, ...).
setup_trex_download() {
    local file="$1" attempt=1 left share slot_end pause
    local deadline=$(($(date +%s) + TREX_DOWNLOAD_TIMEOUT_S))
    while ((attempt <= TREX_DOWNLOAD_ATTEMPTS)); do
        left=$((deadline - $(date +%s)))
        ((left > 0)) || break
        share=$((left / (TREX_DOWNLOAD_ATTEMPTS - attempt + 1)))
        ((share > 0)) || share=1
        slot_end=$(($(date +%s) + share))
        rm -f "${file}"
        task_log "  download attempt ${attempt}/${TREX_DOWNLOAD_ATTEMPTS} (at most ${share} s of ${left} s left): ${TREX_URL}"
        if timeout "${share}" curl --fail --silent --show-error --location --proto '=http,https' \
            --connect-timeout "$((share < 30 ? share : 30))" --speed-time 60 --speed-limit 1024 \
            --max-time "${share}" --output "${file}" -- "${TREX_URL}"; then
            return 0
        fi
        attempt=$((attempt + 1))
        if ((attempt <= TREX_DOWNLOAD_ATTEMPTS)); then
            pause=$((slot_end - $(date +%s)))
            ((pause > attempt * 5 - 5)) && pause=$((attempt * 5 - 5))
            ((pause > 0)) && sleep "${pause}"
        fi
    done
    rm -f "${file}"
    return 1
}

# setup_trex_ours DIR: whether DIR may be replaced by this task: absent, an empty directory, or a
# directory carrying our stamp (TRex unpacked by an earlier run of this task). Anything else (a file,
# a link, a directory with anything in it but our stamp) is someone else's and is never replaced.
setup_trex_ours() {
    local dir="$1"
    [[ -e "${dir}" || -L "${dir}" ]] || return 0
    [[ -d "${dir}" && ! -L "${dir}" ]] || return 1
    [[ -f "${dir}/${SETUP_TREX_STAMP}" && ! -L "${dir}/${SETUP_TREX_STAMP}" ]] && return 0
    [[ -z "$(ls -A -- "${dir}")" ]]
}

# setup_trex_unpack TARBALL DIR: unpack TARBALL (its top directory stripped) into DIR, replacing what
# was there only when it is ours (setup_trex_ours); the directory appears whole (unpacked aside, then
# renamed) or not at all.
setup_trex_unpack() {
    local tarball="$1" dir="$2" new="$2.ovsperf-new" old="$2.ovsperf-old"
    rm -rf "${new}" "${old}" && mkdir -p "${new}" || return 1
    tar --extract --gzip --no-same-owner --strip-components=1 --file "${tarball}" --directory "${new}" || {
        rm -rf "${new}"
        return 1
    }
    if [[ ! -x "${new}/t-rex-64" ]]; then
        printf "the tarball has no executable 't-rex-64' under its top directory\n" >&2
        rm -rf "${new}"
        return 1
    fi
    printf '%s\n' "${TREX_SHA256}" >"${new}/${SETUP_TREX_STAMP}" || {
        rm -rf "${new}"
        return 1
    }
    if ! setup_trex_ours "${dir}"; then # checked before the download; checked again here
        printf "'%s' is not ours: not replaced\n" "${dir}" >&2
        rm -rf "${new}"
        return 1
    fi
    if [[ -e "${dir}" ]]; then
        mv "${dir}" "${old}" || {
            rm -rf "${new}"
            return 1
        }
    fi
    mv "${new}" "${dir}" && rm -rf "${old}"
}

# setup_trex_stop_active: stop trex.service when it runs (an earlier job's server holds the NICs and
# the install directory's files).
setup_trex_stop_active() {
    systemctl is-active --quiet "${SETUP_TREX_UNIT}" || return 0
    task_run "Stop the running ${SETUP_TREX_UNIT}" systemctl stop "${SETUP_TREX_UNIT}" ||
        task_abort "Cannot stop the running ${SETUP_TREX_UNIT} (systemctl stop failed)."
}

setup_trex_install() {
    task_phase_start Setup download
    [[ "${ROLE}" == "dut" ]] || setup_trex_stop_active
    local stamp="${TREX_INSTALL_DIR}/${SETUP_TREX_STAMP}" tarball="${TASK_STATE_DIR}/trex-download.tar.gz"
    if [[ -f "${stamp}" && "$(<"${stamp}")" == "${TREX_SHA256}" && -x "${TREX_INSTALL_DIR}/t-rex-64" ]]; then
        task_log "  TRex ${TREX_SHA256:0:12} is already installed in ${TREX_INSTALL_DIR}"
        task_phase_end
        return 0
    fi
    setup_trex_ours "${TREX_INSTALL_DIR}" ||
        task_abort "TREX_INSTALL_DIR '${TREX_INSTALL_DIR}' exists and is not ours (no ${SETUP_TREX_STAMP} of an earlier" \
            "setup_trex, not empty): it is left as it is. Remove it, or give trex.install_dir a new directory."
    task_run "Download ${TREX_URL}" setup_trex_download "${tarball}" ||
        task_abort "Cannot download the TRex tarball '${TREX_URL}' in ${TREX_DOWNLOAD_ATTEMPTS} attempts within ${TREX_DOWNLOAD_TIMEOUT_S} s (server down?)."
    local actual
    actual="$(setup_trex_sha256 "${tarball}")"
    task_log "  SHA-256 ${actual}"
    if [[ "${actual}" != "${TREX_SHA256}" ]]; then
        rm -f "${tarball}"
        task_abort "The TRex tarball '${TREX_URL}' has SHA-256 ${actual}, not the inventory's ${TREX_SHA256}; nothing was unpacked."
    fi
    task_phase_end

    task_phase_start Setup unpack
    mkdir -p "$(dirname "${TREX_INSTALL_DIR}")" || task_abort "Cannot create the parent of '${TREX_INSTALL_DIR}'."
    task_run "Unpack TRex into ${TREX_INSTALL_DIR}" setup_trex_unpack "${tarball}" "${TREX_INSTALL_DIR}" ||
        task_abort "Cannot unpack '${TREX_URL}' into '${TREX_INSTALL_DIR}' (not a TRex release tarball?):" \
            "$(grep -v -e '^+ ' -e '^FAILED ' "${TASK_PHASE_LOG}" | tail -n 1)"
    rm -f "${tarball}"
    task_phase_end
}

# setup_trex_our_file FILE: whether FILE was written by this task (its first line is our header).
setup_trex_our_file() {
    local first=""
    [[ -f "$1" && ! -L "$1" ]] || return 1
    IFS= read -r first <"$1" || [[ -n "${first}" ]] || return 1
    [[ "${first}" == "${SETUP_TREX_HEADER}"* ]]
}

# setup_trex_mac_cache PCI: the file caching the MAC address of a test NIC, read while its kernel
# driver drove it (the next install may find it bound to DPDK).
setup_trex_mac_cache() {
    printf '%s/macs/%s\n' "${TASK_STATE_DIR}" "$1"
}

# setup_trex_cfg_mac FILE PCI: print the src_mac our configuration FILE gives the port at PCI.
setup_trex_cfg_mac() {
    awk -v pci="$2" '
        /^  interfaces: / { n = split($0, a, "\""); k = 0; for (i = 2; i <= n; i += 2) { k++; if (a[i] == pci) want = k } }
        /^    - src_mac: / { m++; split($0, b, "\""); if (want && m == want) print b[2] }' "$1"
}

# setup_trex_mac PCI CFG: print the MAC address of a test NIC: from sysfs while its kernel driver
# drives it (and cache it in the task's state directory); bound to DPDK, from that cache, else from
# CFG when it is our configuration. Print where it came from on stderr; return 1 when nowhere.
setup_trex_mac() {
    local pci="$1" cfg="$2" netdev mac="" cache
    cache="$(setup_trex_mac_cache "${pci}")"
    netdev="$(task_pci_netdev "${pci}")"
    if [[ -n "${netdev}" && -r "${TASK_SYSFS}/bus/pci/devices/${pci}/net/${netdev}/address" ]]; then
        mac="$(<"${TASK_SYSFS}/bus/pci/devices/${pci}/net/${netdev}/address")"
        [[ "${mac}" =~ ^[0-9a-f]{2}(:[0-9a-f]{2}){5}$ ]] || return 1
        if ! { mkdir -p "${cache%/*}" && printf '%s\n' "${mac}" >"${cache}.tmp" && mv -f "${cache}.tmp" "${cache}"; }; then
            rm -f "${cache}.tmp"
            printf 'cannot cache the MAC address in %s\n' "${cache}" >&2
            return 1
        fi
        printf 'from %s (%s), cached in %s\n' "${netdev}" "${mac}" "${cache}" >&2
    elif [[ -f "${cache}" ]]; then
        mac="$(<"${cache}")"
        printf 'from the cache %s (%s): bound to %s\n' "${cache}" "${mac}" "$(task_pci_driver "${pci}")" >&2
    elif setup_trex_our_file "${cfg}"; then
        mac="$(setup_trex_cfg_mac "${cfg}" "${pci}")"
        printf 'from our %s (%s): bound to %s\n' "${cfg}" "${mac}" "$(task_pci_driver "${pci}")" >&2
    fi
    [[ "${mac}" =~ ^[0-9a-f]{2}(:[0-9a-f]{2}){5}$ ]] || return 1
    printf '%s\n' "${mac}"
}

# setup_trex_config_text MAC0 MAC1: print TRex's configuration. Port i sends with its own MAC and to
# the other port's (the frames cross the DUT and come back to TRex); the platform section pins TRex's
# master thread, its latency thread and its workers (the dual_if of the NICs' NUMA node).
setup_trex_config_text() {
    local mac0="$1" mac1="$2" threads
    local -a interfaces cpus
    read -r -a interfaces <<<"${TREX_INTERFACES}"
    IFS=',' read -r -a cpus <<<"${GENERATOR_CPUS}"
    threads="$(IFS=','; printf '%s' "${cpus[*]:2}")"
    printf '%s: TRex configuration from the host inventory.\n' "${SETUP_TREX_HEADER}"
    printf -- '- port_limit: 2\n'
    printf '  version: 2\n'
    printf '  c: %s\n' "$((${#cpus[@]} - 2))"
    printf '  interfaces: ["%s", "%s"]\n' "${interfaces[0]}" "${interfaces[1]}"
    printf '  port_info:\n'
    printf -- '    - src_mac: "%s"\n      dest_mac: "%s"\n' "${mac0}" "${mac1}"
    printf -- '    - src_mac: "%s"\n      dest_mac: "%s"\n' "${mac1}" "${mac0}"
    printf '  platform:\n'
    printf '    master_thread_id: %s\n' "${cpus[0]}"
    printf '    latency_thread_id: %s\n' "${cpus[1]}"
    printf '    dual_if:\n'
    printf -- '      - socket: %s\n' "${NUMA_NODE}"
    printf '        threads: [%s]\n' "${threads}"
}

# setup_trex_unit_text: print the systemd unit running the server from the install directory
# (--iom 0: no live statistics screen in the journal).
setup_trex_unit_text() {
    printf '%s: TRex stateless server.\n' "${SETUP_TREX_HEADER}"
    printf '[Unit]\n'
    printf 'Description=TRex stateless traffic generator server (ovsperf)\n'
    printf 'After=network.target\n\n'
    printf '[Service]\n'
    printf 'Type=simple\n'
    printf 'WorkingDirectory=%s\n' "${TREX_INSTALL_DIR}"
    printf 'ExecStart=%s/t-rex-64 -i --iom 0 --cfg %s\n' "${TREX_INSTALL_DIR}" "${SETUP_TREX_CFG_PATH}"
    printf 'Restart=no\n'
    printf 'TimeoutStopSec=30\n'
}

# setup_trex_replace FILE WRITER [ARG...]: write WRITER's output to FILE (aside, then renamed in; the
# aside file removed on failure). A FILE that is not ours is kept first as FILE.ovsperf-orig (a hard
# link, which never replaces an existing one); return 1 when that name is taken.
setup_trex_replace() {
    local file="$1" tmp="$1.ovsperf-tmp" orig="$1.ovsperf-orig"
    shift
    if [[ -e "${file}" || -L "${file}" ]] && ! setup_trex_our_file "${file}"; then
        ln -- "${file}" "${orig}" || return 1
        printf "kept '%s' (not ours) as '%s'\n" "${file}" "${orig}" >&2
    fi
    if ! "$@" >"${tmp}" || ! mv -f -- "${tmp}" "${file}"; then
        rm -f -- "${tmp}"
        return 1
    fi
}

setup_trex_configure() {
    task_phase_start Setup configure
    local cfg="${TASK_ETC}/${SETUP_TREX_CFG_PATH#/etc/}" unit="${TASK_ETC}/systemd/system/${SETUP_TREX_UNIT}"
    local -a interfaces
    local -a macs=()
    local pci mac file
    read -r -a interfaces <<<"${TREX_INTERFACES}"
    for pci in "${interfaces[@]}"; do
        task_pci_present "${pci}" ||
            task_abort "TRex port ${pci} is missing on $(hostname -f): no PCI device ${pci}; check the inventory's nics and trex.ports."
        mac="$(setup_trex_mac "${pci}" "${cfg}" 2>>"${TASK_PHASE_LOG}")" ||
            task_abort "Cannot read the MAC address of TRex port ${pci}: no kernel interface (bound to '$(task_pci_driver "${pci}")')," \
                "no cached address ($(setup_trex_mac_cache "${pci}")) and no configuration of ours in '${cfg}'." \
                "Give the NIC back to its kernel driver (reboot, or dpdk-devbind.py) and run setup_trex install again."
        task_log "  TRex port ${pci}: MAC ${mac}"
        macs+=("${mac}")
    done
    for file in "${cfg}" "${unit}"; do
        if [[ -e "${file}" || -L "${file}" ]] && ! setup_trex_our_file "${file}" &&
            [[ -e "${file}.ovsperf-orig" || -L "${file}.ovsperf-orig" ]]; then
            task_abort "'${file}' is not ours (its first line is not '${SETUP_TREX_HEADER}') and '${file}.ovsperf-orig'" \
                "already keeps an earlier one: neither is replaced. Move one of them away."
        fi
    done
    mkdir -p "${TASK_ETC}/systemd/system" || task_abort "Cannot create '${TASK_ETC}/systemd/system'."
    task_run "Write ${cfg}" setup_trex_replace "${cfg}" setup_trex_config_text "${macs[0]}" "${macs[1]}" ||
        task_abort "Cannot write '${cfg}'."
    task_run "Write ${unit}" setup_trex_replace "${unit}" setup_trex_unit_text || task_abort "Cannot write '${unit}'."
    task_run "Reload systemd's units" systemctl daemon-reload ||
        task_abort "systemctl daemon-reload failed: systemd does not know the new ${SETUP_TREX_UNIT}."
    task_upload "${cfg}"
    task_phase_end
}

# setup_trex_listening: whether the server accepts TCP connections on its sync port.
setup_trex_listening() {
    # shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
    timeout 5 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "${TREX_SERVER_ADDRESS}" "${TREX_SYNC_PORT}" 2>/dev/null
}

# setup_trex_server_log: write the server's log (its unit's journal) into the task's logs and attach it.
setup_trex_server_log() {
    local log="${TASK_LOG_DIR}/trex-server.log"
    journalctl --unit "${SETUP_TREX_UNIT}" --no-pager --lines 2000 >"${log}" 2>&1 ||
        printf 'journalctl could not read the journal of %s\n' "${SETUP_TREX_UNIT}" >>"${log}"
    task_upload "${log}"
}

setup_trex_start() {
    task_phase_start Setup start
    [[ -x "${TREX_INSTALL_DIR}/t-rex-64" ]] ||
        task_abort "TRex is not installed in '${TREX_INSTALL_DIR}' (run SETUP_TREX_ACTION=install first)."
    # The DUT's VSperf talks to the server on both ports: RPC (sync) and publisher (async).
    local port
    for port in "${TREX_ASYNC_PORT}" "${TREX_SYNC_PORT}"; do
        PERFSYNC_PORT="${port}" task_sync_open_port
    done
    # restart: a server still running (an earlier job's) is stopped first, then started anew.
    task_run "Start ${SETUP_TREX_UNIT}" systemctl restart "${SETUP_TREX_UNIT}" || {
        setup_trex_server_log
        task_abort "systemctl cannot start ${SETUP_TREX_UNIT}; its log is attached."
    }
    local deadline=$(($(date +%s) + TREX_START_TIMEOUT_S)) next_note=$(($(date +%s) + 60))
    until setup_trex_listening; do
        if ! systemctl is-active --quiet "${SETUP_TREX_UNIT}"; then
            setup_trex_server_log
            task_abort "The TRex server (${SETUP_TREX_UNIT}) exited before it accepted connections on" \
                "${TREX_SERVER_ADDRESS}:${TREX_SYNC_PORT}; its log is attached (trex-server.log)."
        fi
        if (($(date +%s) >= deadline)); then
            setup_trex_server_log
            task_abort "The TRex server did not accept connections on ${TREX_SERVER_ADDRESS}:${TREX_SYNC_PORT} within" \
                "${TREX_START_TIMEOUT_S} s of starting ${SETUP_TREX_UNIT}; its log is attached (trex-server.log)."
        fi
        if (($(date +%s) >= next_note)); then
            task_log "  still waiting for the TRex server on ${TREX_SERVER_ADDRESS}:${TREX_SYNC_PORT}"
            next_note=$((next_note + 60))
        fi
        sleep 1
    done
    task_log "  TRex server accepts connections on ${TREX_SERVER_ADDRESS}:${TREX_SYNC_PORT}"
    task_phase_end
}

setup_trex_stop() {
    task_phase_start Cleanup stop
    task_run "Stop ${SETUP_TREX_UNIT}" systemctl stop "${SETUP_TREX_UNIT}"
    setup_trex_server_log
    task_phase_end
}

task_init setup_trex
setup_trex_params
case "${SETUP_TREX_ACTION}" in
    install)
        setup_trex_install
        [[ "${ROLE}" == "dut" ]] || setup_trex_configure
        ;;
    start) setup_trex_start ;;
    stop) setup_trex_stop ;;
esac
task_finish
