//! Compiles the GSettings schema next to the build, so `cargo run` remembers
//! the window size without installing anything.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=data/io.github.parley.Parley.gschema.xml");
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return;
    };
    let dir = out.join("schemas");
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let _ = std::fs::copy(
        "data/io.github.parley.Parley.gschema.xml",
        dir.join("io.github.parley.Parley.gschema.xml"),
    );
    match Command::new("glib-compile-schemas")
        .arg("--strict")
        .arg(&dir)
        .status()
    {
        Ok(s) if s.success() => println!("cargo:rustc-env=PARLEY_SCHEMA_DIR={}", dir.display()),
        _ => println!("cargo:warning=glib-compile-schemas failed: the window size will not be remembered"),
    }
}
