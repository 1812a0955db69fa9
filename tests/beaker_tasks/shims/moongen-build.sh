#!/bin/bash
# Fake MoonGen build.sh (copied by the git shim): SHIM_BUILD_FAIL=1 fails like a broken build.
if [[ -n "${SHIM_BUILD_FAIL:-}" ]]; then
    echo "CMake Error: could not find libnuma" >&2
    exit 2
fi
mkdir -p build && printf '#!/bin/sh\n' >build/MoonGen && chmod +x build/MoonGen
