#!/bin/bash
# Test shim of virsh for one libvirt domain: record; the domain's state lives in $SHIM_VIRSH_STATE
# (no such file or variable: the domain does not exist). domifaddr answers $SHIM_VIRSH_ADDRESS for the
# source $SHIM_VIRSH_SOURCE (default arp); shutdown turns the domain off unless
# SHIM_VIRSH_IGNORE_SHUTDOWN=1; destroy always does; domblklist shows the disk $SHIM_VIRSH_DISK.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
state_file="${SHIM_VIRSH_STATE:-}"
if [[ -z "${state_file}" || ! -f "${state_file}" ]]; then
    echo "error: failed to get domain '$2'" >&2
    exit 1
fi
case "$1" in
    domstate) cat "${state_file}" ;;
    domifaddr)
        [[ "$4" == "${SHIM_VIRSH_SOURCE:-arp}" && -n "${SHIM_VIRSH_ADDRESS:-}" ]] || exit 0
        printf ' Name       MAC address          Protocol     Address\n'
        printf -- '-------------------------------------------------------------------------------\n'
        printf ' lo         00:00:00:00:00:00    ipv4         127.0.0.1/8\n'
        printf ' vnet0      52:54:00:4b:73:5f    ipv4         %s/24\n' "${SHIM_VIRSH_ADDRESS}"
        ;;
    domblklist)
        printf ' Type   Device   Target   Source\n'
        printf -- '-------------------------------------------------------------\n'
        printf ' file   disk     vda      %s\n' "${SHIM_VIRSH_DISK:-/var/lib/libvirt/images/ovsperf-guest.qcow2}"
        printf ' file   cdrom    sda      -\n'
        ;;
    shutdown) [[ "${SHIM_VIRSH_IGNORE_SHUTDOWN:-0}" == 1 ]] || echo "shut off" >"${state_file}" ;;
    destroy) echo "shut off" >"${state_file}" ;;
    *) exit 1 ;;
esac
