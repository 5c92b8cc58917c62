//! German stays complete: every string marked for translation in the
//! sources has a German entry in `po/de.po`, and every source file that marks
//! strings is listed in `po/POTFILES.in` (else the template misses it).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn listed() -> Vec<String> {
    std::fs::read_to_string(root().join("po/POTFILES.in"))
        .expect("po/POTFILES.in")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("rs" | "ui")) {
            out.push(path);
        }
    }
}

/// Whether a file marks strings: a call of one of the keywords, or a
/// translatable property in a template. The definitions in i18n.rs do not.
fn marks_strings(path: &Path) -> bool {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    if path.extension().and_then(|e| e.to_str()) == Some("ui") {
        return text.contains("translatable=\"yes\"");
    }
    ["gettext(", "gettext_f(", "ngettext("]
        .iter()
        .any(|k| text.contains(k))
        && !path.ends_with("src/i18n.rs")
}

#[test]
fn every_file_that_marks_strings_is_listed() {
    let listed = listed();
    let mut all = Vec::new();
    sources(&root().join("src"), &mut all);
    let missing: Vec<String> = all
        .iter()
        .filter(|p| marks_strings(p))
        .filter_map(|p| p.strip_prefix(root()).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !listed.contains(p))
        .collect();
    assert!(missing.is_empty(), "not in po/POTFILES.in: {missing:?}");
    let gone: Vec<&String> = listed.iter().filter(|p| !root().join(p).exists()).collect();
    assert!(
        gone.is_empty(),
        "po/POTFILES.in lists files that do not exist: {gone:?}"
    );
}

/// Runs a gettext tool (installed by build-aux/install-deps.sh); its
/// standard error, which is where `msgfmt --statistics` reports.
fn run(command: &mut Command) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{command:?}: {stderr}");
    stderr
}

#[test]
fn every_marked_string_has_a_german_translation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = listed();
    // The same keywords as po/meson.build. Rust is read as C (near enough
    // for string literals and calls); a .ui file as a GtkBuilder file.
    let pot = dir.path().join("parley.pot");
    run(Command::new("xgettext")
        .current_dir(root())
        .args([
            "--keyword=gettext",
            "--keyword=gettext_f",
            "--keyword=ngettext:1,2",
        ])
        .args(["--from-code=UTF-8", "--language=C", "-o"])
        .arg(&pot)
        .args(files.iter().filter(|f| f.ends_with(".rs"))));
    let ui_pot = dir.path().join("ui.pot");
    run(Command::new("xgettext")
        .current_dir(root())
        .arg("-o")
        .arg(&ui_pot)
        .args(files.iter().filter(|f| f.ends_with(".ui"))));
    let mut untranslated = Vec::new();
    for template in [&pot, &ui_pot] {
        let merged = dir.path().join("merged.po");
        run(Command::new("msgmerge")
            .args(["--quiet", "--no-fuzzy-matching", "-o"])
            .arg(&merged)
            .arg(root().join("po/de.po"))
            .arg(template));
        // The statistics count every entry, even one whose msgid spans lines.
        let stats = run(Command::new("msgfmt")
            .args(["--statistics", "-o", "/dev/null"])
            .arg(&merged));
        if stats.contains("untranslated") || stats.contains("fuzzy") {
            let out = Command::new("msgattrib")
                .args(["--untranslated", "--no-obsolete"])
                .arg(&merged)
                .output()
                .expect("msgattrib");
            untranslated.push(format!("{stats}{}", String::from_utf8_lossy(&out.stdout)));
        }
    }
    assert!(
        untranslated.is_empty(),
        "no German for:\n{}",
        untranslated.join("\n")
    );
}
