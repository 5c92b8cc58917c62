//! Installing an agent from the registry: an `npx` or `uvx` package, or a
//! binary archive downloaded, checked against its hash and unpacked into
//! `agents/ID/VERSION/`; what the configuration's entry becomes; and what
//! to remove when the configuration cannot take it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gio::prelude::*;
use serde_json::{json, Value};
use sha2::Digest;

use super::fetch::{self, FetchError};
use super::listing::{cached_icon, package_name};
use super::unpack::{self, Kind, Limits};
use super::{Method, RegistryAgent};
use crate::core::config::edit;
use crate::core::events::{self, Event, Progress};
use crate::i18n::{gettext, gettext_f};

/// The agents' names in a configuration's text.
pub(super) fn names_in(text: &str) -> Vec<String> {
    crate::core::config::validate::parse(text)
        .ok()
        .and_then(|v| {
            v.get("agents")?.as_array().map(|a| {
                a.iter()
                    .filter_map(|e| e.get("name")?.as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// `id`, or `id-2`, `id-3`… when taken.
pub(super) fn unique_name(id: &str, names: &[String]) -> String {
    let taken = |n: &str| names.iter().any(|x| x == n);
    if !taken(id) {
        return id.to_owned();
    }
    (2..)
        .map(|i| format!("{id}-{i}"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| id.to_owned())
}

/// What an install left: how to run the agent, and what to remove if the
/// configuration cannot take it.
pub(super) struct Installed {
    method: Method,
    command: String,
    args: Vec<String>,
    env: std::collections::BTreeMap<String, String>,
    icon: Option<PathBuf>,
    /// The version directory this install made (not one that was there).
    made: Option<PathBuf>,
}

impl Installed {
    /// `base` (the entry as it was, or just its name) with the registry's
    /// fields set. Title, description and icon are set only when absent:
    /// the user may have changed them.
    pub(super) fn entry(&self, agent: &RegistryAgent, mut e: edit::Entry) -> edit::Entry {
        fn set(e: &mut edit::Entry, key: &str, value: Option<Value>, replace: bool) {
            match (e.iter().position(|(k, _)| k == key), value) {
                (Some(i), Some(v)) if replace => e[i].1 = v,
                (Some(_), Some(_)) => {}
                (Some(i), None) => {
                    e.remove(i);
                }
                (None, Some(v)) => e.push((key.to_owned(), v)),
                (None, None) => {}
            }
        }
        set(&mut e, "title", Some(json!(agent.name)), false);
        if let Some(icon) = &self.icon {
            set(&mut e, "icon", Some(json!(icon.display().to_string())), false);
        }
        if !agent.description.is_empty() {
            set(&mut e, "description", Some(json!(agent.description)), false);
        }
        set(&mut e, "command", Some(json!(self.command)), true);
        set(
            &mut e,
            "args",
            (!self.args.is_empty()).then(|| json!(self.args)),
            true,
        );
        set(
            &mut e,
            "env",
            (!self.env.is_empty()).then(|| json!(self.env)),
            true,
        );
        set(
            &mut e,
            "registry",
            Some(json!({"id": agent.id, "version": agent.version, "distribution": self.method.name()})),
            true,
        );
        e
    }

    /// What Update sets in an entry (`current`, as the file has it): the
    /// command and `registry`; the environment merged (the registry's
    /// variables win, the user's others stay); the arguments as they are,
    /// with the package's word replaced by the new version's (npx, uvx),
    /// or the registry's when the entry has none. Title, description and
    /// icon only where absent.
    pub(super) fn update_members(&self, agent: &RegistryAgent, current: &edit::Entry) -> edit::Entry {
        let get = |key: &str| current.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let mut out: edit::Entry = vec![("command".to_owned(), json!(self.command))];
        let package = match self.method {
            Method::Npx => agent.distribution.npx.as_ref(),
            Method::Uvx => agent.distribution.uvx.as_ref(),
            Method::Binary => None,
        };
        let args = match (get("args"), package) {
            (Some(Value::Array(mut args)), Some(p)) => {
                let base = package_name(&p.package);
                match args
                    .iter()
                    .position(|a| a.as_str().is_some_and(|a| package_name(a) == base))
                {
                    Some(i) => {
                        args[i] = json!(p.package);
                        Some(Value::Array(args))
                    }
                    None => (!self.args.is_empty()).then(|| json!(self.args)),
                }
            }
            (Some(args @ Value::Array(_)), None) => Some(args),
            _ => (!self.args.is_empty()).then(|| json!(self.args)),
        };
        if let Some(args) = args {
            out.push(("args".to_owned(), args));
        }
        let mut env = match get("env") {
            Some(Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        for (k, v) in &self.env {
            env.insert(k.clone(), json!(v));
        }
        if !env.is_empty() {
            out.push(("env".to_owned(), Value::Object(env)));
        }
        out.push((
            "registry".to_owned(),
            json!({"id": agent.id, "version": agent.version, "distribution": self.method.name()}),
        ));
        for (key, value) in [
            ("title", Some(json!(agent.name))),
            (
                "description",
                (!agent.description.is_empty()).then(|| json!(agent.description)),
            ),
            ("icon", self.icon.as_ref().map(|i| json!(i.display().to_string()))),
        ] {
            if let (None, Some(v)) = (get(key), value) {
                out.push((key.to_owned(), v));
            }
        }
        out
    }

    pub(super) fn undo(&self) {
        if let Some(dir) = &self.made {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Removes the paths it holds when dropped, unless disarmed.
pub(super) struct Leftovers(Vec<PathBuf>);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(p)
            } else {
                std::fs::remove_file(p)
            };
        }
    }
}

/// Hashes what passes through to a file.
pub(super) struct Hashing<W> {
    inner: W,
    hash: sha2::Sha256,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

pub(super) fn max_download() -> u64 {
    std::env::var("PARLEY_REGISTRY_MAX_DOWNLOAD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 30)
}

/// Progress as `registry:progress`, at most ten times a second.
pub(super) struct Reporter<'a> {
    events: &'a events::EventSender,
    id: String,
    last: Option<Instant>,
}

impl Reporter<'_> {
    fn report(&mut self, phase: &'static str, done: u64, total: Option<u64>, force: bool) {
        if !force
            && self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(Instant::now());
        events::emit(
            self.events,
            Event::RegistryProgress(Progress {
                id: self.id.clone(),
                phase,
                done,
                total,
            }),
        );
    }
}

/// `on_host`: agents run on the host (Flatpak), where npx or uvx cannot be
/// looked for from here; the agent's start says so if it is missing.
pub(super) fn install_blocking(
    agent: &RegistryAgent,
    method: Method,
    on_host: bool,
    cancel: &gio::Cancellable,
    events: &events::EventSender,
) -> Result<Installed, String> {
    let result = install_method(agent, method, on_host, cancel, events);
    if result.is_err() {
        // Removed only when empty: an installed version stays.
        let _ = std::fs::remove_dir(super::agents_dir().join(&agent.id));
    }
    let (command, args, env, made) = result?;
    Ok(Installed {
        method,
        command,
        args,
        env,
        icon: save_icon(agent),
        made,
    })
}

/// The command, arguments, environment, and the version directory made.
type HowToRun = (
    String,
    Vec<String>,
    std::collections::BTreeMap<String, String>,
    Option<PathBuf>,
);

pub(super) fn install_method(
    agent: &RegistryAgent,
    method: Method,
    on_host: bool,
    cancel: &gio::Cancellable,
    events: &events::EventSender,
) -> Result<HowToRun, String> {
    Ok(match method {
        Method::Npx | Method::Uvx => {
            let (program, package) = match method {
                Method::Npx => ("npx", agent.distribution.npx.as_ref()),
                _ => ("uvx", agent.distribution.uvx.as_ref()),
            };
            let package = package.ok_or_else(|| gettext("the registry entry has no package"))?;
            // After `npx --yes` a word starting with "-" would be one of
            // npx's own options (`-c` runs a shell command).
            if package.package.starts_with('-') || package.package.trim().is_empty() {
                return Err(gettext_f(
                    "the registry entry's package {package} is not a package name",
                    &[("package", &package.package)],
                ));
            }
            if !on_host {
                check_program(program)?;
            }
            let mut args = Vec::new();
            if method == Method::Npx {
                args.push("--yes".to_owned()); // no question on a terminal nobody sees
            }
            args.push(package.package.clone());
            args.extend(package.args.iter().cloned());
            (program.to_owned(), args, package.env.clone(), None)
        }
        Method::Binary => {
            let target = agent
                .binary()
                .ok_or_else(|| gettext("no build for this platform"))?;
            let (cmd, made) = install_binary(agent, target, cancel, events)?;
            (
                cmd.display().to_string(),
                target.args.clone(),
                target.env.clone(),
                made,
            )
        }
    })
}

/// `npx` or `uvx` where the launch doctor looks for programs, or what to install.
pub(super) fn check_program(program: &str) -> Result<(), String> {
    use crate::core::launch;
    let dirs = launch::search_dirs(None, launch::login_shell_path_now());
    let home = crate::core::config::model::home_dir();
    match crate::core::launch::resolve_program(program, &home, &dirs) {
        Some(_) => Ok(()),
        None => Err(launch::not_found(program, &dirs)),
    }
}

/// The icon kept with the installed agent, `agents/ID/ID-symbolic.svg`
/// (the cache may be cleared).
pub(super) fn save_icon(agent: &RegistryAgent) -> Option<PathBuf> {
    let cached = cached_icon(agent, true)?;
    let dir = super::agents_dir().join(&agent.id);
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join(format!("{}-symbolic.svg", agent.id));
    std::fs::copy(cached, &path).ok()?;
    Some(path)
}

/// Downloads, checks and unpacks the archive into
/// `agents/ID/VERSION/`; answers the command's path, and the version
/// directory when this install made it.
pub(super) fn install_binary(
    agent: &RegistryAgent,
    target: &super::BinaryTarget,
    cancel: &gio::Cancellable,
    events: &events::EventSender,
) -> Result<(PathBuf, Option<PathBuf>), String> {
    let kind = Kind::of(&target.archive).ok_or_else(|| {
        gettext_f(
            "{url}: Parley unpacks .tar.gz, .tgz, .tar and .zip archives",
            &[("url", &target.archive)],
        )
    })?;
    let rel_cmd = Path::new(target.cmd.trim_start_matches("./")).to_path_buf();
    if rel_cmd
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(gettext_f(
            "the command {cmd} is not inside the archive",
            &[("cmd", &target.cmd)],
        ));
    }
    let dir = super::agents_dir().join(&agent.id);
    let version_dir = dir.join(&agent.version);
    let cmd = version_dir.join(&rel_cmd);
    if crate::core::launch::is_executable(&cmd) {
        return Ok((cmd, None)); // there already
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    remove_stale(&dir);
    let tag = format!("{}-{}", agent.version, std::process::id());
    let download = dir.join(format!(".download-{tag}"));
    let unpacked = dir.join(format!(".unpack-{tag}"));
    let _leftovers = Leftovers(vec![download.clone(), unpacked.clone()]);
    let mut reporter = Reporter {
        events,
        id: agent.id.clone(),
        last: None,
    };

    let file = std::fs::File::create(&download).map_err(|e| format!("{}: {e}", download.display()))?;
    let mut sink = Hashing {
        inner: std::io::BufWriter::new(file),
        hash: sha2::Sha256::new(),
    };
    let size = fetch::get(
        &target.archive,
        max_download(),
        cancel,
        &mut sink,
        &mut |done, total| reporter.report("download", done, total.or(target.size), false),
    )
    .map_err(|e| match e {
        FetchError::Cancelled => gettext("cancelled"),
        FetchError::Failed(e) => e,
    })?;
    sink.flush().map_err(|e| e.to_string())?;
    reporter.report("download", size, Some(size), true);
    if let Some(want) = target.size.filter(|w| *w != size) {
        return Err(gettext_f(
            "the download has {got} bytes; the registry says {want}",
            &[("got", &size.to_string()), ("want", &want.to_string())],
        ));
    }
    let digest = sink.hash.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    if let Some(want) = &target.sha256 {
        if !want.eq_ignore_ascii_case(&hex) {
            return Err(gettext_f(
                "the download's SHA-256 is {got}; the registry says {want}",
                &[("got", &hex), ("want", want)],
            ));
        }
    }

    reporter.report("unpack", 0, None, true);
    std::fs::create_dir(&unpacked).map_err(|e| format!("{}: {e}", unpacked.display()))?;
    unpack::unpack(&download, kind, &unpacked, Limits::from_env(), &|| {
        cancel.is_cancelled()
    })
    .map_err(|e| e.0)?;
    let staged = unpacked.join(&rel_cmd);
    let meta = std::fs::metadata(&staged)
        .ok()
        .filter(|m| m.is_file())
        .ok_or_else(|| gettext_f("the archive has no {cmd}", &[("cmd", &target.cmd)]))?;
    // The command resolves inside the version directory, links included.
    let real = std::fs::canonicalize(&staged).map_err(|e| e.to_string())?;
    let root = std::fs::canonicalize(&unpacked).map_err(|e| e.to_string())?;
    if !real.starts_with(&root) {
        return Err(gettext_f(
            "the command {cmd} is not inside the archive",
            &[("cmd", &target.cmd)],
        ));
    }
    use std::os::unix::fs::PermissionsExt;
    if meta.permissions().mode() & 0o111 == 0 {
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
    }
    if cancel.is_cancelled() {
        return Err(gettext("cancelled"));
    }
    if version_dir.exists() {
        std::fs::remove_dir_all(&version_dir).map_err(|e| format!("{}: {e}", version_dir.display()))?;
    }
    std::fs::rename(&unpacked, &version_dir).map_err(|e| format!("{}: {e}", version_dir.display()))?;
    reporter.report("unpack", 1, Some(1), true);
    Ok((cmd, Some(version_dir)))
}

/// Downloads and unpackings a crashed run left, over an hour old.
pub(super) fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(".download-") || name.starts_with(".unpack-")) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(3600));
        if old {
            let p = e.path();
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
        }
    }
}
