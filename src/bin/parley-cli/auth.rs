//! `parley-cli auth`: signing in to an agent from a terminal.

use std::io::Write;
use std::process::ExitCode;

use parley::core::services::Core;
use parley::i18n::{gettext, gettext_f};
use tokio::io::AsyncBufReadExt;

use crate::common::*;

/// `auth AGENT`: the agent's sign-in status and methods (one JSON line).
/// `auth AGENT METHOD`: signs in. The values an `env_var` method (or an
/// agent method's key) wants are read from standard input, one line each in
/// the method's order, never from the arguments; a terminal method's
/// command runs on a terminal whose input and output are this program's.
pub fn auth(args: &[String]) -> ExitCode {
    let Some((rest, config)) = words_and_config(args) else {
        return ExitCode::from(2);
    };
    let (agent, method) = match rest.as_slice() {
        [agent] => (agent.clone(), None),
        [agent, method] => (agent.clone(), Some(method.clone())),
        _ => return usage(),
    };
    let rt = runtime();
    let code = rt.block_on(async move {
        let Some((core, _rx)) = core(config, false) else {
            return 2;
        };
        let result = match method {
            None => core.auth.methods(&agent).await.map(|_| ()).map_err(String::from),
            Some(method) => auth_sign_in(&core, &agent, &method).await,
        };
        let code = match result {
            Ok(()) => {
                if let Ok(status) = core.auth.status(&agent) {
                    println!("{}", serde_json::to_string(&status).unwrap_or_default());
                }
                0
            }
            Err(e) => {
                eprintln!("parley-cli: {e}");
                1
            }
        };
        core.shutdown().await;
        code
    });
    ExitCode::from(code)
}

pub async fn auth_sign_in(core: &Core, agent: &str, method_id: &str) -> Result<(), String> {
    use parley::core::auth::AuthKind;
    use parley::core::secrets::Secret;
    let status = core.auth.methods(agent).await?;
    let method = status
        .methods
        .iter()
        .find(|m| m.id == method_id)
        .ok_or_else(|| parley::core::auth::AuthError::UnknownMethod(method_id.to_owned()).to_string())?;
    if let AuthKind::Terminal { .. } = method.kind {
        let mut terminal = core.auth.login_terminal(agent, method_id).await?;
        let Some(master) = terminal.take_terminal() else {
            return Err(gettext("the terminal could not be opened"));
        };
        relay_terminal(master);
        let status = terminal.wait().await;
        tokio::spawn(terminal.end());
        return core
            .auth
            .login_finished(agent, status)
            .await
            .map_err(String::from);
    }
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    if let AuthKind::Gateway { .. } = method.kind {
        return gateway_sign_in(core, agent, method_id, &mut lines).await;
    }
    let mut values = Vec::new();
    for key in method.keys() {
        // On a terminal: a prompt, and what is typed is not shown.
        let _hidden = NoEcho::on_terminal(&key.name);
        let line = lines.next_line().await.ok().flatten().unwrap_or_default();
        let value = line.trim_end_matches(['\r', '\n']).to_owned();
        if value.is_empty() {
            if key.optional {
                continue;
            }
            return Err(gettext_f(
                "{name}: no value on standard input",
                &[("name", &key.name)],
            ));
        }
        values.push((key.name.clone(), Secret::new(value)));
    }
    core.auth
        .sign_in(agent, method_id, values)
        .await
        .map_err(String::from)
}

/// A gateway method's values from standard input: the base URL on the
/// first line, then one header a line as `Name: value` (the values are not
/// shown on a terminal), up to an empty line or the end.
async fn gateway_sign_in(
    core: &Core,
    agent: &str,
    method_id: &str,
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::io::Stdin>>,
) -> Result<(), String> {
    use parley::core::types::gateway::Gateway;
    // SAFETY: isatty on fd 0.
    if unsafe { libc::isatty(0) } == 1 {
        eprint!("{}", gettext("Base URL: "));
    }
    let url = lines.next_line().await.ok().flatten().unwrap_or_default();
    let mut headers = serde_json::Map::new();
    loop {
        let _hidden = NoEcho::on_terminal(&gettext("Header (Name: value, empty to end)"));
        let line = lines.next_line().await.ok().flatten().unwrap_or_default();
        let line = line.trim();
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(gettext("a header is written as Name: value"));
        };
        headers.insert(
            name.trim().to_owned(),
            serde_json::Value::String(value.trim().to_owned()),
        );
    }
    let args = serde_json::json!({"baseUrl": url.trim(), "headers": headers});
    let gateway = Gateway::from_args(method_id, &args)
        .map_err(|why| parley::core::auth::AuthError::BadGateway(why).to_string())?;
    core.auth
        .sign_in_gateway(agent, method_id, gateway)
        .await
        .map_err(String::from)
}

/// Copies this program's input to the terminal and the terminal's output
/// to this program's, until the command ends (threads: both sides block).
pub fn relay_terminal(master: std::os::fd::OwnedFd) {
    let Ok(input) = master.try_clone() else { return };
    std::thread::spawn(move || {
        let mut to = std::fs::File::from(input);
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut to);
    });
    std::thread::spawn(move || {
        let mut from = std::fs::File::from(master);
        let mut out = std::io::stdout();
        let mut buf = [0u8; 4096];
        // The terminal's side reads EIO once the command and all it
        // started have closed it.
        while let Ok(n) = std::io::Read::read(&mut from, &mut buf) {
            if n == 0 || out.write_all(&buf[..n]).and_then(|_| out.flush()).is_err() {
                break;
            }
        }
    });
}

/// Turns the terminal's echo off while a value is typed (and back on when
/// dropped); does nothing when standard input is not a terminal.
pub struct NoEcho(Option<libc::termios>);

impl NoEcho {
    pub fn on_terminal(name: &str) -> Self {
        // SAFETY: isatty, tcgetattr and tcsetattr on fd 0 with a termios we own.
        unsafe {
            if libc::isatty(0) != 1 {
                return NoEcho(None);
            }
            eprint!("{name}: ");
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return NoEcho(None);
            }
            let saved = t;
            t.c_lflag &= !libc::ECHO;
            libc::tcsetattr(0, libc::TCSANOW, &t);
            NoEcho(Some(saved))
        }
    }
}

impl Drop for NoEcho {
    fn drop(&mut self) {
        if let Some(saved) = self.0.take() {
            // SAFETY: restores the settings read in `on_terminal`.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &saved);
            }
            eprintln!();
        }
    }
}
