#!/bin/bash
# Runs a program of the Debian unstable root that `make unstable-root` builds on this host,
# through bubblewrap: `unstable-root-exec.sh ROOT PROGRAM [ARGUMENT...]`, PROGRAM being a path
# inside the root (/usr/bin/gcc-16). `make unstable-compilers` writes one wrapper per compiler.
#
# The sandbox has the root's /usr and /etc, and of the host what a compile reads and writes:
# /tmp, /dev/shm, $TMPDIR, the current directory, and the directory of every path named by an
# argument (`-I/dir`, `-o dir/prog`, `-fdump-statistics-stats=/dir/stats`, `../x.c`). A host
# directory under /usr or /etc is bound only onto an empty directory the root keeps for it
# (/usr/include/csmith): the root's own headers and libraries always win.
#
# A binary linked here names the root's dynamic loader and library directories: sid's glibc is
# newer than the host's, and a program that calls e.g. `strtol` in C23 mode needs its symbols.
# Linked that way (not -static), sanitized binaries work too. A -static link gets no such flags.
set -euo pipefail

root=$(realpath -e -- "$1")
program=$2
shift 2

binds=()
bind_host_dir() {
    local dir=$1
    case "$dir" in
    / | /proc | /proc/* | /sys | /sys/* | /dev | /dev/pts | /dev/pts/*) return ;;
    /dev/*) [ "${dir#/dev/shm}" != "$dir" ] || return 0 ;;
    /usr | /usr/* | /etc | /etc/*)
        [ -d "$root$dir" ] && [ -z "$(ls -A -- "$root$dir")" ] || return 0
        ;;
    esac
    binds+=(--bind "$dir" "$dir")
}

# The directory an argument names, if any: the path itself when it is a directory, else the
# directory it would be written in.
bind_argument() {
    local path
    case "$1" in
    -I?* | -L?* | -B?* | -o?*) path=${1:2} ;;
    -*=*) path=${1#*=} ;;
    -*) return ;;
    *) path=$1 ;;
    esac
    case "$path" in
    */*) ;;
    *) return ;;
    esac
    path=$(realpath -m -- "$path")
    [ -d "$path" ] || path=$(dirname -- "$path")
    [ -d "$path" ] && bind_host_dir "$path"
}

links=1
for argument in "$@"; do
    case "$argument" in
    -c | -S | -E | -M | -MM | -fsyntax-only | --version | -v | --help* | -dumpversion | -dumpmachine | -dumpfullversion | -print-* | -###)
        links=0
        ;;
    -static | -static-pie) # names no loader (and a cross compiler's would not be the host's)
        links=0
        ;;
    esac
    bind_argument "$argument"
done

for dir in /tmp /dev/shm "${TMPDIR:-/tmp}" "$PWD"; do
    [ -d "$dir" ] && bind_host_dir "$(realpath -e -- "$dir")"
done

link_flags=()
if [ "$links" = 1 ]; then
    multiarch=$(uname -m)-linux-gnu
    loader=$(ls "$root/usr/lib/$multiarch"/ld-linux*.so.[0-9] | head -n 1)
    link_flags=(-Wl,--dynamic-linker="$loader" -Wl,--disable-new-dtags)
    # gcc-snapshot keeps its own runtime libraries (libasan, libubsan) under its prefix: they
    # come first. DT_RPATH (not RUNPATH) also serves the libraries' own dependencies.
    prefix=$(dirname -- "$(dirname -- "$program")")
    if [ "$prefix" != /usr ] && [ -d "$root$prefix/lib" ]; then
        link_flags+=(-Wl,-rpath="$root$prefix/lib")
    fi
    link_flags+=(-Wl,-rpath="$root/usr/lib/$multiarch")
fi

exec bwrap --die-with-parent \
    --ro-bind "$root/usr" /usr --ro-bind "$root/etc" /etc \
    --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --symlink usr/sbin /sbin \
    --dev /dev --proc /proc \
    "${binds[@]}" \
    --setenv PATH /usr/bin:/bin \
    --chdir "$PWD" \
    "$program" "$@" "${link_flags[@]}"
