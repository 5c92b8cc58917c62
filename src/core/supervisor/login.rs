//! A terminal method's sign-in command (ACP `type: "terminal"`, and the
//! legacy `_meta["terminal-auth"]`), run on a pseudo-terminal beneath a
//! guardian like every agent, so it obeys the same no-orphan rules: when
//! it is ended, or dropped, or Parley goes, nothing it started stays.

use std::os::fd::OwnedFd;

use super::*;
use crate::core::auth::{AuthKind, AuthMethod};

/// The sign-in command running on a terminal. The front end reads and
/// writes the terminal's other side ([`LoginTerminal::take_terminal`]); the
/// window hands it to VTE.
pub struct LoginTerminal {
    terminal: Option<OwnedFd>,
    pgid: i32,
    exit: watch::Receiver<Option<ExitStatus>>,
    /// Set when the guardian has exited (everything beneath it is gone).
    gone: watch::Receiver<Option<Option<ExitStatus>>>,
    guardian: Option<process::Guardian>,
    timings: StopTimings,
    /// The command line, for the front end to show.
    pub command_line: String,
    /// Runs once when this is dropped (after `end` too).
    on_drop: Option<Box<dyn FnOnce() + Send>>,
}

impl Drop for LoginTerminal {
    fn drop(&mut self) {
        if let Some(f) = self.on_drop.take() {
            f();
        }
    }
}

impl LoginTerminal {
    /// The terminal's controlling side (the pty master), once.
    pub fn take_terminal(&mut self) -> Option<OwnedFd> {
        self.terminal.take()
    }

    /// `f` runs once when this is dropped.
    pub fn on_drop(&mut self, f: impl FnOnce() + Send + 'static) {
        self.on_drop = Some(Box::new(f));
    }

    /// The command's process group.
    pub fn process_group(&self) -> i32 {
        self.pgid
    }

    /// Waits for the command to exit; `None` if it could not be told.
    pub async fn wait(&mut self) -> Option<ExitStatus> {
        let mut exit = self.exit.clone();
        let mut gone = self.gone.clone();
        let told = tokio::select! {
            s = exit.wait_for(Option::is_some) => Some(s.ok().and_then(|s| *s)),
            _ = gone.wait_for(Option::is_some) => None,
        };
        if let Some(status) = told {
            return status;
        }
        // The guardian ended. Its last word (the status) is read by another
        // task and may still be on its way: a moment for it, then nothing
        // (it was killed without telling).
        let _ = tokio::time::timeout(Duration::from_millis(500), async {
            let _ = exit.wait_for(Option::is_some).await;
        })
        .await;
        *self.exit.borrow()
    }

    /// Ends the command and whatever it started with the stop sequence
    /// (SIGHUP first, as a closed terminal would, then the agents' signals).
    pub async fn end(mut self) {
        process::signal_group(self.pgid, nix::sys::signal::Signal::SIGHUP);
        process::stop_group(self.pgid, self.exit.clone(), self.timings).await;
        if let Some(g) = self.guardian.take() {
            g.release(self.timings.term_grace + GUARDIAN_SLACK).await;
        }
    }
}

impl AgentService {
    /// Runs `command` (found as an agent's command is) on a new
    /// pseudo-terminal beneath a guardian, in a session of its own: the
    /// terminal's controlling side, the command's group, the hold on its
    /// guardian, and where its wait status arrives. Sign-in commands and
    /// the ACP terminals both start this way.
    pub(super) async fn spawn_on_terminal(
        &self,
        remote: Option<&crate::core::remote::Host>,
        command: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
        cwd: &std::path::Path,
    ) -> Result<(OwnedFd, i32, process::Guardian, std::io::PipeReader), StartError> {
        let no_env = std::collections::BTreeMap::new();
        let (program, program_args, prefix, env, cwd) = match remote {
            Some(host) => {
                let (program, args) = self.far_terminal(host, command, args, env, cwd).await?;
                (program, args, &[][..], &no_env, std::path::Path::new("/"))
            }
            None => {
                let (program, args, prefix) = self.launch_target(command, args, env, cwd).await?;
                (program, args, prefix, env, cwd)
            }
        };
        let (master, slave) = process::open_pty().map_err(|e| {
            StartError::plain(crate::i18n::gettext_f(
                "could not open a terminal: {error}",
                &[("error", &e.to_string())],
            ))
        })?;
        let spawned = process::spawn(&process::SpawnSpec {
            program: &program,
            args: &program_args,
            env,
            cwd,
            prefix,
            grace: self.shared.timings.stop.term_grace,
            terminal: Some(&slave),
        })
        .map_err(|e| {
            StartError::plain(crate::i18n::gettext_f(
                "could not start {command}: {error}",
                &[("command", command), ("error", &e.to_string())],
            ))
        })?;
        // Only the command holds the terminal's own side now.
        drop(slave);
        let (pgid, guardian, status) = spawned.into_guarded();
        Ok((master, pgid, guardian, status))
    }

