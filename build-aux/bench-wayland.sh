#!/usr/bin/env bash
# Runs the window benchmarks on Wayland, in a headless weston, instead of
# under Xvfb; arguments go to the bench (`build-aux/bench-wayland.sh long`).
# GTK 4.8's X11 backend asks the X server for the monitor and its work
# area, synchronously, each time it lays a window out: on a virtual
# machine each such round trip waits for the other core to wake. On
# Wayland a layout asks the compositor nothing (docs/benchmarks-history.md, "Round two,
# on Wayland"). weston draws nothing here (its headless backend's default),
# as a compositor on a GPU costs the cores next to nothing. The figures
# are the bench's `window-wayland` (target/bench/window-wayland-*.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v weston >/dev/null 2>&1; then
  echo "Installing weston"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends weston >/dev/null
fi

runtime=$(mktemp -d)
chmod 700 "$runtime"
# Frames at 60 Hz, as on a display. The headless output finishes a frame
# 16 ms after drawing it, and weston draws the next one its repaint window
# (7 ms by default) before the refresh after that: with the default, a
# frame every 25.7 ms.
printf '[core]\nrepaint-window=16\n' > "$runtime/weston.ini"
# In a session of its own, so that its helpers (the shell's panel, the
# on-screen keyboard) go with it.
XDG_RUNTIME_DIR="$runtime" setsid weston --backend=headless-backend.so --width=1280 --height=800 \
  --socket=parley-bench --idle-time=0 --config="$runtime/weston.ini" --log="$runtime/weston.log" >"$runtime/weston.out" 2>&1 &
weston_pid=$!
# The bench's own status is the script's (weston's, killed, is not).
trap 'kill -- -"$weston_pid" 2>/dev/null || true; wait "$weston_pid" 2>/dev/null || true; rm -rf "$runtime"' EXIT
for _ in $(seq 100); do
  [ -S "$runtime/parley-bench" ] && break
  sleep 0.1
done
if [ ! -S "$runtime/parley-bench" ]; then
  echo "weston did not start:" >&2
  cat "$runtime/weston.log" "$runtime/weston.out" >&2
  exit 1
fi

XDG_RUNTIME_DIR="$runtime" WAYLAND_DISPLAY=parley-bench GDK_BACKEND=wayland GSK_RENDERER=cairo \
  cargo bench --bench window -- "$@"
