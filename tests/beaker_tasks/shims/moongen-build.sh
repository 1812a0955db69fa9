#!/bin/bash
# Fake MoonGen build.sh (copied by the git shim): SHIM_BUILD_FAIL=1 fails like a broken build.
if [[ -n "${SHIM_BUILD_FAIL:-}" ]]; then
    echo "CMake Error: could not find libnuma" >&2
    exit 2
fi
# The fake MoonGen binary fails as the real one does (libmoon's loadfile) when its script is missing.
mkdir -p build && cat >build/MoonGen <<'SH' && chmod +x build/MoonGen
#!/bin/sh
[ -f "$1" ] || { echo "luajit: cannot open $1" >&2; exit 1; }
echo "[INFO]  fake MoonGen ran $1"
SH
