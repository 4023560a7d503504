#!/bin/sh
# Install test (ctest install/pkgconfig): `cmake --install` the build into a
# temporary prefix, check what landed there, check that libimgbatch.so
# exports exactly the functions of imgbatch.h (all ib_*), then build
# tests/install/hello.c against the installed package through pkg-config
# alone and run it.  usage: run.sh BUILD_DIR
set -eu
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ib_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }

pc=$(find "$tmp/prefix" -name imgbatch.pc -path '*/pkgconfig/*')
[ -n "$pc" ] || fail "no imgbatch.pc installed"
export PKG_CONFIG_PATH="$(dirname "$pc")"
libdir=$(pkg-config --variable=libdir imgbatch)
includedir=$(pkg-config --variable=includedir imgbatch)
[ -f "$includedir/imgbatch.h" ] || fail "imgbatch.h not in $includedir"
[ -x "$tmp/prefix/bin/imgbatch" ] || fail "bin/imgbatch not installed"
lib="$libdir/libimgbatch.so"
[ -e "$lib" ] || fail "$lib not installed"
# The library reads no environment, prints nothing and never exits (its
# messages go through ib_executor_options.log_cb): no getenv, nothing that
# writes to stdout/stderr by itself, no reference to stdout/stderr at all
# (fprintf/fwrite onto a memstream or the caller's FILE are fine).
quiet=$(nm -D --undefined-only "$lib" | awk '{print $2}' | sed 's/@.*//' |
  grep -xE 'getenv|secure_getenv|printf|vprintf|__printf_chk|__vprintf_chk|puts|putchar|perror|exit|_exit|abort|stdout|stderr' || true)
[ -z "$quiet" ] || fail "libimgbatch.so calls $(echo $quiet)"
version=$(pkg-config --modversion imgbatch)
"$tmp/prefix/bin/imgbatch" version | grep -qx "imgbatch $version" ||
  fail "imgbatch version does not say $version"

# Exported: the functions imgbatch.h declares, nothing else.
nm -D --defined-only "$lib" | awk '$2 ~ /^[TtDdBbRrVvWwiu]$/ {print $3}' | sort -u >"$tmp/exported"
"$cc" -E -P "$includedir/imgbatch.h" | grep -oE '\bib_[a-z0-9_]+\(' | tr -d '(' |
  sort -u >"$tmp/declared"
[ -s "$tmp/declared" ] || fail "no function found in imgbatch.h"
if grep -v '^ib_' "$tmp/exported" >"$tmp/foreign"; then
  fail "exports symbols outside ib_: $(head -20 "$tmp/foreign" | tr '\n' ' ')"
fi
if ! cmp -s "$tmp/declared" "$tmp/exported"; then
  diff "$tmp/declared" "$tmp/exported" >&2 || true
  fail "exports differ from imgbatch.h's functions (< declared only, > exported only)"
fi

# A consumer that knows only pkg-config.
# shellcheck disable=SC2046 # word splitting of pkg-config's flags is wanted
"$cc" -std=c11 -Wall -Wextra -Werror -o "$tmp/hello" "$here/hello.c" \
  $(pkg-config --cflags --libs imgbatch) || fail "hello.c does not build against the package"
readelf -d "$tmp/hello" | grep -q 'NEEDED.*libimgbatch\.so' || fail "hello does not link libimgbatch.so"
LD_LIBRARY_PATH="$libdir" "$tmp/hello" || fail "hello failed"
echo "install test: ok ($(wc -l <"$tmp/exported") exported functions, prefix layout $(cd "$tmp/prefix" && find . -type f | sort | tr '\n' ' '))"