    /// The ssh (or container tool) that runs `command` on a terminal on the
    /// far side: what to start goes first in a private file there (through
    /// a terminal it would be echoed), and the helper starts it from that.
    async fn far_terminal(
        &self,
        host: &crate::core::remote::Host,
        command: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
        cwd: &std::path::Path,
    ) -> Result<(std::path::PathBuf, Vec<String>), StartError> {
        use crate::core::remote::helper::{Launch, FLAG};
        let link = self.shared.hosts.link(host);
        let helper = link.checked(self.shared.timings.handshake_timeout).await?;
        let launch = Launch {
            cwd: cwd.display().to_string(),
            program: command.to_owned(),
            args: args.to_vec(),
            env: env.clone(),
            grace_ms: u64::try_from(self.shared.timings.stop.term_grace.as_millis()).unwrap_or(3000),
        };
        let file = link
            .stash(&helper, &serde_json::to_vec(&launch).unwrap_or_default())
            .await
            .map_err(|e| {
                StartError::plain(crate::i18n::gettext_f(
                    "could not start {command}: {error}",
                    &[("command", command), ("error", &e)],
                ))
            })?;
        Ok(link.far_command(true, &[helper, FLAG.into(), "term".into(), file]))
    }

    /// Starts `method`'s sign-in command for the agent on a new terminal:
    /// the agent's command with the method's arguments and environment
    /// added (the legacy form names a command of its own), in the agent's
    /// directory, with its saved keys.
    pub async fn login_terminal(&self, name: &str, method: &AuthMethod) -> Result<LoginTerminal, StartError> {
        let def = self
            .definition(name)
            .ok_or_else(|| StartError::plain(unknown(name)))?;
        let AuthKind::Terminal { command, args, env } = &method.kind else {
            return Err(StartError::plain(crate::i18n::gettext(
                "this sign-in method does not run in a terminal",
            )));
        };
        let cwd = def.checked_working_dir().map_err(StartError::plain)?;
        let (command, all_args) = match command {
            Some(c) => (c.clone(), args.clone()),
            None => (
                def.command.clone(),
                def.args.iter().chain(args).cloned().collect(),
            ),
        };
        let mut full_env = self.env_with_saved_keys(&def).await;
        full_env.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
        full_env.insert("TERM".into(), "xterm-256color".into());
        full_env.insert("COLORTERM".into(), "truecolor".into());
        let (master, pgid, guardian, status) = self
            .spawn_on_terminal(
                def.remote_host().and_then(Result::ok).as_ref(),
                &command,
                &all_args,
                &full_env,
                &cwd,
            )
            .await?;
        let (exit_tx, exit_rx) = watch::channel(None);
        tokio::spawn(async move {
            if let Some(s) = process::agent_exit(status).await {
                exit_tx.send_replace(Some(s));
            }
        });
        let command_line = std::iter::once(command.as_str())
            .chain(all_args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        self.log(name, format!("parley: sign-in command started: {command_line}"));
        Ok(LoginTerminal {
            terminal: Some(master),
            pgid,
            exit: exit_rx,
            gone: guardian.gone(),
            guardian: Some(guardian),
            timings: self.shared.timings.stop,
            command_line,
            on_drop: None,
        })
    }
}
