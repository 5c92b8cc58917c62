//! The composer below the conversation: the message field and Send, which
//! turns into Stop while the agent answers. Enter sends, Shift+Enter breaks
//! the line, Escape stops the answer, `/` offers the agent's commands and
//! `@` its files. Files and images are attached with the file chooser, by
//! dropping them or by pasting, and show as removable chips; the session's
//! options are pickers below (see `option_pickers`).

use std::cell::{OnceCell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;

use gtk::prelude::*;
use gtk::subclass::prelude::*;
use gtk::{gdk, gio, glib};

use crate::core::chat::AttachmentInput;
use crate::i18n::{gettext, gettext_f};
use crate::ui::models::AgentObject;
use crate::ui::widgets::mention_completion::MentionCompletion;
use crate::ui::widgets::option_pickers;
use crate::ui::widgets::slash_completion::SlashCompletion;

mod sending;

/// An attachment waiting in the composer.
#[derive(Clone)]
pub struct Pending {
    pub name: String,
    pub input: AttachmentInput,
}

mod imp {
    use super::*;

    #[derive(Default, gtk::CompositeTemplate, glib::Properties)]
    #[template(file = "composer.ui")]
    #[properties(wrapper_type = super::Composer)]
    pub struct Composer {
        #[template_child]
        pub text: TemplateChild<gtk::TextView>,
        #[template_child]
        pub send_button: TemplateChild<gtk::Button>,
        #[template_child]
        pub steer_button: TemplateChild<gtk::Button>,
        #[template_child]
        pub attach_button: TemplateChild<gtk::Button>,
        #[template_child]
        pub attachments: TemplateChild<super::super::wrap_box::WrapBox>,
        #[template_child]
        pub options: TemplateChild<super::super::wrap_box::WrapBox>,
        /// The agent messages go to.
        #[property(get, set = Self::set_agent, nullable)]
        pub agent: RefCell<Option<AgentObject>>,
        pub handlers: RefCell<crate::ui::models::Handlers>,
        pub completion: OnceCell<Rc<SlashCompletion>>,
        pub mentions: OnceCell<Rc<MentionCompletion>>,
        /// What goes with the next message.
        pub pending: RefCell<Vec<Pending>>,
        /// The shape of the pickers last built (see `option_pickers`).
        pub picker_shape: RefCell<String>,
        /// The open file chooser: GTK does not keep a native dialog alive.
        pub chooser: RefCell<Option<gtk::FileChooserNative>>,
    }

    impl Composer {
        fn set_agent(&self, agent: Option<AgentObject>) {
            for (old, id) in self.handlers.take() {
                old.disconnect(id);
            }
            let obj = self.obj();
            if let Some(a) = &agent {
                let answering = a.conversation().connect_answering_notify(glib::clone!(
                    #[weak(rename_to = composer)]
                    obj,
                    move |_| composer.update()
                ));
                let options = a.session().connect_options_changed(glib::clone!(
                    #[weak(rename_to = composer)]
                    obj,
                    move |session| {
                        let imp = composer.imp();
                        option_pickers::rebuild(&imp.options, Some(session), &imp.picker_shape)
                    }
                ));
                // Once running, the session is opened so the pickers show
                // before the first message.
                let session = a.session().clone();
                let status = a.state().connect_status_notify(move |state| {
                    if state.status() == crate::ui::models::AgentStatus::Ready && session.options().is_empty()
                    {
                        session.prepare();
                    }
                });
                self.handlers.replace(vec![
                    (a.conversation().clone().upcast(), answering),
                    (a.session().clone().upcast(), options),
                    (a.state().clone().upcast(), status),
                ]);
                if a.state().status() == crate::ui::models::AgentStatus::Ready
                    && a.session().options().is_empty()
                {
                    a.session().prepare();
                }
            }
            // Another agent's pickers are built anew.
            self.picker_shape.replace(String::new());
            option_pickers::rebuild(
                &self.options,
                agent.as_ref().map(AgentObject::session),
                &self.picker_shape,
            );
            self.agent.replace(agent);
            obj.update();
        }
    }

    #[glib::object_subclass]
    impl ObjectSubclass for Composer {
        const NAME: &'static str = "ParleyComposer";
        type Type = super::Composer;
        type ParentType = gtk::Box;

        fn class_init(klass: &mut Self::Class) {
            super::super::wrap_box::WrapBox::ensure_type();
            klass.bind_template();
        }

        fn instance_init(obj: &glib::subclass::InitializingObject<Self>) {
            obj.init_template();
        }
    }

    #[glib::derived_properties]
    impl ObjectImpl for Composer {
        fn constructed(&self) {
            self.parent_constructed();
            self.obj().setup();
        }
    }
    impl WidgetImpl for Composer {
        fn grab_focus(&self) -> bool {
            self.text.grab_focus()
        }
    }
    impl BoxImpl for Composer {}
}

glib::wrapper! {
    pub struct Composer(ObjectSubclass<imp::Composer>)
        @extends gtk::Box, gtk::Widget,
        @implements gtk::Buildable, gtk::ConstraintTarget, gtk::Orientable;
}

impl Composer {
    /// The message field.
    pub fn text_view(&self) -> gtk::TextView {
        self.imp().text.get()
    }

    /// The `/` command completion.
    pub fn completion(&self) -> Option<Rc<SlashCompletion>> {
        self.imp().completion.get().cloned()
    }

    /// Send, or Stop while the agent answers.
    pub fn send_button(&self) -> gtk::Button {
        self.imp().send_button.get()
    }

    fn setup(&self) {
        let imp = self.imp();
        let weak = self.downgrade();
        let completion = SlashCompletion::attach(&imp.text, self, move || {
            weak.upgrade()
                .and_then(|c| c.agent())
                .map(|a| a.session().commands())
                .unwrap_or_default()
        });
        let _ = imp.completion.set(completion);
        let weak = self.downgrade();
        let weak_chosen = self.downgrade();
        let mentions = MentionCompletion::attach(
            &imp.text,
            self,
            move |query, done| match weak.upgrade().and_then(|c| c.agent()) {
                Some(agent) => agent.session().find_files(query, done),
                None => done(Vec::new()),
            },
            move |path| {
                let Some(composer) = weak_chosen.upgrade() else {
                    return;
                };
                let Some(root) = composer.agent().and_then(|a| a.session().working_dir()) else {
                    return;
                };
                composer.add(AttachmentInput::Mention(root.join(path)), path.to_owned());
            },
        );
        let _ = imp.mentions.set(mentions);
        imp.attach_button.connect_clicked(glib::clone!(
            #[weak(rename_to = composer)]
            self,
            move |_| composer.choose_files()
        ));
        imp.text.connect_paste_clipboard(glib::clone!(
            #[weak(rename_to = composer)]
            self,
            move |text| {
                if composer.paste(&text.clipboard()) {
                    text.stop_signal_emission_by_name("paste-clipboard");
                }
            }
        ));
        self.add_controller(self.drop_target());
        let keys = gtk::EventControllerKey::new();
        keys.connect_key_pressed(glib::clone!(
            #[weak(rename_to = composer)]
            self,
            #[upgrade_or]
            glib::Propagation::Proceed,
            move |_, key, _, state| {
                if composer.imp().completion.get().is_some_and(|c| c.key(key)) {
                    return glib::Propagation::Stop;
                }
                if composer.imp().mentions.get().is_some_and(|c| c.key(key)) {
                    return glib::Propagation::Stop;
                }
                match key {
                    gdk::Key::Return | gdk::Key::KP_Enter
                        if state.contains(gdk::ModifierType::CONTROL_MASK) && composer.steers() =>
                    {
                        composer.steer();
                        glib::Propagation::Stop
                    }
                    gdk::Key::Return | gdk::Key::KP_Enter
                        if !state.contains(gdk::ModifierType::SHIFT_MASK) =>
                    {
                        composer.send();
                        glib::Propagation::Stop
                    }
                    gdk::Key::Escape => {
                        composer.cancel();
                        glib::Propagation::Stop
                    }
                    _ => glib::Propagation::Proceed,
                }
            }
        ));
        imp.text.add_controller(keys);
        imp.steer_button.connect_clicked(glib::clone!(
            #[weak(rename_to = composer)]
            self,
            move |_| composer.steer()
        ));
        imp.send_button.connect_clicked(glib::clone!(
            #[weak(rename_to = composer)]
            self,
            move |_| {
                if composer.agent().is_some_and(|a| a.conversation().answering()) {
                    composer.cancel();
                } else {
                    composer.send();
                }
            }
        ));
    }

    /// Send turns into Stop while a turn runs (and Steer shows, where the
    /// agent takes a message then).
    fn update(&self) {
        self.imp().steer_button.set_visible(self.steers());
        let button = &self.imp().send_button;
        if self.agent().is_some_and(|a| a.conversation().answering()) {
            button.set_icon_name("media-playback-stop-symbolic");
            crate::ui::a11y::set_label(&**button, &gettext("Stop"));
            button.set_tooltip_text(Some(&gettext("Stop (Escape)")));
            button.remove_css_class("suggested-action");
            button.add_css_class("destructive-action");
        } else {
            button.set_icon_name("mail-send-symbolic");
            crate::ui::a11y::set_label(&**button, &gettext("Send"));
            button.set_tooltip_text(Some(&gettext("Send (Enter)")));
            button.remove_css_class("destructive-action");
            button.add_css_class("suggested-action");
        }
    }

    /// The pickers of the session's options.
    pub fn options_box(&self) -> super::wrap_box::WrapBox {
        self.imp().options.get()
    }

    /// The attachments waiting to be sent.
    pub fn pending(&self) -> Vec<Pending> {
        self.imp().pending.borrow().clone()
    }

    /// The `@` file completion.
    pub fn mentions(&self) -> Option<Rc<MentionCompletion>> {
        self.imp().mentions.get().cloned()
    }

    fn toast(&self, text: &str) {
        let _ = self.activate_action("win.toast", Some(&text.to_variant()));
    }

    /// Adds a file, unless it is plainly refused (too large, an image for an
    /// agent that takes none): then a toast says why.
    pub fn add_file(&self, path: PathBuf) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        let caps = self.agent().and_then(|a| a.session().prompt_capabilities());
        if let Err(e) = crate::core::chat::check_file(&path, caps.as_ref()) {
            self.toast(&e);
            return;
        }
        self.add(AttachmentInput::File(path), name);
    }

    /// Adds image bytes (a pasted or dropped picture) as a PNG.
    pub fn add_image(&self, texture: &gdk::Texture) {
        if self
            .agent()
            .and_then(|a| a.session().prompt_capabilities())
            .is_some_and(|c| !c.image)
        {
            self.toast(&gettext("This agent does not take images"));
            return;
        }
        let data = texture.save_to_png_bytes().to_vec();
        if data.len() as u64 > crate::core::chat::MAX_ATTACHMENT_BYTES {
            self.toast(&gettext_f(
                "The picture is {size} MiB as a PNG; attachments are limited to {limit} MiB",
                &[
                    ("size", &(data.len() >> 20).to_string()),
                    (
                        "limit",
                        &(crate::core::chat::MAX_ATTACHMENT_BYTES >> 20).to_string(),
                    ),
                ],
            ));
            return;
        }
        let n = self
            .imp()
            .pending
            .borrow()
            .iter()
            .filter(|p| matches!(p.input, AttachmentInput::Image { .. }))
            .count()
            + 1;
        let name = gettext_f("Pasted image {n}.png", &[("n", &n.to_string())]);
        self.add(
            AttachmentInput::Image {
                name: name.clone(),
                mime_type: "image/png".into(),
                data,
            },
            name,
        );
    }

    fn add(&self, input: AttachmentInput, name: String) {
        let imp = self.imp();
        if imp.pending.borrow().len() >= crate::core::chat::MAX_ATTACHMENTS {
            self.toast(&gettext_f(
                "at most {count} attachments go with one message",
                &[("count", &crate::core::chat::MAX_ATTACHMENTS.to_string())],
            ));
            return;
        }
        let is_image = matches!(input, AttachmentInput::Image { .. })
            || name.to_lowercase().ends_with(".png")
            || name.to_lowercase().ends_with(".jpg");
        let thumbnail = thumbnail(&input);
        imp.pending.borrow_mut().push(Pending {
            name: name.clone(),
            input,
        });
        let chip = gtk::Box::new(gtk::Orientation::Horizontal, 4);
        chip.set_valign(gtk::Align::Center);
        chip.add_css_class("attachment-chip");
        match thumbnail {
            Some(texture) => {
                chip.add_css_class("with-thumbnail");
                chip.append(&super::attachment_view::picture(&texture));
            }
            None => {
                let icon = if is_image {
                    "image-x-generic-symbolic"
                } else {
                    "text-x-generic-symbolic"
                };
                chip.append(&gtk::Image::from_icon_name(icon));
            }
        }
        let label = gtk::Label::new(Some(&name));
        label.set_ellipsize(gtk::pango::EllipsizeMode::Middle);
        label.set_max_width_chars(28);
        chip.append(&label);
        let remove = gtk::Button::from_icon_name("window-close-symbolic");
        remove.add_css_class("flat");
        remove.add_css_class("circular");
        let remove_label = gettext_f("Remove attachment {name}", &[("name", &name)]);
        remove.set_tooltip_text(Some(&remove_label));
        crate::ui::a11y::set_label(&remove, &remove_label);
        chip.append(&remove);
        crate::ui::a11y::set_label(&chip, &gettext_f("Attachment {name}", &[("name", &name)]));
        imp.attachments.append(&chip);
        imp.attachments.set_visible(true);
        remove.connect_clicked(glib::clone!(
            #[weak(rename_to = composer)]
            self,
            #[weak]
            chip,
            move |_| composer.remove_chip(&chip)
        ));
    }

    fn remove_chip(&self, chip: &gtk::Box) {
        let imp = self.imp();
        let mut index = 0;
        let mut child = imp.attachments.first_child();
        while let Some(c) = child {
            if &c == chip.upcast_ref::<gtk::Widget>() {
                imp.attachments.remove(&c);
                if index < imp.pending.borrow().len() {
                    imp.pending.borrow_mut().remove(index);
                }
                break;
            }
            index += 1;
            child = c.next_sibling();
        }
        imp.attachments.set_visible(!imp.pending.borrow().is_empty());
        imp.text.grab_focus();
    }

    /// The first `sent` attachments went with a message; any added while
    /// it was on its way stay.
    fn remove_sent(&self, sent: usize) {
        let imp = self.imp();
        for _ in 0..sent {
            if imp.pending.borrow().is_empty() {
                break;
            }
            imp.pending.borrow_mut().remove(0);
            if let Some(c) = imp.attachments.first_child() {
                imp.attachments.remove(&c);
            }
        }
        imp.attachments.set_visible(!imp.pending.borrow().is_empty());
    }

    /// The native file chooser (the portal's, in a sandbox).
    pub fn choose_files(&self) {
        let window = self.root().and_downcast::<gtk::Window>();
        let chooser = gtk::FileChooserNative::new(
            Some(&gettext("Attach Files")),
            window.as_ref(),
            gtk::FileChooserAction::Open,
            Some(&gettext("Attach")),
            None,
        );
        chooser.set_select_multiple(true);
        if let Some(dir) = self.agent().and_then(|a| a.session().working_dir()) {
            let _ = chooser.set_current_folder(Some(&gio::File::for_path(dir)));
        }
        chooser.connect_response(glib::clone!(
            #[weak(rename_to = composer)]
            self,
            move |chooser, response| {
                if response == gtk::ResponseType::Accept {
                    let files = chooser.files();
                    for f in files.iter::<gio::File>().flatten() {
                        if let Some(path) = f.path() {
                            composer.add_file(path);
                        }
                    }
                }
                chooser.destroy();
                composer.imp().chooser.replace(None);
            }
        ));
        chooser.show();
        self.imp().chooser.replace(Some(chooser));
    }

    /// Files or a picture in the clipboard are attached (`true`); text is
    /// left to the text view.
    fn paste(&self, clipboard: &gdk::Clipboard) -> bool {
        let formats = clipboard.formats();
        if formats.contains_type(gdk::FileList::static_type()) {
            clipboard.read_value_async(
                gdk::FileList::static_type(),
                glib::Priority::DEFAULT,
                gio::Cancellable::NONE,
                glib::clone!(
                    #[weak(rename_to = composer)]
                    self,
                    move |r| {
                        if let Ok(files) = r.and_then(|v| {
                            v.get::<gdk::FileList>()
                                .map_err(|e| glib::Error::new(gio::IOErrorEnum::Failed, &e.to_string()))
                        }) {
                            for f in files.files() {
                                if let Some(p) = f.path() {
                                    composer.add_file(p);
                                }
                            }
                        }
                    }
                ),
            );
            return true;
        }
        if formats.contains_type(gdk::Texture::static_type()) {
            clipboard.read_texture_async(
                gio::Cancellable::NONE,
                glib::clone!(
                    #[weak(rename_to = composer)]
                    self,
                    move |r| match r {
                        Ok(Some(texture)) => composer.add_image(&texture),
                        Ok(None) => {}
                        Err(e) => composer.toast(&e.to_string()),
                    }
                ),
            );
            return true;
        }
        false
    }

    /// What a drop brought: files or a picture are attached (`true`).
    pub fn take_drop(&self, value: &glib::Value) -> bool {
        if let Ok(files) = value.get::<gdk::FileList>() {
            for f in files.files() {
                if let Some(p) = f.path() {
                    self.add_file(p);
                }
            }
            return true;
        }
        if let Ok(texture) = value.get::<gdk::Texture>() {
            self.add_image(&texture);
            return true;
        }
        false
    }

    /// Files and pictures dropped here (the window adds one to the
    /// conversation too) are attached.
    pub fn drop_target(&self) -> gtk::DropTarget {
        let target = gtk::DropTarget::new(glib::Type::INVALID, gdk::DragAction::COPY);
        target.set_types(&[gdk::FileList::static_type(), gdk::Texture::static_type()]);
        target.connect_drop(glib::clone!(
            #[weak(rename_to = composer)]
            self,
            #[upgrade_or]
            false,
            move |_, value, _, _| composer.take_drop(value)
        ));
        target
    }

    pub fn cancel(&self) {
        if let Some(agent) = self.agent() {
            agent.conversation().cancel();
        }
    }
}

/// A picture of an image about to be sent: pasted bytes, or a picture file
/// of at most 16 MB (a bigger one keeps its icon rather than stall typing).
fn thumbnail(input: &AttachmentInput) -> Option<gtk::gdk::Texture> {
    match input {
        AttachmentInput::Image { data, .. } => super::attachment_view::from_bytes(data),
        AttachmentInput::File(path) => {
            let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= 16 << 20);
            (crate::core::chat::image_mime(path).is_some() && small)
                .then(|| super::attachment_view::from_file(path))
                .flatten()
        }
        AttachmentInput::Mention(_) => None,
    }
}
