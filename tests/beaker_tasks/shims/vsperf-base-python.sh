#!/bin/bash
# Test shim of the Python that creates VSperf's venv: it reports itself as Python SHIM_PYTHON_VERSION
# (default 3.9, RHEL 9's) to a version query; '-m venv DIR' makes DIR/bin/python (the real python3,
# reporting SHIM_VENV_PYTHON_VERSION, default the same) and a recording DIR/bin/pip.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
if [[ "$1" == -c && "$2" == *sys.version_info* ]]; then
    echo "${SHIM_PYTHON_VERSION:-3.9}"
elif [[ "$1 $2" == "-m venv" ]]; then
    mkdir -p "$3/bin"
    cat >"$3/bin/python" <<PY
#!/bin/bash
if [[ "\$1" == -c && "\$2" == *sys.version_info* ]]; then
    echo "\${SHIM_VENV_PYTHON_VERSION:-${SHIM_PYTHON_VERSION:-3.9}}"
    exit 0
fi
exec "$(command -v python3)" "\$@"
PY
    chmod +x "$3/bin/python"
    cp "$(dirname "$(readlink -f "$0")")/generic.sh" "$3/bin/pip"
fi
