# ovsperf: the two commands of the README are `make run` and `make test` (both set up first).
SHELL := /bin/bash
ROOT := $(CURDIR)
VENV ?= $(ROOT)/.venv
JJB_VENV ?= $(ROOT)/.venv-jjb
PY := $(VENV)/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup run test check lint typecheck compat shellcheck pytest bench constraints clean vlab vlab-test

setup:
	$(SUDO) VENV=$(VENV) JJB_VENV=$(JJB_VENV) $(ROOT)/scripts/setup-debian.sh

run: setup
	$(SUDO) VENV=$(VENV) $(ROOT)/scripts/main-job.sh

test: setup check

check: lint typecheck compat shellcheck pytest

lint:
	$(VENV)/bin/ruff check .

typecheck:
	$(VENV)/bin/mypy

# Code that runs on the lab hosts (Python >= 3.9; pyproject.toml per-file-target-version lists the same).
LAB_HOST_CODE := vsperf_configs ovsperf_catalog ovsperf_common beaker_tasks/perf_synchronization/perfsync.py

# Code that runs inside VSperf's own Python or its guests (RHEL 8's python3 is 3.6).
VSPERF_PLUGIN_CODE := beaker_tasks/vsperf_test/collectors beaker_tasks/vsperf_test/pods beaker_tasks/vsperf_test/guest-dpdk

compat:
	$(VENV)/bin/vermin --no-tips --violations -t=3.9- $(LAB_HOST_CODE)
	$(VENV)/bin/vermin --no-tips --violations -t=3.6- $(VSPERF_PLUGIN_CODE)

shellcheck:
	git ls-files '*.sh' 'beaker_tasks/*/runtest.sh' '.ci/run' | sort -u | xargs -r shellcheck -x

pytest:
	$(SUDO) $(VENV)/bin/pytest

# The virtual lab (docs/vlab.md): two Debian VMs under QEMU. Not part of `make test`; its packages
# (packaging/vlab-packages.txt) are installed here only. VLAB_ARGS: more options, e.g. --nice 19.
VLAB_ARGS ?=
vlab: setup
	$(SUDO) $(ROOT)/scripts/install-debian-packages.sh $(ROOT)/packaging/vlab-packages.txt
	$(SUDO) $(VENV)/bin/ovsperf-vlab up $(VLAB_ARGS)

# The Beaker plan of OVS_DPDK1q on the two VMs with the ovsperf engine, a short MLRsearch (TCG is slow).
VLAB_LAB_ARGS ?= --frame-sizes 64,1518 --min-load 500 --final-trial-duration 1 --duration-sum 3 --search-duration-max 900 --latency-loads 0,50,90 --latency-time 1
# Then PVP and PVVP through real QEMU guests (TCG) on this machine: the guest image is built once
# (kept at VLAB_GUEST_IMAGE), `ovsperf-lab run` runs each with a short search (docs/lab.md "Guests").
VLAB_GUEST_IMAGE ?= /var/lib/ovsperf-vlab/guest/pvp-guest.qcow2
vlab-test: setup
	$(SUDO) $(ROOT)/scripts/install-debian-packages.sh $(ROOT)/packaging/vlab-packages.txt
	$(SUDO) $(VENV)/bin/ovsperf-vlab selftest $(VLAB_ARGS)
	$(SUDO) $(VENV)/bin/ovsperf-vlab plan --config OVS_DPDK1q --engine ovsperf --lab-args "$(VLAB_LAB_ARGS)" $(VLAB_ARGS)
	$(SUDO) $(VENV)/bin/ovsperf-vlab guest-test $(VLAB_GUEST_IMAGE) --accel tcg

bench:
	for b in benchmarks/bench_*.py; do $(SUDO) $(PY) "$$b" || exit $$?; done

# Regenerate packaging/constraints.txt (the versions `make setup` installs) with uv, from a throwaway
# venv. Existing pins are kept unless UPGRADE=1 (all) or UPGRADE_PACKAGE=name (one); then follow
# CONTRIBUTING.md "Bumping the pinned versions" (setup, test, the benchmarks the changed pins touch).
UV_VERSION := 0.13.9
constraints:
	rm -rf $(ROOT)/out/uv-venv && python3 -m venv $(ROOT)/out/uv-venv
	$(ROOT)/out/uv-venv/bin/pip install -q uv==$(UV_VERSION)
	cd $(ROOT) && out/uv-venv/bin/uv pip compile -q pyproject.toml --extra all --extra test --extra jenkins \
		--python-version 3.11 --custom-compile-command 'make constraints' \
		$(if $(filter 1,$(UPGRADE)),--upgrade) $(if $(UPGRADE_PACKAGE),--upgrade-package $(UPGRADE_PACKAGE)) \
		-o packaging/constraints.txt
	rm -rf $(ROOT)/out/uv-venv

clean:
	rm -rf $(ROOT)/out $(ROOT)/.pytest_cache $(ROOT)/.mypy_cache
