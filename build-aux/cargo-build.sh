#!/bin/sh
# meson's cargo step: build the three programs into the shared target/ and
# copy them where meson expects its outputs.
# Usage: cargo-build.sh CARGO SOURCE_ROOT TARGET_DIR PROFILE LOCALEDIR APP_ID OUTPUT_DIR
set -eu
cargo=$1 src=$2 target=$3 profile=$4 localedir=$5 app_id=$6 out=$7
release=
[ "$profile" = release ] && release=--release
# The locale directory and the application id are compiled in (option_env!).
PARLEY_LOCALEDIR="$localedir" PARLEY_APP_ID="$app_id" "$cargo" build --manifest-path "$src/Cargo.toml" \
  --target-dir "$target" --bins $release
for bin in parley parley-cli parley-demo-agent; do
  cp "$target/$profile/$bin" "$out/$bin"
done
