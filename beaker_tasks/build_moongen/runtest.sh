#!/bin/bash
# build_moongen: fetch lua-trafficgen and MoonGen at pinned commits, build MoonGen, and write the
# DPDK configuration MoonGen reads (its CPU cores and the test NICs' PCI addresses).
#
# VSperf runs `cd <base>; ./MoonGen/build/MoonGen trafficgen.lua` over SSH (reference/vsperf.md
# §3.4), so <base> is the lua-trafficgen checkout with MoonGen in its MoonGen/ subdirectory, and
# MoonGen finds dpdk-conf.lua in that working directory.
#
# Parameters (environment): TRAFFICGEN_COMMIT and MOONGEN_COMMIT (required: every fetch is pinned),
# TRAFFICGEN_REPO, MOONGEN_REPO, MOONGEN_BASE_DIR (default /root/lua-trafficgen), INVENTORY or
# TEST_NICS + MOONGEN_CPUS, BUILD_MOONGEN_HOST (inventory key, default `hostname -f`).
# A repository that cannot be fetched or a commit that does not exist is a lab problem (WARN, abort);
# a build failure is a FAIL.
set -o nounset -o pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/task.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/task.sh"

: "${TRAFFICGEN_COMMIT:=}"
: "${MOONGEN_COMMIT:=}"
: "${TRAFFICGEN_REPO:=https://github.com/atheurer/lua-trafficgen}"
: "${MOONGEN_REPO:=https://github.com/emmericp/MoonGen}"
: "${MOONGEN_BASE_DIR:=/root/lua-trafficgen}"
: "${INVENTORY:=}"
: "${TEST_NICS:=}"
: "${MOONGEN_CPUS:=}"

build_moongen_params() {
    task_find_inventory
    task_require_params TRAFFICGEN_COMMIT MOONGEN_COMMIT
    local commit
    for commit in "${TRAFFICGEN_COMMIT}" "${MOONGEN_COMMIT}"; do
        [[ "${commit}" =~ ^[0-9a-f]{7,40}$ ]] ||
            task_abort "Commit '${commit}' is not a git commit id (7-40 hex digits); pin a commit, not a branch."
    done
    if [[ -n "${INVENTORY}" ]]; then
        : "${BUILD_MOONGEN_HOST:=$(hostname -f)}"
        task_load_inventory "${BUILD_MOONGEN_HOST}" ||
            task_abort "Cannot read the inventory entry of '${BUILD_MOONGEN_HOST}' from '${INVENTORY}'."
        : "${TEST_NICS:=${INV_TEST_NICS}}"
        : "${MOONGEN_CPUS:=${INV_MOONGEN_CPUS}}"
    fi
    task_require_params TEST_NICS MOONGEN_CPUS
    [[ "${MOONGEN_CPUS}" =~ ^[0-9]+(,[0-9]+)*$ ]] ||
        task_abort "MOONGEN_CPUS '${MOONGEN_CPUS}' is not a comma-separated list of CPU ids."
}

# build_moongen_checkout REPO DIR COMMIT: clone or update DIR and check out COMMIT (detached).
build_moongen_checkout() {
    local repo="$1" dir="$2" commit="$3" head
    if [[ -d "${dir}/.git" ]]; then
        task_run "Fetch ${repo} into ${dir}" timeout "${TASK_NET_TIMEOUT_S}" git -C "${dir}" fetch --tags origin ||
            task_abort "Cannot fetch '${repo}' (repository down?)."
    else
        task_run "Clone ${repo} into ${dir}" timeout "${TASK_NET_TIMEOUT_S}" git clone "${repo}" "${dir}" ||
            task_abort "Cannot clone '${repo}' (repository down?)."
    fi
    task_run "Check out ${commit} in ${dir}" git -C "${dir}" checkout --detach "${commit}" ||
        task_abort "Commit ${commit} does not exist in '${repo}'."
    head="$(git -C "${dir}" rev-parse HEAD)"
    [[ "${head}" == "${commit}"* ]] || task_abort "'${dir}' is at ${head}, not at the pinned ${commit}."
    task_log "  ${dir} at ${head}"
}

