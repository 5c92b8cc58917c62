//! Elicitation: the prompt keywords `elicit-form` (a form to fill in) and
//! `elicit-url` (a URL to visit, honest or tricky), each showing the answer.

use std::time::Duration;

use serde_json::json;

use super::state::Agent;

/// `elicit-form`: asks for a name, an age, a colour and a yes or no.
pub(super) async fn form(agent: &Agent, sid: &str) -> String {
    let answer = agent
        .request(
            "elicitation/create",
            json!({"sessionId": sid, "mode": "form",
                "message": "Who are you? The demo agent needs a few details.",
                "requestedSchema": {"type": "object",
                    "properties": {
                        "name": {"type": "string", "title": "Name", "description": "What to call you", "minLength": 2, "maxLength": 40},
                        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
                        "colour": {"type": "string", "title": "Favourite colour", "enum": ["red", "green", "blue"], "default": "green"},
                        "subscribe": {"type": "boolean", "title": "Subscribe to news", "default": false}
                    },
                    "required": ["name"]}}),
        )
        .await;
    agent.chunk(sid, "agent_message_chunk", &format!("elicitation: {answer}"));
    "end_turn".to_string()
}

/// `elicit-url [tricky|userinfo]`: asks the client to visit a URL; on
/// accept, tells it the elicitation is complete.
pub(super) async fn url(agent: &Agent, sid: &str, variant: Option<&str>) -> String {
    // `elicit-url tricky`: an address whose first line is another
    // host's, as an attacker would send it.
    let url = match variant {
        Some("tricky") => format!(
            "https://accounts.google.com{}.evil.example/login",
            "\n".repeat(200)
        ),
        Some("userinfo") => "https://accounts.google.com@evil.example/login".to_owned(),
        _ => "https://example.org/demo/authorize?client=parley&state=42".to_owned(),
    };
    let answer = agent
        .request(
            "elicitation/create",
            json!({"sessionId": sid, "mode": "url", "elicitationId": "demo-e1",
                "url": url,
                "message": "Authorize the demo agent in your browser."}),
        )
        .await;
    if answer["action"] == "accept" {
        tokio::time::sleep(Duration::from_millis(200)).await;
        agent.send(&json!({"jsonrpc": "2.0", "method": "elicitation/complete",
            "params": {"elicitationId": "demo-e1"}}));
    }
    agent.chunk(sid, "agent_message_chunk", &format!("elicitation: {answer}"));
    "end_turn".to_string()
}
