#!/bin/bash
# How many of the compilers' own execution tests (`make seeds`: build/seeds/gcc-torture and
# build/seeds/tcc-tests2) the program model parses, and why the others fail, by cause.
#
#   tests/studies/gnu_c_parsing.sh [SEEDS_DIR [PER_FILE_TSV]]
#
# SEEDS_DIR defaults to build/seeds; PER_FILE_TSV (optional) receives one line per file: set,
# file, parsed or failed, cause, lang-c's message and the line it stopped on. Each file is
# preprocessed and parsed the way `ccfuzz` makes a seed of it (tests/studies/gnu_c_parsing.rs).
set -eu
cd "$(dirname "$0")/../.."
seeds=$(realpath "${1:-build/seeds}")
out=${2:+$(realpath -m "$2")}
cargo run -q -p ccfuzz-tests --example gnu_c_parsing -- "$seeds" ${out:+"$out"}
