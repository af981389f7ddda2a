# ccfuzz: `make fuzz` starts a campaign on all cores, `make test` runs every test.
# Both install what is missing first: Debian packages, and a Debian unstable root with GCC
# trunk and today's gcc and clang releases, run through wrappers in $(BUILD)/bin.

DEBIAN_PACKAGES := gcc gcc-11 gcc-12 clang clang-13 clang-14 clang-19 csmith libcsmith-dev tcc pcc cvise creduce afl++ \
	dpkg-dev fonts-dejavu-core libclang-rt-14-dev libclang-rt-19-dev mmdebstrap bubblewrap \
	libpcc-dev byacc flex
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
OUT ?= out
CORES ?= all
FUZZ_ARGS ?=
BENCH_ARGS ?=
BUILD ?= build
TCC_SRC := $(BUILD)/tcc-src
TRIPLET = $(shell gcc -print-multiarch)

.PHONY: deps debian-packages unstable-root unstable-compilers refresh-unstable riscv-compilers deb-src release fuzz test lint bench clean instrumented-tcc

deps: debian-packages unstable-compilers

debian-packages:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || printf '%s ' $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages: $$missing"; \
		$(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi

# Debian unstable (sid) carries GCC trunk (gcc-snapshot), today's gcc and clang releases and the
# older ones the version matrix asks for; bookworm stops at gcc-12.2 and clang-19. They go into a
# root of their own under the build folder, built under a temporary name and moved into place
# whole: once it is there nothing fetches it again (`make refresh-unstable` builds a new one and
# swaps it in). sid's Release file is often past its Valid-Until date, hence the apt option.
# `versions` in the root lists the exact package versions installed.
UNSTABLE_ROOT := $(abspath $(BUILD))/unstable-root
UNSTABLE_MIRROR ?= http://deb.debian.org/debian
UNSTABLE_PACKAGES := libc6-dev gcc-snapshot gcc-16 gcc-15 gcc-14 gcc-13 gcc-12 \
	clang-23 libclang-rt-23-dev clang-22 libclang-rt-22-dev clang-21
# mmdebstrap runs as root (with sudo otherwise): the root's files are root's.
# $(call build_sid_root,ROOT,PACKAGES) builds ROOT.partial.
build_sid_root = $(SUDO) rm -rf $(1).partial && mkdir -p $(BUILD) && \
	$(SUDO) mmdebstrap --quiet --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
		--include=$(subst $(space),$(comma),$(strip $(2))) \
		--customize-hook='mkdir -p "$$1/usr/include/csmith"' \
		--customize-hook='dpkg-query --admindir="$$1/var/lib/dpkg" -W -f="\$${Package}\t\$${Version}\n" \
			$(2) libc6 > "$$1/versions"' \
		sid $(1).partial $(UNSTABLE_MIRROR)
BUILD_UNSTABLE_ROOT = $(call build_sid_root,$(UNSTABLE_ROOT),$(UNSTABLE_PACKAGES))
space := $(subst ,, )
comma := ,

$(UNSTABLE_ROOT)/versions: | debian-packages
	$(BUILD_UNSTABLE_ROOT)
	mv $(UNSTABLE_ROOT).partial $(UNSTABLE_ROOT)

unstable-root: $(UNSTABLE_ROOT)/versions

refresh-unstable: | debian-packages
	$(BUILD_UNSTABLE_ROOT)
	$(SUDO) rm -rf $(UNSTABLE_ROOT).old
	if [ -d $(UNSTABLE_ROOT) ]; then mv $(UNSTABLE_ROOT) $(UNSTABLE_ROOT).old; fi
	mv $(UNSTABLE_ROOT).partial $(UNSTABLE_ROOT) && $(SUDO) rm -rf $(UNSTABLE_ROOT).old

