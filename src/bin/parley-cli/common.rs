//! What every command of `parley-cli` shares: the usage, the command
//! line's options, standard output as JSON lines, the runtime and the
//! services.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use parley::core::events::{Event, EventReceiver};
use parley::core::services::{Core, Options};
use parley::i18n::gettext_f;

pub const USAGE: &str = "\
Usage:
  parley-cli validate FILE
  parley-cli schema
  parley-cli send AGENT TEXT [--config FILE] [--permission allow|reject|cancel]
                  [--mode MODE] [--model MODEL] [--option ID=VALUE]... [--attach FILE]...
  parley-cli serve [--config FILE]
  parley-cli auth AGENT [METHOD] [--config FILE]
  parley-cli conversations AGENT [--config FILE]
  parley-cli search QUERY [--config FILE]
  parley-cli export AGENT CONVERSATION [--config FILE]
  parley-cli changes AGENT [CONVERSATION] [--config FILE]
  parley-cli undo AGENT [TURN] [--merge] [--all] [--config FILE]
  parley-cli worktrees [--config FILE]
  parley-cli registry list [--refresh] [--config FILE]
  parley-cli registry add ID [--config FILE]
  parley-cli registry update [ID] [--config FILE]
  parley-cli registry remove AGENT [--delete-files] [--config FILE]
";

/// Standard output, one JSON object a line.
#[derive(Clone)]
pub struct Out {
    pub inner: Arc<Mutex<std::io::BufWriter<std::io::Stdout>>>,
}

impl Out {
    pub fn new() -> Self {
        Out {
            inner: Arc::new(Mutex::new(std::io::BufWriter::with_capacity(
                1 << 16,
                std::io::stdout(),
            ))),
        }
    }
    pub fn line(&self, text: &str, flush: bool) {
        let mut w = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let _ = w.write_all(text.as_bytes());
        let _ = w.write_all(b"\n");
        if flush {
            let _ = w.flush();
        }
    }
    pub fn flush(&self) {
        let _ = self.inner.lock().unwrap_or_else(|e| e.into_inner()).flush();
    }
}

pub fn usage() -> ExitCode {
    eprint!("{USAGE}");
    ExitCode::from(2)
}

/// `--config FILE` and `--permission X` among the arguments; the rest in order.
/// The command line after the command: the words left, and the options.
pub struct Opts {
    pub rest: Vec<String>,
    pub config: Option<PathBuf>,
    pub permission: String,
    /// `--mode`, `--model` and `--option`: (option id or category, value).
    pub settings: Vec<(String, String)>,
    pub attach: Vec<PathBuf>,
}

pub fn options(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        rest: Vec::new(),
        config: None,
        permission: "cancel".to_string(),
        settings: Vec::new(),
        attach: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--config" => o.config = Some(PathBuf::from(it.next().ok_or("--config needs a file")?)),
            "--permission" => {
                o.permission = it
                    .next()
                    .ok_or("--permission needs allow, reject or cancel")?
                    .clone();
                if !matches!(o.permission.as_str(), "allow" | "reject" | "cancel") {
                    return Err(format!(
                        "--permission {}: use allow, reject or cancel",
                        o.permission
                    ));
                }
            }
            "--mode" | "--model" => {
                let value = it.next().ok_or(format!("{a} needs a value"))?;
                o.settings
                    .push((a.trim_start_matches("--").to_owned(), value.clone()));
            }
            "--option" => {
                let pair = it.next().ok_or("--option needs ID=VALUE")?;
                let (id, value) = pair
                    .split_once('=')
                    .ok_or(format!("--option {pair}: write ID=VALUE"))?;
                o.settings.push((id.to_owned(), value.to_owned()));
            }
            "--attach" => o
                .attach
                .push(PathBuf::from(it.next().ok_or("--attach needs a file")?)),
            _ => o.rest.push(a.clone()),
        }
    }
    Ok(o)
}

pub fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("parley-cli: cannot start the runtime: {e}");
            std::process::exit(2);
        }
    }
}

pub fn print_event(out: &Out, e: &Event, flush: bool) {
    // Straight into the buffered writer: no string per event.
    let mut w = out.inner.lock().unwrap_or_else(|e| e.into_inner());
    if serde_json::to_writer(&mut *w, e).is_ok() {
        let _ = w.write_all(b"\n");
    }
    if flush {
        let _ = w.flush();
    }
}

/// The services over `config` (`watch`: follow changes to the file), or
/// `None` once the reason is printed (exit status 2).
pub fn core(config: Option<PathBuf>, watch: bool) -> Option<(Core, EventReceiver)> {
    match Core::new(Options {
        config_path: config,
        watch,
        ..Default::default()
    }) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("parley-cli: {e}");
            None
        }
    }
}

/// Tells (on standard error) that the conversation is not kept, when the
/// history is read-only here (a window writes it) or could not be opened.
pub fn say_if_not_kept(core: &Core) {
    let status = core.history.status();
    if !status.writable {
        eprintln!(
            "parley-cli: {}",
            gettext_f(
                "the conversation is not kept: {why}",
                &[("why", &status.error.unwrap_or_default())]
            )
        );
    }
}

/// The words and `--config` of a command that takes none of `send`'s
/// options; `None` (said on standard error) for a wrong command line.
pub fn words_and_config(args: &[String]) -> Option<(Vec<String>, Option<PathBuf>)> {
    match options(args) {
        Ok(o) if o.settings.is_empty() && o.attach.is_empty() => Some((o.rest, o.config)),
        Ok(_) => {
            eprintln!("parley-cli: --mode, --model, --option and --attach go with send");
            None
        }
        Err(e) => {
            eprintln!("parley-cli: {e}");
            None
        }
    }
}