build_moongen_fetch() {
    task_phase_start Setup fetch
    mkdir -p "$(dirname "${MOONGEN_BASE_DIR}")" || task_abort "Cannot create the parent of '${MOONGEN_BASE_DIR}'."
    build_moongen_checkout "${TRAFFICGEN_REPO}" "${MOONGEN_BASE_DIR}" "${TRAFFICGEN_COMMIT}"
    # VSperf runs trafficgen.lua; upstream removed it in cc4f4e5 (2020-08-28): a later commit is
    # a wrong pin, found here rather than hours later when VSperf starts MoonGen.
    [[ -f "${MOONGEN_BASE_DIR}/trafficgen.lua" ]] ||
        task_abort "lua-trafficgen commit ${TRAFFICGEN_COMMIT} has no 'trafficgen.lua' (VSperf's MoonGen script," \
            "removed upstream in cc4f4e5); pin 61caf959e3ad38f490d4fa75a39f6115492680a1, the last commit with it," \
            "or check that '${TRAFFICGEN_REPO}' is the lua-trafficgen repository."
    build_moongen_checkout "${MOONGEN_REPO}" "${MOONGEN_BASE_DIR}/MoonGen" "${MOONGEN_COMMIT}"
    task_run "Fetch MoonGen's submodules (libmoon, DPDK)" \
        timeout "${TASK_NET_TIMEOUT_S}" git -C "${MOONGEN_BASE_DIR}/MoonGen" submodule update --init --recursive ||
        task_abort "Cannot fetch MoonGen's submodules (repository down?)."
    task_phase_end
}

build_moongen_compile() {
    (cd "${MOONGEN_BASE_DIR}/MoonGen" && ./build.sh)
}

build_moongen_build() {
    task_phase_start Test build
    local stamp="${TASK_STATE_DIR}/build-${TRAFFICGEN_COMMIT}-${MOONGEN_COMMIT}.done"
    local binary="${MOONGEN_BASE_DIR}/MoonGen/build/MoonGen"
    if [[ -f "${stamp}" && -x "${binary}" ]]; then
        task_log "  MoonGen already built at these commits"
    else
        task_run "Build MoonGen" build_moongen_compile
        if [[ -x "${binary}" ]]; then
            date '+%Y-%m-%dT%H:%M:%S%z' >"${stamp}"
        else
            task_fail "The build left no executable '${binary}'."
        fi
    fi
    task_phase_end || task_finish
}

build_moongen_write_config() {
    local file="$1" cores pcis="" pci
    cores="{${MOONGEN_CPUS}}"
    for pci in ${TEST_NICS}; do
        pcis+="${pcis:+, }\"${pci}\""
    done
    {
        printf -- '-- DPDK configuration of MoonGen, written by the ovsperf build_moongen task.\n'
        printf -- '-- Cores and PCI devices come from the host inventory; --file-prefix keeps DPDK apart.\n'
        printf 'DPDKConfig {\n'
        printf '\tcores = %s,\n' "${cores}"
        printf '\tpciWhitelist = {%s},\n' "${pcis}"
        printf '\tcli = {"--file-prefix", "moongen"},\n'
        printf '}\n'
    } >"${file}.tmp" && mv "${file}.tmp" "${file}"
}

build_moongen_configure() {
    task_phase_start Setup configure
    task_run "Write ${MOONGEN_BASE_DIR}/dpdk-conf.lua" build_moongen_write_config "${MOONGEN_BASE_DIR}/dpdk-conf.lua"
    task_run "Write ${MOONGEN_BASE_DIR}/MoonGen/dpdk-conf.lua" \
        build_moongen_write_config "${MOONGEN_BASE_DIR}/MoonGen/dpdk-conf.lua"
    task_upload "${MOONGEN_BASE_DIR}/dpdk-conf.lua"
    task_phase_end
}

task_init build_moongen
build_moongen_params
build_moongen_fetch
build_moongen_build
build_moongen_configure
task_finish
