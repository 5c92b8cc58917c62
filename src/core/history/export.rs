//! A conversation as Markdown (the window's Export, `parley-cli export`):
//! who said what, the agent's text as it wrote it, thoughts quoted, tool
//! calls as a line with their status and diffs as `diff` blocks, plans as
//! task lists, attachments by name.

use std::fmt::Write;

use crate::core::types::message::{self, Message, Part, Role};
use crate::core::types::subagent::SubagentThread;
use crate::i18n::gettext;

/// A fence longer than any run of backticks in `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat(longest.max(2) + 1)
}

fn quoted(text: &str) -> String {
    text.lines().map(|l| format!("> {l}\n")).collect()
}

/// The Markdown of `messages`, headed by `title`; each subagent's thread
/// (of `threads`) where it was started, quoted one level deeper.
pub fn markdown(title: &str, agent: &str, messages: &[Message], threads: &[SubagentThread]) -> String {
    let mut out = String::new();
    let title = if title.trim().is_empty() {
        gettext("Conversation")
    } else {
        title.trim().to_owned()
    };
    let _ = writeln!(out, "# {}\n", title.replace('\n', " "));
    for m in messages {
        let who = match m.role {
            Role::User => gettext("You"),
            Role::Agent => agent.to_owned(),
            Role::System => gettext("Parley"),
        };
        let _ = writeln!(out, "## {who} · {}\n", m.created_at);
        message_markdown(&mut out, m, threads, 0);
    }
    out
}

/// A thread nests at most this deep in an export (a child's child's …).
const MAX_DEPTH: usize = 8;

fn subagent_markdown(out: &mut String, t: &SubagentThread, threads: &[SubagentThread], depth: usize) {
    if depth >= MAX_DEPTH {
        return;
    }
    let mut inner = String::new();
    let status = crate::core::types::message::wire_name(&t.subagent.status);
    let _ = writeln!(
        inner,
        "### {} · {} ({status})\n",
        gettext("Subagent"),
        t.subagent.title.replace('\n', " ")
    );
    for m in &t.messages {
        message_markdown(&mut inner, m, threads, depth + 1);
    }
    out.push_str(&quoted(inner.trim_end()));
    out.push('\n');
}

fn message_markdown(out: &mut String, m: &Message, threads: &[SubagentThread], depth: usize) {
    for part in &m.parts {
        match part {
            Part::Subagent { session_id } => {
                if let Some(t) = threads.iter().find(|t| t.subagent.session_id == *session_id) {
                    subagent_markdown(out, t, threads, depth);
                }
            }
            Part::SessionNote(n) => {
                let _ = writeln!(out, "*{}*\n", gettext("Between sessions:"));
                let _ = writeln!(out, "{}", quoted(n.text.trim_end()));
            }
            Part::Text { text } => {
                let _ = writeln!(out, "{}\n", text.trim_end());
            }
            Part::Thought { text } => {
                let _ = writeln!(out, "{}", quoted(text.trim_end()));
            }
            Part::Tool(t) => {
                let _ = writeln!(
                    out,
                    "- **{}** ({}, {})",
                    t.title.replace('\n', " "),
                    message::wire_name(&t.kind),
                    message::wire_name(&t.status)
                );
                for d in &t.diffs {
                    let body: String = d
                        .old_text
                        .lines()
                        .map(|l| format!("-{l}\n"))
                        .chain(d.new_text.lines().map(|l| format!("+{l}\n")))
                        .collect();
                    let f = fence(&body);
                    let _ = writeln!(out, "\n  `{}`\n\n{f}diff\n{body}{f}", d.path);
                }
                out.push('\n');
            }
            Part::Plan {
                markdown: Some(md), ..
            } => {
                let _ = writeln!(out, "{}\n", md.trim_end());
            }
            Part::Notice(n) => {
                let detail = n
                    .description
                    .as_deref()
                    .map(|d| format!(" {d}"))
                    .unwrap_or_default();
                let _ = writeln!(out, "> **{}**: {}{detail}\n", n.severity, n.title);
            }
            Part::Compaction(c) => {
                let _ = writeln!(
                    out,
                    "---\n\n*{}*\n",
                    gettext("The agent compacted the conversation")
                );
                for line in c.summary.lines() {
                    let _ = writeln!(out, "> {line}");
                }
                out.push('\n');
            }
            Part::Plan { entries, .. } => {
                for e in entries {
                    let done = if message::wire_name(&e.status) == "completed" {
                        "x"
                    } else {
                        " "
                    };
                    let _ = writeln!(out, "- [{done}] {}", e.content.replace('\n', " "));
                }
                out.push('\n');
            }
            Part::Attachment(a) => {
                let _ = writeln!(out, "📎 {} ({})\n", a.name, a.uri);
            }
        }
    }
    if let Some(e) = &m.error {
        let _ = writeln!(out, "*{}*\n", e.replace('\n', " "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::types::message::{Diff, ToolCall};

    #[test]
    fn code_in_the_answer_keeps_its_fences() {
        let mut q = Message::new("m1".into(), "demo", Role::User);
        q.parts.push(Part::Text {
            text: "Show ````` fences".into(),
        });
        let mut a = Message::new("m2".into(), "demo", Role::Agent);
        a.parts.push(Part::Thought {
            text: "thinking\nhard".into(),
        });
        a.parts.push(Part::Text {
            text: "```rust\nfn x() {}\n```".into(),
        });
        a.parts.push(Part::Tool(ToolCall {
            title: "Edit a.rs".into(),
            diffs: vec![Diff {
                path: "a.rs".into(),
                old_text: "a ```` b".into(),
                new_text: "c".into(),
                new_file: false,
            }],
            ..ToolCall::default()
        }));
        let md = markdown("Fences", "demo", &[q, a], &[]);
        assert!(md.starts_with("# Fences\n"), "{md}");
        assert!(md.contains("## You · "), "{md}");
        assert!(md.contains("> thinking\n> hard\n"), "{md}");
        assert!(md.contains("```rust\nfn x() {}\n```"), "{md}");
        // The diff's fence is longer than the backticks inside it.
        assert!(md.contains("`````diff\n-a ```` b\n+c\n`````"), "{md}");
    }
}
