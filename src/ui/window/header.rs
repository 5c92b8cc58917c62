//! The header of the selected agent's conversation: its title (the
//! session's own, where the agent gives one), where and how it runs, the
//! branch of a conversation in a worktree, and the context meter and cost.

use super::*;

impl ParleyWindow {
    /// Title, state, context meter and cost of the selected agent. The
    /// session's own title (from the agent) comes first where there is one.
    pub(super) fn update_header(&self, agent: &AgentObject) {
        let imp = self.imp();
        let session_title = agent.session().session_title();
        // A conversation in a worktree: its branch, in sight.
        let branch = self
            .core()
            .chat
            .worktree_info(&agent.name())
            .map(|w| format!(" · {}", w.branch))
            .unwrap_or_default();
        // Its helpers at work, in sight.
        let working = agent.conversation().subagents().working();
        let branch = if working > 0 {
            let n = crate::i18n::fill(
                &crate::i18n::ngettext("{n} subagent working", "{n} subagents working", working),
                &[("n", &working.to_string())],
            );
            format!("{branch} · {n}")
        } else {
            branch
        };
        if session_title.is_empty() {
            // Where it runs in the subtitle: it stays in sight when narrow.
            let on_host = agent.on_host();
            let shown = if on_host.is_empty() {
                agent.shown_as()
            } else {
                format!("{} · {on_host}", agent.shown_as())
            };
            imp.conversation_title.set_title(&agent.title());
            imp.conversation_title.set_subtitle(&format!("{shown}{branch}"));
        } else {
            imp.conversation_title.set_title(&session_title);
            imp.conversation_title.set_subtitle(&format!(
                "{} · {}{branch}",
                agent.title_on_host(),
                agent.shown_as()
            ));
        }
        let (used, size, cost, tokens) = (
            agent.session().usage_used(),
            agent.session().usage_size(),
            agent.session().cost(),
            agent.session().tokens(),
        );
        // A compact "Context 42 %" that folds away with the sidebar at phone width.
        imp.context_meter
            .set_visible((size > 0 || !cost.is_empty() || tokens > 0) && !imp.leaflet.is_folded());
        let mut shown = Vec::new();
        let mut told = Vec::new();
        if size > 0 {
            let percent = (used as f64 * 100.0 / size as f64).clamp(0.0, 100.0).round();
            shown.push(gettext_f(
                "Context {percent} %",
                &[("percent", &percent.to_string())],
            ));
            told.push(gettext_f(
                "Context: {used} of {size} tokens",
                &[("used", &used.to_string()), ("size", &size.to_string())],
            ));
        }
        if tokens > 0 {
            shown.push(crate::i18n::fill(
                &crate::i18n::ngettext("{n} token", "{n} tokens", plural_n(tokens)),
                &[("n", &short_count(tokens))],
            ));
            told.push(crate::i18n::fill(
                &crate::i18n::ngettext(
                    "{n} token used by this session's turns",
                    "{n} tokens used by this session's turns",
                    plural_n(tokens),
                ),
                &[("n", &tokens.to_string())],
            ));
        }
        if !cost.is_empty() {
            shown.push(cost.clone());
            told.push(gettext_f(
                "Cost of this session so far: {cost}",
                &[("cost", &cost)],
            ));
        }
        imp.context_meter.set_label(&shown.join(" · "));
        // "3 files changed": the Changes of the conversation, one click away.
        let files = agent.conversation().files_changed();
        let changed = crate::i18n::fill(
            &crate::i18n::ngettext("{n} file changed", "{n} files changed", files),
            &[("n", &files.to_string())],
        );
        imp.changes_button.set_visible(files > 0);
        imp.changes_button.set_label(&changed);
        // A narrow window shortens it ("39 files c…") rather than stopping
        // at the button's width; the tooltip and the name keep it whole.
        if let Some(label) = imp.changes_button.child().and_downcast::<gtk::Label>() {
            label.set_ellipsize(gtk::pango::EllipsizeMode::End);
            label.set_width_chars(4);
        }
        imp.changes_button.set_tooltip_text(Some(&changed));
        crate::ui::a11y::set_label(&*imp.changes_button, &changed);
        let text = told.join("\n");
        imp.context_meter.set_tooltip_text(Some(&text));
        crate::ui::a11y::set_label(&*imp.context_meter, &told.join(". "));
    }
}

/// A count as the header shows it: 950, 12.3k, 4.5M.
fn short_count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

fn plural_n(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
