# ccfuzz: `make fuzz` starts a campaign on all cores, `make test` runs every test.
# Both install the Debian packages that are missing first.

DEBIAN_PACKAGES := gcc gcc-11 gcc-12 clang clang-13 clang-14 csmith libcsmith-dev tcc pcc cvise creduce afl++ dpkg-dev fonts-dejavu-core libclang-rt-14-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
OUT ?= out
CORES ?= all
FUZZ_ARGS ?=
BENCH_ARGS ?=
BUILD ?= build
TCC_SRC := $(BUILD)/tcc-src
TRIPLET = $(shell gcc -print-multiarch)

.PHONY: deps deb-src release fuzz test lint bench clean instrumented-tcc

deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || printf '%s ' $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages: $$missing"; \
		$(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi

release: deps
	cargo build --release --bin ccfuzz

fuzz: release
	./target/release/ccfuzz fuzz --out $(OUT) --cores $(CORES) $(FUZZ_ARGS)

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

# `apt-get source` needs a deb-src entry; one is added for this release unless some exists.
deb-src: deps
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

instrumented-tcc: deps $(BUILD)/tcc-afl/tcc $(BUILD)/tcc-gcov/tcc $(BUILD)/tcc-plain/tcc

test: deps lint instrumented-tcc
	cargo build --bin ccfuzz
	cargo test --workspace

bench: release
	./target/release/ccfuzz bench $(BENCH_ARGS)

clean:
	cargo clean
	rm -rf $(BUILD)
