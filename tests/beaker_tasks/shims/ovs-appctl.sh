#!/bin/bash
# Test shim of ovs-appctl: answers dpif-netdev/pmd-* from the OVS 3.1 fixtures (FAKE_OVS_FIXTURES);
# FAKE_OVS_APPCTL_FAIL names a command that fails as an OVS without it would.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
if [[ "${1}" == "${FAKE_OVS_APPCTL_FAIL:-}" ]]; then
    echo "\"${1}\" is not a valid command" >&2
    exit 2
fi
case "${1}" in
    dpif-netdev/pmd-stats-clear) ;;
    dpif-netdev/pmd-stats-show) cat "${FAKE_OVS_FIXTURES:?}/pmd-stats-show-3.1.txt" ;;
    dpif-netdev/pmd-rxq-show) cat "${FAKE_OVS_FIXTURES:?}/pmd-rxq-show-3.1.txt" ;;
    dpif-netdev/pmd-perf-show) echo "Time: 01:00:00.000  Measurement duration: 10.000 s" ;;
    *) echo "\"${1}\" is not a valid command" >&2; exit 2 ;;
esac
