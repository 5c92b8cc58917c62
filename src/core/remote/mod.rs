//! Agents where the code is: an agent's `host` (`ssh://`, `toolbox://`,
//! `distrobox://`, `podman://`) and how Parley reaches it.
//!
//! Parley reaches another machine or a container only through the engines
//! the user already has: the system `ssh` (their `~/.ssh/config`, agent and
//! known hosts; `BatchMode`, so a missing key is an error and never a hidden
//! prompt) and the container tools. Everything the agent touches runs on the
//! far side through Parley's own helper ([`helper`]): a copy of one of
//! Parley's programs, put in `~/.cache/parley` there when it is missing or
//! different and checked by its SHA-256 (the supervisor's `hosts`). It starts the agent in a
//! session of its own, serves `fs/*` with the same confinement as locally
//! (`openat2` beneath the cwd), runs terminals, and ends the agent's process
//! group when its channel closes. See docs/architecture.md, "Remote agents".

pub mod helper;

use std::path::PathBuf;

/// The engine that reaches a host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Engine {
    /// `ssh://[user@]host[:port]`; `target` is `[user@]host` (an alias of
    /// `~/.ssh/config` too).
    Ssh {
        target: String,
        port: Option<u16>,
    },
    Toolbox,
    Distrobox,
    Podman,
}

/// Where an agent runs, parsed from its `host`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Host {
    pub engine: Engine,
    /// The host's name as the window shows it ("devbox"), or the
    /// container's name.
    pub name: String,
    /// The configuration's text, as written.
    pub uri: String,
}

/// What a name may hold: letters, digits and `._-`, not starting with `-`
/// (it goes on a command line: never an option).
fn plain_name(s: &str) -> bool {
    !s.is_empty() && !s.starts_with('-') && s.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

impl Host {
    /// Parses `ssh://[user@]host[:port]`, `toolbox://NAME`,
    /// `distrobox://NAME` or `podman://CONTAINER`; the error says what is
    /// wrong in words for the configuration's problem list.
    pub fn parse(uri: &str) -> Result<Host, String> {
        let text = uri.trim();
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(crate::i18n::gettext(
                "not a host: write ssh://[user@]host[:port], toolbox://NAME, distrobox://NAME or podman://CONTAINER",
            ));
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let bad_name = || {
            crate::i18n::gettext_f(
                "“{name}” is not a name Parley can pass on (letters, digits, “.”, “_” and “-”, not starting with “-”)",
                &[("name", rest)],
            )
        };
        let container = |engine: Engine| {
            if plain_name(rest) {
                Ok(Host {
                    engine,
                    name: rest.to_owned(),
                    uri: text.to_owned(),
                })
            } else {
                Err(bad_name())
            }
        };
        match scheme {
            "ssh" => {
                let (user, hostport) = match rest.rsplit_once('@') {
                    Some((u, h)) => (Some(u), h),
                    None => (None, rest),
                };
                let (host, port) = split_port(hostport)?;
                let user_ok = user.is_none_or(plain_name);
                let host_ok = plain_name(host)
                    || (host.contains(':') && host.chars().all(|c| c.is_ascii_hexdigit() || c == ':'));
                if !user_ok || !host_ok {
                    return Err(bad_name());
                }
                let target = match user {
                    Some(u) => format!("{u}@{host}"),
                    None => host.to_owned(),
                };
                Ok(Host {
                    engine: Engine::Ssh { target, port },
                    name: host.to_owned(),
                    uri: text.to_owned(),
                })
            }
            "toolbox" => container(Engine::Toolbox),
            "distrobox" => container(Engine::Distrobox),
            "podman" => container(Engine::Podman),
            other => Err(crate::i18n::gettext_f(
                "unknown host kind “{scheme}”: use ssh, toolbox, distrobox or podman",
                &[("scheme", other)],
            )),
        }
    }

    /// The program and arguments that run `argv` on the far side: with a
    /// terminal (`tty`, the caller's stdin being one) or with plain pipes.
    /// For `ssh`, `control` is the multiplexed connection's socket.
    pub fn far_command(
        &self,
        control: Option<&std::path::Path>,
        tty: bool,
        argv: &[String],
    ) -> (PathBuf, Vec<String>) {
        match &self.engine {
            Engine::Ssh { target, port } => {
                let mut args = ssh_options(*port);
                if let Some(sock) = control {
                    // Only through Parley's connection: with it gone, ssh
                    // fails rather than opening a second one.
                    args.extend([
                        "-S".into(),
                        sock.display().to_string(),
                        "-o".into(),
                        "ControlMaster=no".into(),
                    ]);
                }
                // No escape character: a terminal's `~.` is the command's.
                args.extend(["-e".into(), "none".into()]);
                if tty {
                    // Not "Shared connection to … closed." in the terminal.
                    args.extend(["-tt".into(), "-o".into(), "LogLevel=ERROR".into()]);
                } else {
                    args.push("-T".into());
                }
                args.push("--".into());
                args.push(target.clone());
                // ssh joins its arguments into one line for the far side's
                // shell: each is quoted.
                args.push(argv.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "));
                (ssh_program(), args)
            }
            Engine::Podman => {
                let mut args = vec!["exec".to_owned(), "-i".to_owned()];
                if tty {
                    args.push("-t".into());
                }
                args.push(self.name.clone());
                args.extend(argv.iter().cloned());
                (PathBuf::from("podman"), args)
            }
            Engine::Toolbox => {
                let mut args = vec!["run".to_owned(), "-c".to_owned(), self.name.clone()];
                args.extend(argv.iter().cloned());
                (PathBuf::from("toolbox"), args)
            }
            Engine::Distrobox => {
                let mut args = vec!["enter".to_owned(), self.name.clone(), "--".to_owned()];
                args.extend(argv.iter().cloned());
                (PathBuf::from("distrobox"), args)
            }
        }
    }
}

fn split_port(hostport: &str) -> Result<(&str, Option<u16>), String> {
    let bad_port = || crate::i18n::gettext_f("“{port}” is not a port", &[("port", hostport)]);
    if let Some(inner) = hostport.strip_prefix('[') {
        // [v6-address]:port
        let (addr, after) = inner.split_once(']').ok_or_else(bad_port)?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((addr, Some(p.parse().map_err(|_| bad_port())?))),
            None if after.is_empty() => Ok((addr, None)),
            None => Err(bad_port()),
        };
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => {
            Ok((h, Some(p.parse().ok().filter(|p| *p > 0).ok_or_else(bad_port)?)))
        }
        _ => Ok((hostport, None)),
    }
}

/// The options every ssh of Parley's gets: never a prompt, never an
/// unknown host key taken on trust (the user's own known hosts and
/// `StrictHostKeyChecking` apply), and a dead link noticed within 30 s.
fn ssh_options(port: Option<u16>) -> Vec<String> {
    let mut args: Vec<String> = [
        "-o",
        "BatchMode=yes",
        "-o",
        "ServerAliveInterval=10",
        "-o",
        "ServerAliveCountMax=3",
        "-o",
        "ConnectTimeout=15",
    ]
    .map(str::to_owned)
    .to_vec();
    if let Some(p) = port {
        args.extend(["-p".into(), p.to_string()]);
    }
    args
}

/// The ssh that reaches hosts: the system's, or `PARLEY_SSH` (a program
/// of the same options; the tests' wrapper adds `-F` with their own
/// configuration, as a user's `~/.ssh/config` would be read).
pub fn ssh_program() -> PathBuf {
    std::env::var_os("PARLEY_SSH")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("ssh"))
}