# One wrapper per compiler of the root, in $(BUILD)/bin, for configurations to name. GCC trunk is
# gcc-snapshot; sid's gcc-12 (12.5) is gcc-12.5, apart from the host's gcc-12 (12.2).
UNSTABLE_COMPILERS := gcc-trunk=/usr/lib/gcc-snapshot/bin/gcc gcc-16=/usr/bin/gcc-16 \
	gcc-15=/usr/bin/gcc-15 gcc-14=/usr/bin/gcc-14 gcc-13=/usr/bin/gcc-13 gcc-12.5=/usr/bin/gcc-12 \
	clang-23=/usr/bin/clang-23 clang-22=/usr/bin/clang-22 clang-21=/usr/bin/clang-21
UNSTABLE_WRAPPERS := $(foreach c,$(UNSTABLE_COMPILERS),$(BUILD)/bin/$(firstword $(subst =, ,$(c))))

$(UNSTABLE_WRAPPERS): $(BUILD)/bin/%: $(UNSTABLE_ROOT)/versions scripts/unstable-root-exec.sh Makefile
	mkdir -p $(@D)
	printf '%s\n' '#!/bin/sh' \
		'# $* of the Debian unstable root, made by `make unstable-compilers`.' \
		'exec "$(CURDIR)/scripts/unstable-root-exec.sh" "$(UNSTABLE_ROOT)" $(patsubst $*=%,%,$(filter $*=%,$(UNSTABLE_COMPILERS))) "$$@"' \
		> $@.partial
	chmod +x $@.partial
	$@.partial --version > /dev/null
	mv $@.partial $@

unstable-compilers: $(UNSTABLE_WRAPPERS)

# RISC-V, on request (`make riscv-compilers`; not part of `make deps`: 1 GB that only a RISC-V
# campaign needs): gcc-16's riscv64 cross compiler and qemu-user's static emulators from Debian
# unstable, in a root of their own built the same way. Its wrapper riscv64-gcc-16 links
# statically and leaves a launcher that runs the program under qemu (scripts/riscv64-gcc.sh).
RISCV_ROOT := $(abspath $(BUILD))/riscv-root
RISCV_PACKAGES := gcc-16-riscv64-linux-gnu libc6-dev-riscv64-cross qemu-user

$(RISCV_ROOT)/versions: | debian-packages
	$(call build_sid_root,$(RISCV_ROOT),$(RISCV_PACKAGES))
	mv $(RISCV_ROOT).partial $(RISCV_ROOT)

$(BUILD)/bin/riscv64-gcc-16: $(RISCV_ROOT)/versions scripts/riscv64-gcc.sh scripts/unstable-root-exec.sh Makefile
	mkdir -p $(@D)
	printf '%s\n' '#!/bin/sh' \
		'# gcc-16 for riscv64 of the RISC-V root, its programs run under qemu: made by `make riscv-compilers`.' \
		'exec "$(CURDIR)/scripts/riscv64-gcc.sh" "$(RISCV_ROOT)" /usr/bin/riscv64-linux-gnu-gcc-16 "$$@"' \
		> $@.partial
	chmod +x $@.partial
	$@.partial --version > /dev/null
	mv $@.partial $@

riscv-compilers: $(BUILD)/bin/riscv64-gcc-16

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

# pcc's upstream snapshot that Debian packages, for the ground-truth test of a pcc history
# (only the upstream tarball: pcc's own sources are all that test builds).
PCC_SRC := $(BUILD)/pcc-src
$(PCC_SRC)/.unpacked:
	$(MAKE) deb-src
	rm -rf $(PCC_SRC) && mkdir -p $(PCC_SRC)
	cd $(PCC_SRC) && apt-get source -q --tar-only pcc && tar --no-same-owner -xzf pcc_*.orig.tar.gz
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

test: deps lint instrumented-tcc riscv-compilers $(PCC_SRC)/.unpacked
	cargo test --workspace -- --include-ignored

bench: release
	./target/release/ccfuzz bench $(BENCH_ARGS)

clean:
	cargo clean
	$(SUDO) rm -rf $(BUILD)
