//! Signing in to agents (ACP authentication).
//!
//! - [`service`]: `AuthService`, the sign-in calls: agent methods with
//!   `authenticate`, keys, terminal commands, cancel, sign out.
//! - Beneath it, and below the agents: the methods an agent offers
//!   ([`crate::core::types::auth`], read from `initialize`) and the saved
//!   keys in the keyring ([`crate::core::secrets`], passed in the agent's
//!   environment at every start).
//!
//! The supervisor keeps each agent's sign-in state and reports it as
//! `auth:changed`; the conversations keep the messages that wait for a
//! sign-in and send them again once it succeeds.

pub mod service;

pub use service::AuthService;

pub use crate::core::types::auth::{AuthKind, AuthMethod, AuthStatus, KeyVar};

/// Why an `AuthService` call failed; the text is what `parley-cli` answers
/// and the window shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.text())]
pub enum AuthError {
    UnknownAgent(String),
    UnknownMethod(String),
    /// A terminal method was given where it cannot run.
    NeedsTerminal(String),
    /// These keys must be entered first.
    KeysMissing(Vec<String>),
    /// A value was given for a name the method does not ask for, or empty.
    BadKey(String),
    Keyring(String),
    /// The agent could not be started.
    Start(String),
    /// The agent refused, or the command failed.
    Failed(String),
    Cancelled,
    NoLogout,
    /// A sign-in for this agent is already under way.
    Busy,
    /// A gateway method was chosen without its base URL and headers.
    GatewayMissing(String),
    /// The gateway's address or headers cannot be used (why).
    BadGateway(String),
}

impl AuthError {
    // In a function body, not the attribute: xgettext finds them here.
    fn text(&self) -> String {
        use crate::i18n::{gettext, gettext_f};
        match self {
            AuthError::UnknownAgent(name) => gettext_f("unknown agent: {name}", &[("name", name)]),
            AuthError::UnknownMethod(id) => {
                gettext_f("the agent offers no sign-in method {id}", &[("id", id)])
            }
            AuthError::NeedsTerminal(id) => gettext_f(
                "the sign-in method {id} runs a command in a terminal: use the window, or run it yourself",
                &[("id", id)],
            ),
            AuthError::KeysMissing(names) => {
                gettext_f("enter {names} first", &[("names", &names.join(", "))])
            }
            AuthError::BadKey(name) => gettext_f(
                "{name} is not a value this sign-in method asks for, or it is empty",
                &[("name", name)],
            ),
            AuthError::Keyring(e) | AuthError::Start(e) | AuthError::Failed(e) => e.clone(),
            AuthError::Cancelled => gettext("the sign-in was cancelled"),
            AuthError::NoLogout => gettext("the agent does not offer signing out"),
            AuthError::Busy => gettext("a sign-in to this agent is already under way"),
            AuthError::GatewayMissing(id) => gettext_f(
                "the sign-in method {id} needs a gateway: its base URL, and the headers its requests carry",
                &[("id", id)],
            ),
            AuthError::BadGateway(why) => gettext_f("the gateway cannot be used: {why}", &[("why", why)]),
        }
    }
}

impl From<AuthError> for String {
    fn from(e: AuthError) -> Self {
        e.to_string()
    }
}
