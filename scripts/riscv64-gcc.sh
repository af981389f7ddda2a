#!/bin/bash
# Compiles C for 64-bit RISC-V with the cross gcc of the RISC-V root that `make riscv-compilers`
# builds, and makes what it links run on this x86-64 host:
# `riscv64-gcc.sh ROOT GCC [ARGUMENT...]`, GCC being the cross compiler's path inside the root.
#
# The program is linked statically (the host has no riscv64 libraries) into OUT.riscv64, and OUT
# becomes a launcher that runs it under the root's qemu-riscv64, a static binary, with every
# extension qemu emulates (`-cpu max`: the vector extension of -march=rv64gcv among them) and the
# vector length the -march names (`_zvl256b`: 256 bits; 128 without one), which code built with
# -mrvv-vector-bits=zvl takes as the exact length. A configuration, triage and reproduction
# scripts then run OUT as any other binary; the two files stay side by side. Compiles that link
# nothing (-c, -S, -E, --help=…) pass through unchanged.
set -euo pipefail

root=$(realpath -e -- "$1")
gcc=$2
shift 2
here=$(dirname -- "$(realpath -e -- "${BASH_SOURCE[0]}")")

out=a.out
vector_bits=128
links=1
arguments=()
expect_output=0
for argument in "$@"; do
    if [ "$expect_output" = 1 ]; then
        out=$argument
        expect_output=0
        continue
    fi
    case "$argument" in
    -o) expect_output=1 && continue ;;
    -o?*) out=${argument:2} && continue ;;
    -march=*)
        for zvl in $(grep -o 'zvl[0-9]*b' <<<"$argument"); do
            bits=${zvl//[!0-9]/}
            [ "$bits" -le "$vector_bits" ] || vector_bits=$bits
        done
        ;;
    -c | -S | -E | -M | -MM | -fsyntax-only | --version | -v | --help* | -dumpversion | -dumpmachine | -dumpfullversion | -print-* | -###)
        links=0
        ;;
    esac
    arguments+=("$argument")
done

if [ "$links" = 0 ]; then
    exec "$here/unstable-root-exec.sh" "$root" "$gcc" "$@"
fi

"$here/unstable-root-exec.sh" "$root" "$gcc" -static "${arguments[@]}" -o "$out.riscv64"
quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
# The launcher names its program's checksum, not its file name: a campaign runs binaries of the
# same bytes once, so launchers are alike exactly when their programs are.
checksum=$(sha256sum -- "$out.riscv64")
printf '#!/bin/sh\n# $0.riscv64 (sha256 %s) under qemu-user, made by riscv64-gcc.sh.\nexec %s -cpu max,vlen=%s "$0.riscv64" "$@"\n' \
    "${checksum%% *}" "$(quote "$root/usr/bin/qemu-riscv64")" "$vector_bits" > "$out"
chmod +x "$out"
