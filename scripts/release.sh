#!/usr/bin/env bash
# Builds what a release publishes, into one folder (default dist/), with SHA256SUMS:
#
#   sets3lock-VERSION-cp39-abi3-manylinux_2_17_x86_64.whl   the Python package (CPython 3.9 and
#                                                            up), the `sets3lock` command inside
#   sets3lock-VERSION.tar.gz                                 its sdist: builds from source with
#                                                            Rust 1.89 and up
#   sets3lock-VERSION-x86_64-unknown-linux-gnu.tar.gz        the command alone, with its licences
#
# Everything runs on glibc 2.17 and up (RHEL/CentOS 7 and later, Amazon Linux 2 and later;
# README.md, "Install", lists more):
# it is linked by zig (PyPI's ziglang, through maturin --zig) against glibc 2.17's symbols, and
# checked: any symbol version above GLIBC_2.17 fails the build. Built with the `dist` profile
# (Cargo.toml: thin LTO, no symbols; docs/BENCHMARKS.md, "Release builds").
#
#   bash scripts/release.sh [OUT]
#
# Then `bash scripts/test-release.sh [OUT]` installs each artifact as a user would and takes a
# lock with it. Nothing is published. Only x86_64 Linux (glibc) is built: this machine builds
# nothing else (README.md, "Install").
set -euo pipefail
cd "$(dirname "$0")/.."

maturin_version=1.16.0
ziglang_version=0.17.1
out=${1:-dist}
root=$(pwd)
venv=$root/.local/release-venv
target=x86_64-unknown-linux-gnu
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
glibc_floor=2.17

echo "== release tools: maturin $maturin_version, ziglang $ziglang_version (.local/release-venv)"
if ! "$venv/bin/maturin" --version 2>/dev/null | grep -q "$maturin_version" ||
  ! "$venv/bin/python" -m ziglang version 2>/dev/null | grep -q "$ziglang_version"; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "maturin==$maturin_version" "ziglang==$ziglang_version"
fi
export PATH=$venv/bin:$PATH
rm -rf "$out"
mkdir -p "$out"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

echo "== the wheel: maturin build --profile dist --zig --compatibility manylinux2014"
maturin build --profile dist --zig --compatibility manylinux2014 --locked \
  -m bindings/python/Cargo.toml -i "$venv/bin/python" -o "$out"

echo "== the sdist: maturin sdist"
maturin sdist -m bindings/python/Cargo.toml -o "$out"

echo "== the command: cargo build --profile dist (zig for glibc $glibc_floor, through maturin -b bin)"
# maturin's zig path links a plain binary too; its by-product wheel is not published.
maturin build --profile dist --zig --compatibility manylinux2014 --locked \
  -m cli/Cargo.toml -b bin -o "$scratch/bin-wheel"
name=sets3lock-$version-$target
mkdir -p "$scratch/$name"
cp "target/$target/dist/sets3lock" "$scratch/$name/"
cp README.md LICENSE-MIT LICENSE-APACHE "$scratch/$name/"
tar -C "$scratch" -czf "$out/$name.tar.gz" --owner=0 --group=0 --sort=name "$name"

echo "== every ELF needs glibc $glibc_floor at most"
# The newest symbol version each binary asks of glibc, from its dynamic symbol table.
newest() { objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1; }
check() {
  local file=$1 label=$2 v
  v=$(newest "$file")
  echo "$label: GLIBC_$v"
  if [ "$(printf '%s\n%s\n' "$v" "$glibc_floor" | sort -V | tail -1)" != "$glibc_floor" ]; then
    echo "$label needs GLIBC_$v, above the $glibc_floor this release promises" >&2
    exit 1
  fi
}
check "$scratch/$name/sets3lock" "the command"
wheel=$(ls "$out"/sets3lock-"$version"-*.whl)
python3 -m zipfile -e "$wheel" "$scratch/wheel"
check "$(ls "$scratch"/wheel/sets3lock/_native*.so)" "the wheel's extension"
case $wheel in
  *manylinux_2_17_x86_64*) ;;
  *) echo "the wheel is not tagged manylinux_2_17: $wheel" >&2; exit 1 ;;
esac

echo "== SHA256SUMS"
(cd "$out" && sha256sum -- *.whl *.tar.gz > SHA256SUMS && cat SHA256SUMS)
ls -l "$out"
