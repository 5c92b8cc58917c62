#!/usr/bin/env bash
# Installs what Parley needs on Debian 12 and is missing: the GTK 4 /
# libadwaita / GtkSourceView development files, the meson route, and what the
# tests use (Xvfb, a D-Bus session bus, Python's venv for a second ACP agent,
# a Hebrew locale compiled by the right-to-left test; podman with runc and
# busybox for the container test's own root).
# Safe to run again: it does nothing when everything is there.
set -euo pipefail

packages=(
  libgtk-4-dev libadwaita-1-dev libgtksourceview-5-dev pkg-config gcc
  meson ninja-build desktop-file-utils appstream-util gettext
  xvfb xauth dbus python3-venv python3-pyatspi at-spi2-core
  libvte-2.91-gtk4-dev gnome-keyring libsqlite3-dev libsoup-3.0-dev glib-networking
  git openssh-client openssh-server locales
  podman runc busybox-static
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  # Debian 12's own Rust (1.63) is too old for the GTK 4 bindings.
  echo "Rust is missing: installing it with rustup (Rust 1.92 or newer is needed)."
  if command -v curl >/dev/null 2>&1; then
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  else
    echo "Install Rust 1.92 or newer with rustup, then run this again." >&2
    exit 1
  fi
fi
