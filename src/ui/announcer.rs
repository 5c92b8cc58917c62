//! What a screen reader hears about the selected agent without leaving the
//! composer (see `a11y::announce`): its state, a permission request the
//! moment it comes (with the keys that answer it), the start of the
//! answer when the turn ends, a session notice, and its sign-in: needed,
//! and done.

use gtk::glib;
use gtk::prelude::*;

use crate::core::types::message::{Part, Role};
use crate::i18n::{gettext, gettext_f};
use crate::ui::models::{AgentObject, MessageObject, PermissionObject};
use crate::ui::widgets::{Composer, PermissionBanner};

/// What a screen reader hears about the selected agent without leaving
/// the composer: its state, a permission request the moment it comes
/// (with the shortcuts that answer it), and the answer when it is done.
pub fn watch(
    agent: &AgentObject,
    banner: &PermissionBanner,
    composer: &Composer,
) -> Vec<(glib::Object, glib::SignalHandlerId)> {
    use crate::ui::a11y::{announce, Priority};
    let status = agent.state().connect_status_notify(glib::clone!(
        #[weak]
        agent,
        #[weak]
        composer,
        move |_| {
            let text = format!("{}: {}", agent.title(), agent.shown_as());
            announce(&composer, &text, Priority::Medium);
        }
    ));
    // Said a moment later, through the composer: the sign-in page that
    // had the focus is rebuilt (or gone) by then, and what was said on it
    // would be lost with it.
    let sign_in = agent.sign_in().connect_needs_sign_in_notify(glib::clone!(
        #[weak]
        agent,
        #[weak]
        composer,
        move |_| {
            let text = if agent.sign_in().needs_sign_in() {
                let words = agent
                    .sign_in()
                    .status()
                    .and_then(|s| s.message)
                    .map(|m| format!(" {}.", crate::ui::markdown::visible(&m).trim_end_matches('.')))
                    .unwrap_or_default();
                format!(
                    "{}{words} {}",
                    gettext_f(
                        "Sign-in needed: sign in to {agent}.",
                        &[("agent", &agent.title())]
                    ),
                    gettext("Your message waits and is sent once you are signed in."),
                )
            } else {
                gettext_f("Signed in to {agent}", &[("agent", &agent.title())])
            };
            glib::idle_add_local_once(glib::clone!(
                #[weak]
                composer,
                move || announce(&composer, &text, Priority::High)
            ));
        }
    ));
    let permission = agent.conversation().connect_local(
        "permission-requested",
        false,
        glib::clone!(
            #[weak]
            banner,
            #[upgrade_or]
            None,
            move |args| {
                let p = args.get(1).and_then(|v| v.get::<PermissionObject>().ok())?;
                let request = p.request();
                let keys: Vec<String> = request
                    .options
                    .iter()
                    .take(4)
                    .enumerate()
                    .map(|(i, o)| format!("Alt+{}: {}", i + 1, crate::ui::markdown::visible(&o.name)))
                    .collect();
                let title = crate::ui::markdown::visible(&request.tool_call.title);
                let text = match &request.subagent {
                    Some(s) => gettext_f(
                        "Its subagent {agent} asks to run a tool: {title}. {keys}",
                        &[
                            ("agent", &crate::ui::markdown::visible(&s.title)),
                            ("title", &title),
                            ("keys", &keys.join(", ")),
                        ],
                    ),
                    None => gettext_f(
                        "The agent asks to run a tool: {title}. {keys}",
                        &[("title", &title), ("keys", &keys.join(", "))],
                    ),
                };
                announce(&banner, &text, Priority::High);
                None
            }
        ),
    );
    let notice = agent.conversation().connect_local(
        "notice",
        false,
        glib::clone!(
            #[weak]
            composer,
            #[upgrade_or]
            None,
            move |args| {
                let arg = |i: usize| args.get(i).and_then(|v| v.get::<String>().ok());
                let n = crate::core::types::notice::Notice {
                    severity: arg(1)?,
                    title: arg(2)?,
                    description: arg(3).filter(|d| !d.is_empty()),
                };
                let urgent = matches!(n.severity.as_str(), "warning" | "error");
                let priority = if urgent { Priority::High } else { Priority::Medium };
                announce(&composer, &crate::ui::widgets::notice_parts::spoken(&n), priority);
                None
            }
        ),
    );
    // A helper that stops working: how it ended.
    let threads = agent.conversation().subagents();
    let helper = threads.connect_ended(glib::clone!(
        #[weak]
        composer,
        move |o| {
            let s = o.info();
            let text = crate::ui::widgets::subagent_view::spoken(&s);
            announce(&composer, &text, Priority::Medium);
        }
    ));
    let ended = agent.conversation().connect_local(
        "turn-ended",
        false,
        glib::clone!(
            #[weak]
            agent,
            #[weak]
            composer,
            #[upgrade_or]
            None,
            move |_| {
                // A prompt refused for want of a sign-in: that is what was
                // said (above), not "done".
                if agent.sign_in().needs_sign_in() {
                    return None;
                }
                let text = last_answer(&agent)
                    .map(|answer| {
                        gettext_f(
                            "{agent} answered: {answer}",
                            &[("agent", &agent.title()), ("answer", &answer)],
                        )
                    })
                    .unwrap_or_else(|| gettext_f("{agent} is done.", &[("agent", &agent.title())]));
                announce(&composer, &text, Priority::Medium);
                None
            }
        ),
    );
    vec![
        (agent.state().clone().upcast(), status),
        (agent.sign_in().clone().upcast(), sign_in),
        (agent.conversation().clone().upcast(), permission),
        (agent.conversation().clone().upcast(), notice),
        (agent.conversation().clone().upcast(), ended),
        (threads.upcast(), helper),
    ]
}

/// The start of the agent's last answer (about 300 characters), as text.
fn last_answer(agent: &AgentObject) -> Option<String> {
    let store = agent.conversation().loaded_messages()?;
    let last = (0..store.n_items())
        .rev()
        .filter_map(|i| store.item(i).and_downcast::<MessageObject>())
        .find(|m| m.with(|m| m.role == Role::Agent).unwrap_or(false))?;
    // Only the start is said: rendering a 4 MB answer would stall the
    // window for seconds at the end of a flood.
    let head: String = last.with(|m| {
        let mut head = String::new();
        for text in m.parts.iter().filter_map(|p| match p {
            Part::Text { text } => Some(text),
            _ => None,
        }) {
            if !head.is_empty() {
                head.push_str("\n\n");
            }
            head.extend(text.chars().take(2000usize.saturating_sub(head.len())));
            if head.len() >= 2000 {
                break;
            }
        }
        head
    })?;
    let text = crate::ui::markdown::plain_text(&head);
    let mut short: String = text.chars().take(300).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    (!short.is_empty()).then_some(short)
}
