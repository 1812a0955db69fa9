#!/bin/bash
# Lab shim of restraint's rstrnt-abort -t recipe: the executor aborts the recipe.
set -o nounset -o pipefail
printf 'abort\t%s\n' "${2:-recipe}" >>"${NIGHTLY_SPOOL:?}/events"
