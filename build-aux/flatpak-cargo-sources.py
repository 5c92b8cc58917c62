#!/usr/bin/env python3
"""Writes the Flatpak sources for every crate in Cargo.lock, so that
flatpak-builder builds Parley offline (vendored crates and a cargo config).

    build-aux/flatpak-cargo-sources.py [Cargo.lock] > build-aux/cargo-sources.json

The crates' download address is read from cargo's own cache of the registry
index (`~/.cargo/registry/index/*/config.json`, its "dl" key), or given with
--dl URL: the output names the registry this machine uses, so it is made
where the Flatpak is built and is not kept in git.
"""

import glob
import json
import os
import sys
import tomllib


def download_base(args):
    if "--dl" in args:
        return args[args.index("--dl") + 1]
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    for path in sorted(glob.glob(os.path.join(home, "registry/index/*/config.json"))):
        with open(path) as f:
            dl = json.load(f).get("dl")
        if dl:
            return dl
    sys.exit("no registry download address: run cargo fetch once, or give --dl URL")


def crate_url(dl, name, version):
    if "{crate}" in dl or "{version}" in dl:
        return dl.replace("{crate}", name).replace("{version}", version)
    return f"{dl.rstrip('/')}/{name}/{version}/download"


def main():
    args = sys.argv[1:]
    lock_path = next((a for a in args if a.endswith(".lock")), "Cargo.lock")
    with open(lock_path, "rb") as f:
        lock = tomllib.load(f)
    dl = download_base(args)
    sources = []
    for pkg in lock.get("package", []):
        if not pkg.get("source", "").startswith("registry+") or "checksum" not in pkg:
            continue
        name, version, checksum = pkg["name"], pkg["version"], pkg["checksum"]
        dest = f"cargo/vendor/{name}-{version}"
        sources.append({
            "type": "archive",
            "archive-type": "tar-gzip",
            "url": crate_url(dl, name, version),
            "sha256": checksum,
            "dest": dest,
        })
        sources.append({
            "type": "inline",
            "contents": json.dumps({"package": checksum, "files": {}}),
            "dest": dest,
            "dest-filename": ".cargo-checksum.json",
        })
    sources.append({
        "type": "inline",
        "contents": "[source.vendored-sources]\ndirectory = \"cargo/vendor\"\n\n"
                    "[source.crates-io]\nreplace-with = \"vendored-sources\"\n",
        "dest": "cargo",
        "dest-filename": "config.toml",
    })
    json.dump(sources, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
