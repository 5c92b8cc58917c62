#!/usr/bin/env bash
# The README's first command: install what is missing, build every program
# (the default configuration names the bundled demo agent), and start the
# window on the default configuration.
#
#   build-aux/run.sh [PARLEY ARGUMENTS…]
#   build-aux/run.sh --smoke
#
# --smoke is the first-run check CI runs: as a newcomer, with a fresh HOME
# and XDG directories, the window starts on the configuration it creates,
# a message is typed and sent to the default agent, and the run exits 0 once
# the agent has answered (1 otherwise). It needs a display (CI gives it
# Xvfb and a D-Bus session bus).
set -euo pipefail
cd "$(dirname "$0")/.."
build-aux/install-deps.sh
if [ -d "$HOME/.cargo/bin" ]; then export PATH="$HOME/.cargo/bin:$PATH"; fi
cargo build --release --bins
parley=${CARGO_TARGET_DIR:-$PWD/target}/release/parley

if [ "${1:-}" != --smoke ]; then
  exec "$parley" "$@"
fi
shift
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
export HOME=$fresh XDG_CONFIG_HOME=$fresh/config XDG_DATA_HOME=$fresh/data \
  XDG_CACHE_HOME=$fresh/cache XDG_STATE_HOME=$fresh/state PARLEY_SMOKE=1
unset PARLEY_CONFIG
"$parley" "$@"
