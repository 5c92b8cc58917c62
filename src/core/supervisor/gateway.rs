//! A saved gateway (`types::gateway`) is sent again after every
//! `initialize`: the agents keep a gateway sign-in in memory only, and
//! gemini-cli remembers that it was one, not where it goes.

use super::*;
use crate::core::acp::{calls, Connection};
use crate::core::secrets;
use crate::core::types::auth::{AuthKind, AuthMethod};
use crate::core::types::gateway::{Gateway, GATEWAY_ITEM};

/// How long the agent may take to take it.
const GATEWAY_LIMIT: Duration = Duration::from_secs(15);

impl AgentService {
    /// The agent's saved gateway, if any (from the keyring).
    pub async fn saved_gateway(&self, name: &str) -> Option<Gateway> {
        let scope = self.scope();
        if !secrets::saved_names(&scope, name)
            .iter()
            .any(|n| n == GATEWAY_ITEM)
        {
            return None;
        }
        match secrets::load(&scope, name).await {
            Ok(values) => values
                .iter()
                .find(|(n, _)| n == GATEWAY_ITEM)
                .and_then(|(_, v)| Gateway::from_saved(v.expose())),
            Err(e) => {
                self.log(name, format!("parley: the saved gateway could not be read: {e}"));
                None
            }
        }
    }

    /// Sends the saved gateway where the agent still offers its method. A
    /// refusal marks the agent as needing a sign-in, with the agent's words.
    pub(super) async fn send_saved_gateway(&self, name: &str, conn: &Connection, methods: &[AuthMethod]) {
        let Some(gateway) = self.saved_gateway(name).await else {
            return;
        };
        let offered = methods
            .iter()
            .any(|m| m.id == gateway.method && matches!(m.kind, AuthKind::Gateway { .. }));
        if !offered {
            self.log(
                name,
                format!(
                    "parley: the agent no longer offers the gateway method {}; the saved gateway was not sent",
                    gateway.method
                ),
            );
            return;
        }
        let sent = tokio::time::timeout(
            GATEWAY_LIMIT,
            calls::authenticate(conn, &gateway.method, Some(gateway.meta())),
        )
        .await;
        let why = match sent {
            Ok(Ok(())) => {
                self.log(
                    name,
                    format!("parley: the saved gateway ({}) was sent", gateway.host()),
                );
                return;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => crate::i18n::gettext("the agent did not take the saved gateway in time"),
        };
        self.log(name, format!("parley: the saved gateway was refused: {why}"));
        self.set_needs_sign_in(name, Some(why));
    }
}
