//! Fixed texts that an agent may send and the window must survive and show
//! honestly: `text-fixture NAME` answers fixture NAME as ONE
//! `agent_message_chunk` (as an agent that does not stream would), unlike
//! `echo`, whose answer goes through the prompt's words. `nul` and `bidi`
//! also put their text in every other place an agent's text is shown: a
//! thought, a plan entry, a tool call's title, location, diff and output.

use serde_json::json;

use super::state::Agent;
use super::wire::stream;

/// The fixtures by name, for `text-fixture NAME` and its help line.
pub const NAMES: &[&str] = &["four-fences", "nul", "link", "bidi"];

/// The text of fixture `name`, if there is one.
pub fn fixture(name: &str) -> Option<&'static str> {
    Some(match name {
        // Four fenced blocks with distinct contents, as agents write them
        // when they show Markdown itself: a plain one; a README in a longer
        // fence holding a fence of its own; after inline code in triple
        // backticks, a tilde block holding backticks; one closed by a
        // longer run.
        "four-fences" => concat!(
            "Four blocks:\n\n",
            "```rust\nfn alpha_block() {}\n```\n\n",
            "A README shows its own fence:\n\n",
            "````markdown\n# beta_block\n```sh\nmake beta\n```\n````\n\n",
            "```gamma``` is inline code; a tilde block may hold backticks:\n\n",
            "~~~\n```\ngamma_block\n~~~\n\n",
            "```text\ndelta_block\n`````\n\n",
            "The end.\n",
        ),
        // C0 controls (NUL first), DEL and a C1 control, in prose, inline
        // code and a code block.
        "nul" => concat!(
            "nul:[\u{0}] bell:[\u{7}] esc:[\u{1b}[31m] del:[\u{7f}] nel:[\u{85}]\n\n",
            "`inline\u{0}code`\n\n",
            "```\nblock\u{0}code\u{1b}\n```\n",
        ),
        // A link whose label is a URL other than where it leads.
        "link" => "Sign in at [https://github.com](https://evil.example/login) to go on.\n",
        // A file name that a right-to-left override (U+202E) shows as
        // "invoiceexe.png".
        "bidi" => "Open `invoice\u{202E}gnp.exe` or invoice\u{202E}gnp.exe, not \u{2066}x\u{2069}.\n",
        _ => return None,
    })
}

/// Sends fixture `name` to session `sid`, its text as one chunk or, with
/// `pieces`, streamed as `stream` does; false when there is no such fixture
/// (nothing was sent).
pub(super) async fn send(agent: &Agent, sid: &str, name: &str, pieces: bool) -> bool {
    let Some(text) = fixture(name) else {
        return false;
    };
    let hostile = match name {
        "nul" => Some("file\u{0}name\u{1b}[2J\u{85}.rs"),
        "bidi" => Some("invoice\u{202E}gnp.exe"),
        _ => None,
    };
    if let Some(h) = hostile {
        agent.chunk(sid, "agent_thought_chunk", &format!("thinking about {h}"));
        agent.update(
            sid,
            json!({"sessionUpdate": "plan", "entries": [
                {"content": format!("Rename {h}"), "priority": "high", "status": "pending"}
            ]}),
        );
        agent.update(
            sid,
            json!({"sessionUpdate": "tool_call", "toolCallId": format!("hostile-{name}"),
            "title": format!("Edit {h}"), "kind": "edit", "status": "completed",
            "locations": [{"path": format!("/tmp/{h}"), "line": 1}],
            "content": [
                {"type": "diff", "path": format!("/tmp/{h}"), "oldText": format!("old {h}\n"),
                    "newText": format!("new {h}\n")},
                {"type": "content", "content": {"type": "text", "text": format!("output {h}")}}
            ]}),
        );
    }
    if pieces {
        stream(agent, sid, text, 5).await;
    } else {
        agent.chunk(sid, "agent_message_chunk", text);
    }
    true
}

/// `broken-chunks`: message chunks whose lines are not clean JSON text, as
/// a careless agent writes them. Written raw, since serde_json refuses to
/// produce them: a surrogate pair split across two chunks, a whole pair,
/// invalid UTF-8, and a line that starts with a byte-order mark. Parley
/// keeps every one: `split:[\u{FFFD}\u{FFFD}] pair:[😀] bad:[\u{FFFD}] bom:[ok]`.
pub(super) fn send_broken(agent: &Agent, sid: &str) {
    let sid = serde_json::to_string(sid).unwrap_or_default();
    let line = |text: &[u8]| {
        let mut l = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":{sid},"update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":""#
        )
        .into_bytes();
        l.extend_from_slice(text);
        l.extend_from_slice(b"\"}}}}");
        l
    };
    agent.send_raw(&line(b"split:["));
    agent.send_raw(&line(br"\uD83D"));
    agent.send_raw(&line(br"\uDE00"));
    agent.send_raw(&line(br"] pair:[\uD83D\uDE00] bad:["));
    agent.send_raw(&line(b"\xff\xfe]"));
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(&line(b" bom:[ok]"));
    agent.send_raw(&bom);
}
