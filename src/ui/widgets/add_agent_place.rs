//! Add Agent's "Run on Another Host": a host (`ssh://…`, `toolbox://…`,
//! `distrobox://…`, `podman://…`) and the folder there that the agent
//! added next works in. Off: the agent runs here.

use adw::prelude::*;

use crate::i18n::gettext;

pub struct Place {
    pub expander: adw::ExpanderRow,
    host: adw::EntryRow,
    cwd: adw::EntryRow,
}

impl Place {
    pub fn new() -> Place {
        let expander = adw::ExpanderRow::builder()
            .title(gettext("Run on Another Host"))
            .subtitle(gettext(
                "Over SSH or in a container; only agents that come as an npx or uvx package",
            ))
            .show_enable_switch(true)
            .enable_expansion(false)
            .build();
        let host = adw::EntryRow::builder()
            .title(gettext("Host, e.g. ssh://me@devbox"))
            .build();
        let cwd = adw::EntryRow::builder()
            .title(gettext("Folder on that host, e.g. /home/me/src/app"))
            .build();
        expander.add_row(&host);
        expander.add_row(&cwd);
        // libadwaita 1.2 leaves the row's switch unnamed ("GtkSwitch").
        crate::ui::a11y::for_each_descendant(expander.upcast_ref(), &mut |w| {
            if w.is::<gtk::Switch>() {
                crate::ui::a11y::set_label(w, &gettext("Run on Another Host"));
            }
        });
        Place { expander, host, cwd }
    }

    /// The host and folder to add to: `Ok(None)` when switched off; an
    /// error when switched on with no host (never a silent local add).
    pub fn value(&self) -> Result<Option<(String, String)>, String> {
        if !self.expander.enables_expansion() {
            return Ok(None);
        }
        let host = self.host.text().trim().to_owned();
        if host.is_empty() {
            return Err(gettext(
                "Type the host to run the agent on, or switch Run on Another Host off",
            ));
        }
        Ok(Some((host, self.cwd.text().trim().to_owned())))
    }

    /// The group to put in the dialog: as wide as the registry's list
    /// below it (`boxed_list`'s clamp).
    pub fn widget(&self, width: i32) -> adw::Clamp {
        let list = gtk::ListBox::builder()
            .selection_mode(gtk::SelectionMode::None)
            .css_classes(["boxed-list"])
            .build();
        crate::ui::a11y::set_label(&list, &gettext("Where the agent runs"));
        list.append(&self.expander);
        adw::Clamp::builder()
            .maximum_size(width)
            .margin_start(12)
            .margin_end(12)
            .margin_top(12)
            .child(&list)
            .build()
    }
}

impl Default for Place {
    fn default() -> Self {
        Place::new()
    }
}
