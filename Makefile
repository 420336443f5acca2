# Thin wrapper over Meson: the targets are what README tells people to type.
#   make demo   build and run Docket on an embedded default (see README)
#   make test   the whole test suite under ASan + UBSan, ending "N passed, N failed"
#               (the web console's browser tests included: tests/system/console.bats)
#   make check  the inner loop (CONTRIBUTING.md): commit style, format, core floors, every
#               unit test and the system tests in CHECK_BATS (those without long waits)
# make, make demo and make test build the web console first (scripts/build-console.sh:
# npm ci && npm run build in console/; docs/console.md)
#   make bench  the benchmarks (numbers go to bench/RESULTS.md by hand, with date and machine)
#   make fuzz   every fuzzer for FUZZ_SECONDS each (default 60)
#   make install   docketd, docket-node, docket, docket-sim, the man page, bash completion,
#               systemd units, logrotate, docs and examples, and /etc/docket/*.yaml (kept
#               when present) under PREFIX (default /usr/local; SYSCONFDIR /etc), into
#               DESTDIR when set: meson install (docs/operations.md)
#   make deb    the Debian packages docket, docketd and docket-node in ../ (dpkg-buildpackage;
#               debian/changelog is written from meson.build's version first)
#   make install-slurm-compat   sbatch, srun, squeue, scancel, scontrol, sinfo, sacct as links to the
#               docket CLI in SLURM_COMPAT_DIR (default PREFIX/bin), the installed one after
#               `make install`: only on request, so they never shadow a real Slurm (docs/slurm.md)
BUILD      ?= build
TESTBUILD  ?= build-test
FUZZ_SECONDS ?= 60
PREFIX     ?= /usr/local
SYSCONFDIR ?= /etc
DESTDIR    ?=
SLURM_COMPAT_DIR ?= $(PREFIX)/bin
# make check's system tests: the files that need no long waits (their times are in
# build-test/bats.log after a make test; CONTRIBUTING.md)
CHECK_BATS ?= $(addprefix tests/system/,cli.bats slurm.bats slurm_scripts.bats slurm_corpus.bats srun_step.bats sim.bats \
	sim_history.bats \
	secrets.bats metrics.bats usage.bats logs_runs.bats class_limits.bats groups.bats \
	seams_people.bats templates.bats slurm_site.bats live.bats \
	project_usage.bats)
# ... and on PostgreSQL (docketd --db, a throwaway cluster: scripts/pg-test.sh)
CHECK_PG_BATS ?= tests/system/cli.bats

.PHONY: all build demo demo-stop test check unit system fuzz bench clean deps test-deps install install-slurm-compat deb

all: build

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

build: deps
	@scripts/build-console.sh
	@if [ ! -f $(BUILD)/build.ninja ]; then meson setup $(BUILD) --buildtype=release -Dwerror=true -Dtests=false >/dev/null; fi
	@ninja -C $(BUILD) >/dev/null

demo: build
	@scripts/demo.sh

demo-stop:
	@scripts/demo.sh --stop

test: test-deps
	@scripts/run-tests.sh

check: test-deps
	@TEST_PARTS="format unit system" BATS_FILES="$(CHECK_BATS)" PG_BATS_FILES="$(CHECK_PG_BATS)" scripts/run-tests.sh

fuzz: test-deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/run-fuzz.sh

bench: build
	@scripts/run-bench.sh

deb:
	@scripts/install-deps.sh --package
	@scripts/build-console.sh
	@scripts/debian-changelog.sh
	dpkg-buildpackage -us -uc -b

install: build
	@meson configure $(BUILD) -Dprefix=$(PREFIX) -Dsysconfdir=$(SYSCONFDIR) >/dev/null
	@ninja -C $(BUILD) >/dev/null
	@meson install -C $(BUILD) --no-rebuild $(if $(DESTDIR),--destdir $(abspath $(DESTDIR)))

# The links point at the installed docket when `make install` put one in PREFIX/bin,
# else at the build's.
install-slurm-compat: build
	@target=$(PREFIX)/bin/docket; [ -x $(DESTDIR)$$target ] || target=$(abspath $(BUILD))/src/cli/docket; \
	mkdir -p $(DESTDIR)$(SLURM_COMPAT_DIR); \
	for c in sbatch srun squeue scancel scontrol sinfo sacct; do \
		if [ -e $(DESTDIR)$(SLURM_COMPAT_DIR)/$$c ] && [ ! -L $(DESTDIR)$(SLURM_COMPAT_DIR)/$$c ]; then \
			echo "$(SLURM_COMPAT_DIR)/$$c exists and is not ours: left alone"; continue; fi; \
		ln -sf $$target $(DESTDIR)$(SLURM_COMPAT_DIR)/$$c && echo "$(SLURM_COMPAT_DIR)/$$c -> $$target"; \
	done

clean:
	rm -rf $(BUILD) $(TESTBUILD) build-fuzz
