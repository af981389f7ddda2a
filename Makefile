# ccfuzz: `make fuzz` starts a campaign on all cores, `make test` runs every test.
# Both install the Debian packages that are missing first.

DEBIAN_PACKAGES := gcc gcc-11 gcc-12 clang clang-13 clang-14 csmith libcsmith-dev tcc pcc cvise creduce afl++
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
OUT ?= out
CORES ?= all
FUZZ_ARGS ?=
BENCH_ARGS ?=

.PHONY: deps release fuzz test lint bench clean

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

test: deps lint
	cargo build --bin ccfuzz
	cargo test --workspace

bench: release
	./target/release/ccfuzz bench $(BENCH_ARGS)

clean:
	cargo clean