/// The command that holds the multiplexed connection to an `ssh://` host:
/// no command, no stdin, the control socket at `control`, and no
/// `ControlPersist` (the connection lives while Parley holds it).
pub fn master_command(host: &Host, control: &std::path::Path) -> Option<(PathBuf, Vec<String>)> {
    let Engine::Ssh { target, port } = &host.engine else {
        return None;
    };
    let mut args = ssh_options(*port);
    args.extend(
        [
            "-M",
            "-N",
            "-n",
            "-o",
            "ControlMaster=yes",
            "-o",
            "ControlPersist=no",
            "-S",
        ]
        .map(str::to_owned),
    );
    args.push(control.display().to_string());
    args.push("--".into());
    args.push(target.clone());
    Some((ssh_program(), args))
}

/// `'…'` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-=:,+@%".contains(c))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts() {
        let h = Host::parse("ssh://me@devbox").expect("ssh");
        assert_eq!(
            h.engine,
            Engine::Ssh {
                target: "me@devbox".into(),
                port: None
            }
        );
        assert_eq!(h.name, "devbox");
        let h = Host::parse("ssh://me@10.0.0.5:2222").expect("port");
        assert_eq!(
            h.engine,
            Engine::Ssh {
                target: "me@10.0.0.5".into(),
                port: Some(2222)
            }
        );
        assert_eq!(Host::parse("ssh://devbox").expect("alias").name, "devbox");
        let h = Host::parse("ssh://[::1]:22").expect("v6");
        assert_eq!(
            h.engine,
            Engine::Ssh {
                target: "::1".into(),
                port: Some(22)
            }
        );
        assert_eq!(
            Host::parse("toolbox://fedora-41").expect("toolbox").engine,
            Engine::Toolbox
        );
        assert_eq!(Host::parse("podman://dev").expect("podman").name, "dev");
        for bad in [
            "devbox",
            "ftp://x",
            "ssh://-oProxyCommand=x",
            "ssh://a b",
            "ssh://h:0",
            "ssh://h:x",
            "podman://",
            "toolbox://a;b",
        ] {
            assert!(Host::parse(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn quotes_for_the_far_shell() {
        assert_eq!(shell_quote("plain/path"), "plain/path");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        let h = Host::parse("ssh://me@devbox:2222").expect("ssh");
        let (_, args) = h.far_command(
            Some(std::path::Path::new("/run/x")),
            false,
            &["echo".into(), "a b".into()],
        );
        assert_eq!(args.last().map(String::as_str), Some("echo 'a b'"));
        assert!(args.windows(2).any(|w| w == ["-p", "2222"]));
        assert!(!args.iter().any(|a| a.contains("StrictHostKeyChecking")));
    }
}
