#!/bin/sh
# Unpacks Debian's libopenblas0-openmp into .tmp/openblas (gitignored; not build/, which `npm run
# build:native` wipes), without root and without touching the system's libblas.so.3 alternative, so
# bench/reference/grpo_step.py can run torch on OpenBLAS instead of the reference BLAS (see its header).
# Is: a bench-time helper (apt-get download + dpkg-deb -x). Is not: needed by the library or its tests.
set -eu
root="$(cd "$(dirname "$0")/../.." && pwd)/.tmp/openblas"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download libopenblas0-openmp)
mkdir -p "$root"
dpkg-deb -x "$work"/libopenblas0-openmp_*.deb "$root"
ls "$root/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"
