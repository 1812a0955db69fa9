#!/bin/bash
# Fetch another build of the DPDK libraries ovs-vswitchd links against, unpacked into a private
# directory, for `ovsperf-lab compare --b-lib-dir DIR/usr/lib/<triplet>` (a second DPDK of the same
# ABI, e.g. Debian bookworm-security's 22.11.7 beside the installed 22.11.11). Installs nothing:
# `apt-get download` + `dpkg-deb -x`.
#   scripts/fetch-dpdk-libs.sh DIR [VERSION]
# VERSION defaults to the newest version apt knows of librte-eal<ABI> other than the installed one.
# Prints the library directory on stdout; exits 2 with a message when there is no other version.
set -o errexit -o nounset -o pipefail
die() { printf 'fetch-dpdk-libs: %s\n' "$*" >&2; exit 2; }

[[ $# -ge 1 && $# -le 2 ]] || die "usage: $0 DIR [VERSION]"
dir=$1
vswitchd=${OVS_VSWITCHD:-/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk}
[[ -x ${vswitchd} ]] || die "no DPDK ovs-vswitchd at '${vswitchd}' (set OVS_VSWITCHD)"
mapfile -t libs < <(ldd "${vswitchd}" | grep -o 'librte_[a-z0-9_]*\.so\.[0-9]*' | sort -u)
[[ ${#libs[@]} -gt 0 ]] || die "'${vswitchd}' links no librte_* library"
abi=${libs[0]##*.so.}
installed=$(dpkg-query -W -f '${Version}' "librte-eal${abi}" 2>/dev/null) || die "librte-eal${abi} is not installed"
version=${2:-$(apt-cache madison "librte-eal${abi}" | awk -v v="${installed}" '$3 != v {print $3; exit}')}
[[ -n ${version} ]] || die "apt knows no version of librte-eal${abi} other than the installed ${installed}"
[[ ${version} =~ ^[A-Za-z0-9.+~:-]+$ ]] || die "not a Debian version: '${version//[^[:alnum:].+~:-]/?}'"
pkgs=()
for lib in "${libs[@]}"; do
    name=${lib#librte_}; name=${name%%.so.*}
    pkgs+=("librte-${name//_/-}${abi}=${version}")
done
mkdir -p "${dir}/debs" "${dir}/root"
(cd "${dir}/debs" && timeout 600 apt-get download -q "${pkgs[@]}" >&2) || die "apt-get download of ${version} failed"
for deb in "${dir}"/debs/*.deb; do dpkg-deb -x "${deb}" "${dir}/root"; done
libdir=$(dirname "$(find "${dir}/root" -name "librte_eal.so.${abi}" -print -quit)")
[[ -d ${libdir} ]] || die "the packages held no librte_eal.so.${abi}"
printf 'fetch-dpdk-libs: DPDK %s (installed: %s) unpacked into %s\n' "${version}" "${installed}" "${libdir}" >&2
echo "${libdir}"
