#!/bin/bash
# build_trafficgen: build and install this repository's DPDK traffic generator (trafficgen/,
# ovsperf-trafficgen) on the TG, for the engine ovsperf (docs/engines.md), against the distribution's
# DPDK: `make -C trafficgen install` puts it in TRAFFICGEN_PREFIX/bin, where the DUT's ovsperf-lab
# starts it over SSH (--tg-binary's default /usr/local/bin/ovsperf-trafficgen).
#
# Phases: prerequisites (Setup: make, a C compiler, pkg-config and the development packages of DPDK
# and jansson, named as the host's family names them; anything missing → WARN + abort naming the
# package), build (Test: a failing build or no installed binary → FAIL).
#
# Parameters (environment): TRAFFICGEN_SRC (default: trafficgen/ of the fetched repository),
# TRAFFICGEN_PREFIX (default /usr/local).
set -o nounset -o pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/task.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/task.sh"

: "${TRAFFICGEN_SRC:=${TASK_REPO_ROOT}/trafficgen}"
: "${TRAFFICGEN_PREFIX:=/usr/local}"
BUILD_TRAFFICGEN_BINARY="ovsperf-trafficgen"

# build_trafficgen_package LIBRARY: print the development package that gives pkg-config LIBRARY on
# this host's family (libdpdk, jansson).
build_trafficgen_package() {
    case "${BUILD_TRAFFICGEN_FAMILY}/$1" in
        debian/libdpdk) echo libdpdk-dev ;;
        debian/jansson) echo libjansson-dev ;;
        redhat/libdpdk) echo dpdk-devel ;;
        redhat/jansson) echo jansson-devel ;;
        *) die "no package known for '$1'" ;;
    esac
}

build_trafficgen_prerequisites() {
    task_phase_start Setup prerequisites
    [[ "${TRAFFICGEN_PREFIX}" == /* && "${TRAFFICGEN_PREFIX}" != *[[:space:]]* ]] ||
        task_abort "TRAFFICGEN_PREFIX '${TRAFFICGEN_PREFIX}' is not an absolute path without blanks."
    [[ -f "${TRAFFICGEN_SRC}/Makefile" ]] ||
        task_abort "No traffic generator source in '${TRAFFICGEN_SRC}' (trafficgen/Makefile of the ovsperf repository)."
    local tool package library
    local -a missing=()
    for tool in make cc pkg-config; do
        task_have "${tool}" || missing+=("'${tool}'")
    done
    ((${#missing[@]} == 0)) ||
        task_abort "The build tools ${missing[*]} are missing on $(hostname -f): install make, gcc and pkgconf."
    for library in libdpdk jansson; do
        if ! pkg-config --exists "${library}"; then
            package="$(build_trafficgen_package "${library}")"
            missing+=("'${package}' (pkg-config cannot find ${library})")
        fi
    done
    ((${#missing[@]} == 0)) ||
        task_abort "The development package(s) ${missing[*]} are missing on $(hostname -f) (${BUILD_TRAFFICGEN_FAMILY} family):" \
            "install them, e.g. $([[ "${BUILD_TRAFFICGEN_FAMILY}" == debian ]] && echo 'apt-get install' || echo 'dnf install')" \
            "$(build_trafficgen_package libdpdk) $(build_trafficgen_package jansson)."
    task_log "  DPDK $(pkg-config --modversion libdpdk 2>/dev/null), jansson $(pkg-config --modversion jansson 2>/dev/null)"
    task_phase_end
}

build_trafficgen_build() {
    task_phase_start Test build
    local binary="${TRAFFICGEN_PREFIX}/bin/${BUILD_TRAFFICGEN_BINARY}"
    if task_run "Build and install ${BUILD_TRAFFICGEN_BINARY} into ${TRAFFICGEN_PREFIX}" \
        make -C "${TRAFFICGEN_SRC}" install "PREFIX=${TRAFFICGEN_PREFIX}"; then
        if [[ -x "${binary}" ]]; then
            task_log "  installed ${binary}"
        else
            task_fail "'make install' left no executable '${binary}'."
        fi
    fi
    task_phase_end || task_finish
}

task_init build_trafficgen
BUILD_TRAFFICGEN_FAMILY="$(task_os_family)"
build_trafficgen_prerequisites
build_trafficgen_build
task_finish
