#!/bin/bash
# Test shim of git: clone creates a checkout with the files the tasks expect (MoonGen's build.sh,
# VSperf's vsperf), checkout records the commit, rev-parse prints it.
# lua-trafficgen is modelled as upstream is: 'trafficgen.lua' (VSperf's MoonGen script) exists only at
# the commits in SHIM_TRAFFICGEN_LUA_COMMITS (upstream removed it in cc4f4e5 on 2020-08-28, so a later
# pin such as master's 84ee89ae has none and build_moongen must refuse it).
# SHIM_GIT_FAIL=clone makes clones fail; SHIM_GIT_BAD_COMMIT names a commit that does not exist.
SHIM_TRAFFICGEN_LUA_COMMITS="61caf959e3ad38f490d4fa75a39f6115492680a1"
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
dir=.
if [[ "$1" == -C ]]; then
    dir="$2"
    shift 2
fi
case "$1" in
    clone)
        [[ "${SHIM_GIT_FAIL:-}" == clone ]] && {
            echo "fatal: unable to access '$2': Could not resolve host" >&2
            exit 128
        }
        url="$2"
        dest="$3"
        mkdir -p "${dest}/.git"
        case "${url}" in
            *lua-trafficgen*) echo lua-trafficgen >"${dest}/.git/SHIM_REPO" ;;
            *MoonGen*) cp "$(dirname "$(readlink -f "$0")")/moongen-build.sh" "${dest}/build.sh" ;;
            *vswitchperf*)
                cp "${FAKE_VSPERF:?}" "${dest}/vsperf"
                printf 'netaddr==0.7.18\njinja2==2.7.3\npycrypto\nkubernetes\n' >"${dest}/requirements.txt"
                ;;
        esac
        ;;
    checkout)
        commit="${!#}"
        [[ "${commit}" == "${SHIM_GIT_BAD_COMMIT:-none}" ]] && {
            echo "error: pathspec '${commit}' did not match" >&2
            exit 1
        }
        echo "${commit}" >"${dir}/.git/SHIM_HEAD"
        if [[ "$(cat "${dir}/.git/SHIM_REPO" 2>/dev/null)" == lua-trafficgen ]]; then
            rm -f "${dir}/trafficgen.lua"
            for known in ${SHIM_TRAFFICGEN_LUA_COMMITS}; do
                [[ "${known}" != "${commit}"* ]] || echo "-- trafficgen at ${known}" >"${dir}/trafficgen.lua"
            done
        fi
        ;;
    rev-parse) cat "${dir}/.git/SHIM_HEAD" ;;
esac
exit 0
