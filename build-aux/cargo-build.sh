#!/bin/sh
# meson's cargo step: build the three programs into the shared target/ and
# copy them where meson expects its outputs.
# Usage: cargo-build.sh CARGO SOURCE_ROOT TARGET_DIR PROFILE LOCALEDIR OUTPUT_DIR
set -eu
cargo=$1 src=$2 target=$3 profile=$4 localedir=$5 out=$6
release=
[ "$profile" = release ] && release=--release
# The locale directory is compiled in (option_env!), so translations are found.
PARLEY_LOCALEDIR="$localedir" "$cargo" build --manifest-path "$src/Cargo.toml" \
  --target-dir "$target" --bins $release
for bin in parley parley-cli parley-demo-agent; do
  cp "$target/$profile/$bin" "$out/$bin"
done
