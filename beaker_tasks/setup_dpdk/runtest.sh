#!/bin/bash
# setup_dpdk: prepare the traffic generator host for MoonGen.
#
# Boot 0 (persistent part): tuned cpu-partitioning with the isolated CPUs, IRQs banned from them,
# vfio-pci loaded at boot, optional kernel arguments; then reboot through the harness.
# Boot 1+ (checks): vfio-pci loaded, test NICs bound to it by PCI address, hugepages reserved,
# IOMMU on, CPU isolation active. A missing NIC, no hugepages or no IOMMU is a lab problem:
# WARN and abort the recipe. On both boots, before anything changes: a test NIC whose PCI device does
# not exist, or whose kernel interface has an address or the default route (the host's management
# traffic), is refused (WARN + abort) naming the PCI address and the interface.
# Runs on the TG (both engines) and, with the engine ovsperf, on the DUT too (its NICs for OVS-DPDK).
#
# Parameters (environment): INVENTORY (host inventory YAML, see vsperf_configs/inventory.example.yaml)
# or TEST_NICS (PCI addresses) and ISOLATED_CPUS (cpulist); optional SETUP_DPDK_HOST (inventory
# key, default `hostname -f`), KERNEL_ARGS (added with grubby, e.g. hugepages when the job's
# kernel_options_post does not set them), SETUP_DPDK_REBOOT (1: reboot between the parts).
#
# Red Hat family (the default) or Debian family (/etc/os-release ID or ID_LIKE debian): Debian has no
# grubby, so KERNEL_ARGS go into GRUB_CMDLINE_LINUX of /etc/default/grub, then update-grub; irqbalance
# reads /etc/default/irqbalance there; the packages are named as Debian names them.
set -o nounset -o pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/task.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/task.sh"

: "${INVENTORY:=}"
: "${TEST_NICS:=}"
: "${ISOLATED_CPUS:=}"
: "${KERNEL_ARGS:=}"
: "${SETUP_DPDK_REBOOT:=1}"
: "${SETUP_DPDK_DRIVER:=vfio-pci}"

