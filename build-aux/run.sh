#!/usr/bin/env bash
# The README's first command: install what is missing, build, and start the
# window on the default configuration (the bundled demo agent).
set -euo pipefail
cd "$(dirname "$0")/.."
build-aux/install-deps.sh
[ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH"
exec cargo run --release --bin parley -- "$@"
