//! The composer below the conversation: the message field and Send, which
//! turns into Stop while the agent answers. Enter sends, Shift+Enter breaks
//! the line, Escape stops the answer, `/` offers the agent's commands.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use gtk::prelude::*;
use gtk::subclass::prelude::*;
use gtk::{gdk, glib};

use crate::i18n::gettext;
use crate::ui::models::AgentObject;
use crate::ui::widgets::slash_completion::SlashCompletion;

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
        /// The agent messages go to.
        #[property(get, set = Self::set_agent, nullable)]
        pub agent: RefCell<Option<AgentObject>>,
        pub handler: RefCell<Option<(AgentObject, glib::SignalHandlerId)>>,
        pub completion: OnceCell<Rc<SlashCompletion>>,
    }

    impl Composer {
        fn set_agent(&self, agent: Option<AgentObject>) {
            if let Some((old, id)) = self.handler.take() {
                old.disconnect(id);
            }
            if let Some(a) = &agent {
                let id = a.connect_answering_notify(glib::clone!(
                    #[weak(rename_to = composer)]
                    self.obj(),
                    move |_| composer.update()
                ));
                self.handler.replace(Some((a.clone(), id)));
            }
            self.agent.replace(agent);
            self.obj().update();
        }
    }

    #[glib::object_subclass]
    impl ObjectSubclass for Composer {
        const NAME: &'static str = "ParleyComposer";
        type Type = super::Composer;
        type ParentType = gtk::Box;

        fn class_init(klass: &mut Self::Class) {
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
                .map(|a| a.commands())
                .unwrap_or_default()
        });
        let _ = imp.completion.set(completion);
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
                match key {
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
        imp.send_button.connect_clicked(glib::clone!(
            #[weak(rename_to = composer)]
            self,
            move |_| {
                if composer.agent().is_some_and(|a| a.answering()) {
                    composer.cancel();
                } else {
                    composer.send();
                }
            }
        ));
    }

    /// Send turns into Stop while a turn runs.
    fn update(&self) {
        let button = &self.imp().send_button;
        if self.agent().is_some_and(|a| a.answering()) {
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

    /// Sends what is written; on failure it goes back into the field.
    pub fn send(&self) {
        let Some(agent) = self.agent() else { return };
        let buffer = self.imp().text.buffer();
        let text = buffer
            .text(&buffer.start_iter(), &buffer.end_iter(), false)
            .to_string();
        if text.trim().is_empty() {
            return;
        }
        buffer.set_text("");
        agent.send(
            text,
            glib::clone!(
                #[weak(rename_to = composer)]
                self,
                move |r: Result<(), (String, String)>| {
                    if let Err((e, text)) = r {
                        // Nothing is lost: the text goes back into the composer.
                        composer.imp().text.buffer().set_text(&text);
                        let _ = composer.activate_action("win.toast", Some(&e.to_variant()));
                    }
                }
            ),
        );
    }

    pub fn cancel(&self) {
        if let Some(agent) = self.agent() {
            agent.cancel();
        }
    }
}
