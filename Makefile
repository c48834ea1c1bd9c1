# SPDX-License-Identifier: MIT
# Thin wrapper around CMake/CTest. The two set-up commands: `make demo`, `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

# `make build` needs a C compiler and CMake only (it installs nothing, like
# `cmake -S . -B build && cmake --build build`). `make test` and `make demo`
# first install the Debian packages their tests and benchmarks use when run as
# root (scripts/deps.sh); as a user, tests whose tools are missing skip (77).
.PHONY: all build test test-deps test-san test-sim soak demo bench-core bench-fixed results install install-apache clean deps

all: build

deps:
	scripts/deps.sh build

test-deps:
	scripts/deps.sh test --if-root

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# mod_cache_tx is built only when apxs (apache2-dev) was there at configure
# time: a build configured before it was installed is configured again.
define module_build
	@if [ ! -f $(BUILD)/cache/apache/mod_cache_tx.so ] && command -v apxs >/dev/null; then \
	  cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null && cmake --build $(BUILD) -j $(JOBS); fi
endef

test: test-deps
	$(MAKE) build
	$(module_build)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# The sanitizer lane (CI runs it after `make test`): ASan + UBSan build in
# build-san, the suite without the valgrind/apache/model/timing tests.
SAN_BUILD ?= build-san
test-san: | deps
	JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" scripts/test-san.sh $(SAN_BUILD)

# The simulated-RTM lane: every hardware path on any CPU (scripts/test-sim.sh).
test-sim: | deps
	JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" scripts/test-sim.sh build-sim

# Every stress test for SECONDS each (default 300), fresh seeds, printed for a
# replay (scripts/soak.sh; SOAK_SANITIZE=1 for the sanitizer build).
SECONDS ?= 300
soak: | deps
	JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" scripts/soak.sh $(SECONDS) $(CTEST_FLAGS)

# The Apache experiment at a small scale (cache/bench/apache/run.sh --quick, a few
# minutes): its packages first (apache2-dev before the build, for the module).
demo:
	scripts/deps.sh demo
	cache/bench/apache/run.sh --install-deps --deps-only
	$(MAKE) build
	$(module_build)
	cache/bench/apache/run.sh --quick --build $(BUILD)

# The core benchmark (the earlier demo): bench/run-core.sh.
bench-core: build
	scripts/deps.sh demo
	bench/run-core.sh $(BUILD)

# Each method's fixed cost (a critical section with no conflicts: time, and
# instructions per operation by callgrind): bench/run-fixed.sh.
bench-fixed: build
	scripts/deps.sh demo
	bench/run-fixed.sh $(BUILD)

# Every figure and table of docs/results.md, regenerated into docs/results/
# (scripts/results.sh: the Apache experiment at paper size, the lock figures,
# the contention-management benchmarks; about 30 minutes).
results:
	scripts/deps.sh results
	cache/bench/apache/run.sh --install-deps --deps-only
	$(MAKE) build
	$(module_build)
	scripts/results.sh $(BUILD)

PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Debian's Apache layout (as root): `make install`, then mod_cache_tx.so into
# `apxs -q LIBEXECDIR` and cache_tx.load + cache_tx.conf into
# `apxs -q SYSCONFDIR`/mods-available (CMake install component apache2), so
# that `a2enmod cache_tx` works. DESTDIR=... stages both.
install-apache: install
	@test -f $(BUILD)/cache/apache/mod_cache_tx.so || { echo "no mod_cache_tx.so: install apache2-dev and build again" >&2; exit 1; }
	cmake --install $(BUILD) --prefix $(PREFIX) --component apache2

clean:
	rm -rf $(BUILD) $(SAN_BUILD) build-sim build-soak build-soak-san
