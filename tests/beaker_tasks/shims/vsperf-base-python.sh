#!/bin/bash
# Test shim of the Python that creates VSperf's venv: '-m venv DIR' makes DIR/bin/python (the real
# python3) and a recording DIR/bin/pip.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
if [[ "$1 $2" == "-m venv" ]]; then
    mkdir -p "$3/bin"
    ln -sf "$(command -v python3)" "$3/bin/python"
    cp "$(dirname "$(readlink -f "$0")")/generic.sh" "$3/bin/pip"
fi
