#!/bin/bash
# Set up a Debian 12 machine for ovsperf: distribution packages, 2 MB hugepages, the Python venv
# (versions pinned by packaging/constraints.txt), jenkins-jobs in a venv of its own and the DPDK
# traffic generator. Idempotent; run as root (or through sudo).
set -o errexit -o nounset -o pipefail

die() { printf 'setup-debian: %s\n' "$*" >&2; exit 2; }
log() { printf 'setup-debian: %s\n' "$*" >&2; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${VENV:=${ROOT}/.venv}"
: "${JJB_VENV:=${ROOT}/.venv-jjb}"  # jenkins-job-builder's own venv (tests/jenkins/jjb.py finds it)
CONSTRAINTS=${ROOT}/packaging/constraints.txt  # generated: `make constraints`, CONTRIBUTING.md
: "${HUGEPAGES_2M:=1536}"          # 3 GiB: OVS (1 GiB) + generator + testpmd VNF
: "${SKIP_APT:=0}"

[[ ${EUID} -eq 0 ]] || die "run as root (apt, hugepages): sudo $0"

if [[ ${SKIP_APT} != 1 ]]; then
    "${ROOT}/scripts/install-debian-packages.sh" "${ROOT}/packaging/debian-packages.txt"
fi

# 2 MB hugepages for DPDK (OVS, generator, testpmd). 1 GB pages are not needed on one machine.
if ! mount | grep -q '^nodev on /dev/hugepages\|hugetlbfs on /dev/hugepages'; then
    mkdir -p /dev/hugepages
    mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages || die "cannot mount hugetlbfs on /dev/hugepages"
fi
current=$(cat /proc/sys/vm/nr_hugepages)
if (( current < HUGEPAGES_2M )); then
    echo "${HUGEPAGES_2M}" > /proc/sys/vm/nr_hugepages
    now=$(cat /proc/sys/vm/nr_hugepages)
    (( now >= HUGEPAGES_2M )) || die "asked for ${HUGEPAGES_2M} 2 MB hugepages, the kernel gave ${now}"
fi
log "hugepages: $(grep -E 'HugePages_(Total|Free)' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"

# Python: a venv keeps Debian's externally managed interpreter untouched (PEP 668).
if [[ ! -x ${VENV}/bin/python ]]; then
    python3 -m venv "${VENV}"
fi
"${VENV}/bin/python" -m pip install -q --upgrade pip >&2
"${VENV}/bin/python" -m pip install -q -c "${CONSTRAINTS}" -e "${ROOT}[all,test]" >&2
log "python package installed in ${VENV}"

# jenkins-jobs: jenkins-job-builder 6.x imports pkg_resources, so it needs setuptools < 81; that pin
# stays in this tool venv and never reaches the product's. Requirements: pyproject's `jenkins` extra.
if [[ ! -x ${JJB_VENV}/bin/python ]]; then
    python3 -m venv "${JJB_VENV}"
fi
mapfile -t jjb_requirements < <("${VENV}/bin/python" -c 'import sys, tomllib
print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["jenkins"]))' \
    "${ROOT}/pyproject.toml")
[[ ${#jjb_requirements[@]} -gt 0 ]] || die "pyproject.toml names no 'jenkins' requirements"
"${JJB_VENV}/bin/python" -m pip install -q --upgrade pip >&2
"${JJB_VENV}/bin/python" -m pip install -q -c "${CONSTRAINTS}" "${jjb_requirements[@]}" >&2
log "jenkins-jobs installed in ${JJB_VENV}"

# The DPDK traffic generator of the local lab, built against the distribution's libdpdk.
if [[ -f ${ROOT}/trafficgen/Makefile ]]; then
    make -s -C "${ROOT}/trafficgen" >&2
    log "traffic generator built: ${ROOT}/trafficgen/build/ovsperf-trafficgen"
fi