setup_dpdk_params() {
    task_find_inventory
    if [[ -n "${INVENTORY}" ]]; then
        : "${SETUP_DPDK_HOST:=$(hostname -f)}"
        task_load_inventory "${SETUP_DPDK_HOST}" ||
            task_abort "Cannot read the inventory entry of '${SETUP_DPDK_HOST}' from '${INVENTORY}'."
        : "${TEST_NICS:=${INV_TEST_NICS}}"
        : "${ISOLATED_CPUS:=${INV_ISOLATED_CPUS}}"
    fi
    task_require_params TEST_NICS ISOLATED_CPUS
    local pci
    for pci in ${TEST_NICS}; do
        [[ "${pci}" =~ ^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] ||
            task_abort "TEST_NICS entry '${pci}' is not a PCI address like 0000:03:00.0."
    done
    [[ "${ISOLATED_CPUS}" =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] ||
        task_abort "ISOLATED_CPUS '${ISOLATED_CPUS}' is not a cpulist like 2-11."
    # Kernel arguments end up in /etc/default/grub, a file update-grub sources as shell: only
    # plain words (no quotes, $, `, \, globs or blanks inside one argument) get there.
    local arg
    local -a args
    read -r -a args <<<"${KERNEL_ARGS}"
    for arg in "${args[@]}"; do
        [[ "${arg}" =~ ^[A-Za-z0-9_][A-Za-z0-9_.,:=/+@-]*$ ]] ||
            task_abort "KERNEL_ARGS entry '${arg}' is not a kernel argument like hugepages=16 (letters, digits, _.,:=/+@-)."
    done
}

# setup_dpdk_grub_args ARGS: put each of ARGS into GRUB_CMDLINE_LINUX of /etc/default/grub once (an
# argument KEY=VALUE replaces an earlier KEY=...); the other lines are kept. Debian's grubby.
setup_dpdk_grub_args() {
    local file="${TASK_ETC}/default/grub" current="" arg word kept
    local -a args words
    [[ -f "${file}" ]] || return 1
    current="$(sed -n 's/^GRUB_CMDLINE_LINUX="\(.*\)"$/\1/p' "${file}" | tail -n 1)"
    read -r -a args <<<"$1" # split on blanks, never glob (setup_dpdk_params checked each word)
    for arg in "${args[@]}"; do
        kept=""
        read -r -a words <<<"${current}"
        for word in "${words[@]}"; do
            [[ "${word}" == "${arg}" || ("${arg}" == *=* && "${word}" == "${arg%%=*}="*) ]] && continue
            kept="${kept:+${kept} }${word}"
        done
        current="${kept:+${kept} }${arg}"
    done
    # The line through the environment: awk -v would interpret backslashes of the file's own words.
    SETUP_DPDK_GRUB_LINE="GRUB_CMDLINE_LINUX=\"${current}\"" awk \
        '/^GRUB_CMDLINE_LINUX=/ { if (!done) print ENVIRON["SETUP_DPDK_GRUB_LINE"]; done = 1; next }
         { print }
         END { if (!done) print ENVIRON["SETUP_DPDK_GRUB_LINE"] }' \
        "${file}" >"${file}.ovsperf" && mv "${file}.ovsperf" "${file}"
}

# setup_dpdk_kernel_args: add KERNEL_ARGS for the next boot, with grubby or /etc/default/grub.
setup_dpdk_kernel_args() {
    if [[ "${SETUP_DPDK_FAMILY}" == "debian" ]]; then
        task_run "Add kernel arguments ${KERNEL_ARGS} to /etc/default/grub" setup_dpdk_grub_args "${KERNEL_ARGS}" ||
            task_abort "Cannot add the kernel arguments '${KERNEL_ARGS}' to ${TASK_ETC}/default/grub (is grub2-common installed?)."
        task_run "Regenerate the GRUB configuration" update-grub ||
            task_abort "update-grub cannot write the GRUB configuration with '${KERNEL_ARGS}'."
    else
        # shellcheck disable=SC2086 # KERNEL_ARGS is a list of kernel arguments
        task_run "Add kernel arguments ${KERNEL_ARGS}" grubby --update-kernel=ALL --args="${KERNEL_ARGS}" ||
            task_abort "grubby cannot add the kernel arguments '${KERNEL_ARGS}'."
    fi
}

# setup_dpdk_mgmt_use NETDEV: print why NETDEV carries the host's own traffic (a global address, a
# default route), nothing when it carries none.
setup_dpdk_mgmt_use() {
    local netdev="$1" address route
    address="$(ip -o addr show dev "${netdev}" scope global 2>/dev/null | awk '{ print $4; exit }')"
    if [[ -n "${address}" ]]; then
        printf 'it has the address %s\n' "${address}"
        return 0
    fi
    route="$({ ip -4 route show default; ip -6 route show default; } 2>/dev/null |
        awk -v dev="${netdev}" '{ for (i = 1; i < NF; i++) if ($i == "dev" && $(i + 1) == dev) { print; exit } }')"
    [[ -z "${route}" ]] || printf 'it carries the default route (%s)\n' "${route}"
}

# setup_dpdk_refuse_nics: before anything changes, abort (WARN) for a test NIC that does not exist or
# whose kernel interface carries the host's management traffic: binding it to DPDK would cut the host
# off (and Beaker's harness with it).
setup_dpdk_refuse_nics() {
    local pci netdev why
    for pci in ${TEST_NICS}; do
        task_pci_present "${pci}" ||
            task_abort "Test NIC ${pci} is missing on $(hostname -f): no PCI device ${pci} (${TASK_SYSFS}/bus/pci/devices/${pci}); check the inventory's nics."
        netdev="$(task_pci_netdev "${pci}")"
        [[ -n "${netdev}" ]] || continue
        why="$(setup_dpdk_mgmt_use "${netdev}")"
        [[ -z "${why}" ]] ||
            task_abort "Test NIC ${pci} is the kernel interface ${netdev}, which carries this host's own traffic" \
                "(${why}); binding it to DPDK would cut the host off. Nothing was changed: fix the inventory's nics."
    done
}

setup_dpdk_load_at_boot() {
    mkdir -p "${TASK_ETC}/modules-load.d" &&
        printf '%s\n' "${SETUP_DPDK_DRIVER}" >"${TASK_ETC}/modules-load.d/ovsperf-${SETUP_DPDK_DRIVER}.conf"
}

setup_dpdk_persistent() {
    task_phase_start Setup environment
    setup_dpdk_refuse_nics
    local -a nics
    read -r -a nics <<<"${TEST_NICS}"
    task_log_versions "${nics[@]}"
    task_phase_end

    task_phase_start Setup persistent
    task_run "Write tuned cpu-partitioning isolated_cores=${ISOLATED_CPUS}" task_tuned_isolate "${ISOLATED_CPUS}" ||
        task_abort "Cannot write the tuned variables."
    local profiles=tuned-profiles-cpu-partitioning irqbalance_dir=sysconfig
    if [[ "${SETUP_DPDK_FAMILY}" == "debian" ]]; then
        profiles=tuned irqbalance_dir=default
    fi
    task_run "Activate tuned profile cpu-partitioning" tuned-adm profile cpu-partitioning ||
        task_abort "tuned-adm cannot activate cpu-partitioning (is ${profiles} installed?)."
    task_run "Ban IRQs from CPUs ${ISOLATED_CPUS}" task_ban_irqs "${ISOLATED_CPUS}" "${irqbalance_dir}"
    task_run "Restart irqbalance" systemctl restart irqbalance
    task_run "Load ${SETUP_DPDK_DRIVER} at boot" setup_dpdk_load_at_boot
    if [[ -n "${KERNEL_ARGS}" ]]; then
        setup_dpdk_kernel_args
    elif [[ "${SETUP_DPDK_FAMILY}" == "debian" ]]; then
        # tuned writes its CPU isolation arguments for /etc/grub.d/00_tuned; on Red Hat it regenerates
        # the GRUB configuration itself, on Debian update-grub must run for the next boot to have them.
        task_run "Regenerate the GRUB configuration (tuned's kernel arguments)" update-grub ||
            task_abort "update-grub cannot write the GRUB configuration with tuned's kernel arguments."
    fi
    task_mark persistent
    task_phase_end
}

setup_dpdk_bind() {
    task_phase_start Setup bind
    setup_dpdk_refuse_nics
    task_run "Load ${SETUP_DPDK_DRIVER}" modprobe "${SETUP_DPDK_DRIVER}" ||
        task_abort "Cannot load ${SETUP_DPDK_DRIVER}."
    local pci netdev
    local -a unbound=()
    for pci in ${TEST_NICS}; do
        task_pci_present "${pci}" || task_abort "Test NIC ${pci} is missing on $(hostname -f)."
        [[ "$(task_pci_driver "${pci}")" == "${SETUP_DPDK_DRIVER}" ]] && continue
        netdev="$(task_pci_netdev "${pci}")"
        if [[ -n "${netdev}" ]]; then
            task_run "Take ${netdev} (${pci}) down" ip link set dev "${netdev}" down
        fi
        unbound+=("${pci}")
    done
    if ((${#unbound[@]})); then
        task_run "Bind ${unbound[*]} to ${SETUP_DPDK_DRIVER}" dpdk-devbind.py -b "${SETUP_DPDK_DRIVER}" "${unbound[@]}" ||
            task_abort "dpdk-devbind.py cannot bind ${unbound[*]} to ${SETUP_DPDK_DRIVER} (IOMMU off?)."
    fi
    task_run "Show device bindings" dpdk-devbind.py --status-dev net
    task_phase_end
}

setup_dpdk_verify() {
    task_phase_start Setup verify
    local pci driver hugepages
    for pci in ${TEST_NICS}; do
        driver="$(task_pci_driver "${pci}")"
        [[ "${driver}" == "${SETUP_DPDK_DRIVER}" ]] ||
            task_abort "Test NIC ${pci} is bound to '${driver:-no driver}', not ${SETUP_DPDK_DRIVER}."
    done
    hugepages="$(task_hugepages_total)"
    ((hugepages > 0)) || task_abort "No hugepages are reserved (kernel command line: $(cat "${TASK_PROC}/cmdline"))."
    task_log "  ${hugepages} hugepages reserved"
    if ! compgen -G "${TASK_SYSFS}/kernel/iommu_groups/*" >/dev/null; then
        task_abort "The IOMMU is off (no IOMMU groups); add intel_iommu=on iommu=pt to the kernel command line."
    fi
    task_run "tuned profile is cpu-partitioning" task_tuned_active
    grep -qE '(^| )(isolcpus|nohz_full)=' "${TASK_PROC}/cmdline" ||
        task_warn "CPU isolation is not on the kernel command line yet; tuned applies it at the next boot."
    task_phase_end
}

task_init setup_dpdk
SETUP_DPDK_FAMILY="$(task_os_family)"
task_log "Host family: ${SETUP_DPDK_FAMILY}"
setup_dpdk_params
if ((TASK_REBOOTCOUNT == 0)); then
    setup_dpdk_persistent
    if [[ "${SETUP_DPDK_REBOOT}" == "1" ]]; then
        task_reboot
    fi
elif ! task_done persistent; then
    task_abort "Rebooted (count ${TASK_REBOOTCOUNT}) before the persistent setup finished; see the previous boot's logs."
fi
setup_dpdk_bind
setup_dpdk_verify
task_finish
