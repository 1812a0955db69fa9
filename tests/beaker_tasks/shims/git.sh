#!/bin/bash
# Test shim of git: clone creates a checkout with the files the tasks expect (trafficgen.lua, MoonGen's
# build.sh, VSperf's vsperf), checkout records the commit, rev-parse prints it.
# SHIM_GIT_FAIL=clone makes clones fail; SHIM_GIT_BAD_COMMIT names a commit that does not exist.
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
            *lua-trafficgen*) echo "-- trafficgen" >"${dest}/trafficgen.lua" ;;
            *MoonGen*) cp "$(dirname "$(readlink -f "$0")")/moongen-build.sh" "${dest}/build.sh" ;;
            *vswitchperf*)
                cp "${FAKE_VSPERF:?}" "${dest}/vsperf"
                echo "netaddr" >"${dest}/requirements.txt"
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
        ;;
    rev-parse) cat "${dir}/.git/SHIM_HEAD" ;;
esac
exit 0
