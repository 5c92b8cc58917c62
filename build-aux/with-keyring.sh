#!/usr/bin/env bash
# Runs a command with a real Secret Service on the session bus: a
# gnome-keyring-daemon whose login keyring lives in a fresh temporary
# directory and is unlocked with a test password (never the user's own
# keyring). Run it inside `dbus-run-session`; the daemon ends with the bus.
# PARLEY_TEST_KEYRING=1 tells the tests that a keyring must be there.
set -u
dir=$(mktemp -d)
if command -v gnome-keyring-daemon >/dev/null 2>&1 && [ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ]; then
  printf test | XDG_DATA_HOME="$dir" gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1
  export PARLEY_TEST_KEYRING=1
else
  echo "with-keyring: no gnome-keyring-daemon or no session bus; keyring tests will skip" >&2
fi
"$@"
status=$?
rm -rf "$dir"
exit "$status"
