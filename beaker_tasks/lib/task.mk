# Shared Makefile part of the ovsperf Beaker tasks (beaker_tasks/<task>/Makefile includes it).
#
# A task Makefile sets TEST, TESTVERSION, TASK_DESCRIPTION, TASK_TYPE, TASK_TESTTIME,
# TASK_DESTRUCTIVE (Yes|No), TASK_REQUIRES (packages) and optionally TASK_FILES, then includes this.
# For RHTS/beah packaging (make testinfo.desc, make package, make bkradd) and for harnesses that run
# `make run`; restraint itself reads the task's ./metadata.

# rhts-make.include exists only where RHTS or restraint-rhts is installed; without it, define the
# variables it would define (as the cki tasks do), so `make run` works everywhere.
-include /usr/share/rhts/lib/rhts-make.include
TEST_DIR ?= /mnt/tests$(TEST)
INSTALL_DIR ?= $(DEST)$(TEST_DIR)
METADATA ?= testinfo.desc

FILES = $(METADATA) runtest.sh Makefile metadata README.md ../lib/task.sh ../lib/task.mk $(TASK_FILES)
BUILT_FILES =

.PHONY: all run build clean

all: build

run: $(FILES) build
	./runtest.sh

build: $(BUILT_FILES)
	test -x runtest.sh || chmod a+x runtest.sh

clean:
	rm -f *~ $(BUILT_FILES) testinfo.desc

$(METADATA): Makefile ../lib/task.mk
	@echo "Owner:           ovsperf maintainers <ovsperf@example.org>" > $(METADATA)
	@echo "Name:            $(TEST)" >> $(METADATA)
	@echo "TestVersion:     $(TESTVERSION)" >> $(METADATA)
	@echo "Path:            $(TEST_DIR)" >> $(METADATA)
	@echo "Description:     $(TASK_DESCRIPTION)" >> $(METADATA)
	@echo "Type:            $(TASK_TYPE)" >> $(METADATA)
	@echo "TestTime:        $(TASK_TESTTIME)" >> $(METADATA)
	@echo "RunFor:          openvswitch dpdk" >> $(METADATA)
	@echo "Priority:        Normal" >> $(METADATA)
	@echo "License:         Apache-2.0" >> $(METADATA)
	@echo "Destructive:     $(TASK_DESTRUCTIVE)" >> $(METADATA)
	@for package in $(TASK_REQUIRES); do echo "Requires:        $$package" >> $(METADATA); done
	@if command -v rhts-lint >/dev/null 2>&1; then rhts-lint $(METADATA); fi
