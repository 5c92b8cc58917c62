//! The GApplication: single instance, actions and accelerators, opening
//! files from the command line, quitting with every agent stopped. The
//! application owns the model (and through it the core): every window shows
//! it.

use std::cell::RefCell;
use std::path::PathBuf;

use adw::prelude::*;
use adw::subclass::prelude::*;
use gtk::{gio, glib};

use crate::core::services::Options;
use crate::i18n::gettext;
use crate::ui::models::AppModel;
use crate::ui::runtime;
use crate::ui::window::ParleyWindow;
use crate::ui::APP_ID;

mod imp {
    use super::*;

    #[derive(Default)]
    pub struct ParleyApplication {
        /// Set when the first window opens; taken at shutdown.
        pub model: RefCell<Option<AppModel>>,
        /// The windows' GSettings (size, maximized), read once.
        pub settings: std::cell::OnceCell<Option<gio::Settings>>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for ParleyApplication {
        const NAME: &'static str = "ParleyApplication";
        type Type = super::ParleyApplication;
        type ParentType = adw::Application;
    }

    impl ObjectImpl for ParleyApplication {}
    impl ApplicationImpl for ParleyApplication {
        fn shutdown(&self) {
            // Quitting stops every agent with the spec's sequence, and waits.
            if let Some(model) = self.model.take() {
                runtime::runtime().block_on(model.core().shutdown());
            }
            self.parent_shutdown();
        }
    }
    impl GtkApplicationImpl for ParleyApplication {}
    impl AdwApplicationImpl for ParleyApplication {}
}

glib::wrapper! {
    pub struct ParleyApplication(ObjectSubclass<imp::ParleyApplication>)
        @extends adw::Application, gtk::Application, gio::Application,
        @implements gio::ActionGroup, gio::ActionMap;
}

impl ParleyApplication {
    /// The model, once the first window has opened.
    pub fn model(&self) -> Option<AppModel> {
        self.imp().model.borrow().clone()
    }

    /// The windows' settings; `None` without the schema.
    pub fn settings(&self) -> Option<gio::Settings> {
        self.imp()
            .settings
            .get_or_init(crate::ui::settings::settings)
            .clone()
    }
}

/// A window over `model`, remembering its size in the application's
/// settings.
fn new_window(app: &adw::Application, model: &AppModel) -> ParleyWindow {
    let settings = match app.downcast_ref::<ParleyApplication>() {
        Some(app) => app.settings(),
        None => crate::ui::settings::settings(),
    };
    ParleyWindow::with_settings(app, model, settings)
}

/// The model of `app`, whichever kind of application it is.
fn model_of(app: &adw::Application) -> Option<AppModel> {
    app.downcast_ref::<ParleyApplication>()?.model()
}

/// The app's stylesheet, compiled into the binary.
pub fn load_css() {
    let provider = gtk::CssProvider::new();
    provider.load_from_data(include_str!("style.css"));
    if let Some(display) = gtk::gdk::Display::default() {
        gtk::style_context_add_provider_for_display(
            &display,
            &provider,
            gtk::STYLE_PROVIDER_PRIORITY_APPLICATION,
        );
    }
}

/// The window an action is for: the active one, else any.
fn window(app: &adw::Application) -> Option<ParleyWindow> {
    app.active_window()
        .and_then(|w| w.downcast::<ParleyWindow>().ok())
        .or_else(|| {
            app.windows()
                .into_iter()
                .find_map(|w| w.downcast::<ParleyWindow>().ok())
        })
}

/// The core and its window, created on first activation (with the file given
/// on the command line, if any).
fn ensure_window(app: &adw::Application, config: Option<PathBuf>) -> Option<ParleyWindow> {
    if let Some(w) = window(app) {
        return Some(w);
    }
    let (core, rx) = match runtime::start_core(Options {
        config_path: config,
        ..Default::default()
    }) {
        Ok(c) => c,
        Err(e) => {
            let dialog = adw::MessageDialog::new(
                None::<&gtk::Window>,
                Some(&gettext("Parley Cannot Start")),
                Some(&e),
            );
            dialog.add_response("close", &gettext("_Close"));
            crate::ui::a11y::name_mnemonics(&dialog);
            dialog.set_application(Some(app));
            dialog.present();
            return None;
        }
    };
    let model = AppModel::new(&core);
    crate::ui::bridge::attach(&model, rx);
    crate::ui::theme::attach(&model);
    crate::ui::notifier::attach(&model, app);
    if let Some(app) = app.downcast_ref::<ParleyApplication>() {
        app.imp().model.replace(Some(model.clone()));
    }
    let win = new_window(app, &model);
    let current = core.config.current();
    if !current.valid {
        if let Some(p) = current.problems.first() {
            win.toast(&crate::i18n::gettext_f(
                "The configuration has problems: line {line}: {message}",
                &[("line", &p.line.to_string()), ("message", &p.message)],
            ));
        }
    }
    Some(win)
}

fn open_config(win: &ParleyWindow, path: PathBuf) {
    let core = win.core().clone();
    runtime::call(
        async move { core.config.open(&path).await.map_err(String::from) },
        glib::clone!(
            #[weak]
            win,
            move |r: Result<(), String>| match r {
                Ok(()) => {
                    let model = win.model();
                    model.forget_conversations();
                    model.refresh_agents();
                    win.refresh_recent();
                }
                Err(e) => win.toast(&e),
            }
        ),
    );
}

/// `ConfigService.Choose`: the native file chooser (the portal in Flatpak).
fn choose(win: &ParleyWindow) {
    let chooser = gtk::FileChooserNative::new(
        Some(&gettext("Open Configuration")),
        Some(win),
        gtk::FileChooserAction::Open,
        Some(&gettext("_Open")),
        Some(&gettext("_Cancel")),
    );
    let filter = gtk::FileFilter::new();
    filter.set_name(Some(&gettext("JSON files")));
    filter.add_mime_type("application/json");
    filter.add_pattern("*.json");
    filter.add_pattern("*.jsonc");
    chooser.add_filter(&filter);
    chooser.connect_response(glib::clone!(
        #[weak]
        win,
        move |chooser, response| {
            if response == gtk::ResponseType::Accept {
                if let Some(path) = chooser.file().and_then(|f| f.path()) {
                    open_config(&win, path);
                }
            }
        }
    ));
    chooser.show();
    // The dialog must outlive this function until it answers.
    win.keep_file_chooser(chooser);
}

fn about(win: &ParleyWindow) {
    let about = adw::AboutWindow::builder()
        .transient_for(win)
        .application_name(gettext("Parley"))
        .application_icon(APP_ID)
        .developer_name(gettext("The Parley developers"))
        .version(env!("CARGO_PKG_VERSION"))
        .comments(gettext(
            "Run coding agents that speak the Agent Client Protocol side by side.",
        ))
        .license_type(gtk::License::Gpl30)
        .build();
    crate::ui::a11y::name_about_window(&about, env!("CARGO_PKG_VERSION"));
    about.present();
}

fn add_action(
    app: &adw::Application,
    name: &str,
    param: Option<&glib::VariantTy>,
    f: impl Fn(&adw::Application, Option<&glib::Variant>) + 'static,
) {
    let action = gio::SimpleAction::new(name, param);
    let app_weak = app.downgrade();
    action.connect_activate(move |_, p| {
        if let Some(app) = app_weak.upgrade() {
            f(&app, p);
        }
    });
    app.add_action(&action);
}

fn setup_actions(app: &adw::Application) {
    add_action(app, "quit", None, |app, _| {
        quit_or_ask(app);
    });
    add_action(app, "about", None, |app, _| {
        if let Some(w) = window(app) {
            about(&w);
        }
    });
    add_action(app, "preferences", None, |app, _| {
        if let Some(w) = window(app) {
            crate::ui::preferences::show(w.upcast_ref(), w.core(), false);
        }
    });
    // A rule's mark in a conversation: Preferences at its Permissions page.
    add_action(app, "permission-rules", None, |app, _| {
        if let Some(w) = window(app) {
            crate::ui::preferences::show(w.upcast_ref(), w.core(), true);
        }
    });
    add_action(app, "open-config", None, |app, _| {
        if let Some(w) = window(app) {
            choose(&w);
        }
    });
    add_action(app, "open-recent", Some(glib::VariantTy::STRING), |app, p| {
        if let (Some(w), Some(path)) = (window(app), p.and_then(|p| p.get::<String>())) {
            open_config(&w, PathBuf::from(path));
        }
    });
    add_action(app, "show-agent", Some(glib::VariantTy::STRING), |app, p| {
        if let (Some(w), Some(agent)) = (window(app), p.and_then(|p| p.get::<String>())) {
            w.select_agent(&agent);
            gtk::prelude::GtkWindowExt::present(&w);
        }
    });
    add_action(
        app,
        "answer-permission",
        Some(glib::VariantTy::new("(ss)").unwrap_or(glib::VariantTy::ANY)),
        |app, p| {
            if let (Some(w), Some((id, option))) = (window(app), p.and_then(|p| p.get::<(String, String)>()))
            {
                let core = w.core().clone();
                runtime::call(
                    async move { core.chat.answer_permission(&id, &option).map_err(String::from) },
                    glib::clone!(
                        #[weak]
                        w,
                        move |r: Result<(), String>| {
                            if let Err(e) = r {
                                w.toast(&e);
                            }
                        }
                    ),
                );
            }
        },
    );
    // A notification's Decline: the agent's elicitation answered as such.
    add_action(
        app,
        "answer-elicitation",
        Some(glib::VariantTy::new("(ss)").unwrap_or(glib::VariantTy::ANY)),
        |app, p| {
            if let (Some(w), Some((id, action))) = (window(app), p.and_then(|p| p.get::<(String, String)>()))
            {
                let core = w.core().clone();
                runtime::call(
                    async move {
                        core.chat
                            .answer_elicitation(&id, &action, None)
                            .map_err(String::from)
                    },
                    glib::clone!(
                        #[weak]
                        w,
                        move |r: Result<(), String>| {
                            if let Err(e) = r {
                                w.toast(&e);
                            }
                        }
                    ),
                );
            }
        },
    );
    app.set_accels_for_action("app.quit", &["<Control>q"]);
    app.set_accels_for_action("app.open-config", &["<Control>o"]);
    app.set_accels_for_action("app.preferences", &["<Control>comma"]);
    app.set_accels_for_action("win.edit-config", &["<Control>e"]);
    app.set_accels_for_action("win.show-help-overlay", &["<Control>question"]);
    app.set_accels_for_action("window.close", &["<Control>w"]);
    app.set_accels_for_action("win.new-conversation", &["<Control>n"]);
    app.set_accels_for_action("win.new-in-worktree", &["<Control><Shift>n"]);
    app.set_accels_for_action("win.find", &["<Control>f"]);
    app.set_accels_for_action("win.search-conversations", &["<Control><Shift>f"]);
    app.set_accels_for_action("win.inbox", &["<Control>i"]);
    app.set_accels_for_action("win.show-changes", &["<Control><Shift>r"]);
    app.set_accels_for_action("win.next-waiting", &["<Alt>Down"]);
    app.set_accels_for_action("win.previous-waiting", &["<Alt>Up"]);
}

/// Quits, unless a configuration editor has unsaved edits: then that editor
/// asks Save, Discard or Cancel (as closing it does) and Parley stays, to be
/// quit again once it is answered. True when it quit.
pub fn quit_or_ask(app: &impl IsA<gtk::Application>) -> bool {
    let app = app.upcast_ref::<gtk::Application>();
    let unsaved = app
        .windows()
        .into_iter()
        .filter_map(|w| w.downcast::<ParleyWindow>().ok())
        .find_map(|w| w.config_editor().filter(|e| e.has_unsaved_edits()));
    match unsaved {
        Some(editor) => {
            editor.window().present();
            editor.window().close();
            false
        }
        None => {
            app.quit();
            true
        }
    }
}

/// For the start-up benchmark: with `PARLEY_EXIT_AFTER_FIRST_FRAME` set,
/// quit once the window has painted its first frame; set to `rss`, first
/// settle for half a second and print the resident memory (`rss-kb N`).
fn exit_after_first_frame(app: &adw::Application, win: &ParleyWindow) {
    let Some(how) = std::env::var_os("PARLEY_EXIT_AFTER_FIRST_FRAME") else {
        return;
    };
    let rss = how == "rss";
    let quit_after_paint = move |win: &ParleyWindow, app: adw::Application| {
        if let Some(clock) = WidgetExt::frame_clock(win) {
            let done = std::cell::Cell::new(false);
            clock.connect_after_paint(move |_| {
                if done.replace(true) {
                    return;
                }
                if !rss {
                    app.quit();
                    return;
                }
                let app = app.clone();
                glib::timeout_add_local_once(std::time::Duration::from_millis(500), move || {
                    println!("rss-kb {}", crate::ui::resident_kb());
                    app.quit();
                });
            });
        }
    };
    // `present()` maps the window at once when it can.
    if WidgetExt::is_mapped(win) {
        quit_after_paint(win, app.clone());
    } else {
        let app = app.clone();
        win.connect_map(move |win| quit_after_paint(win, app.clone()));
    }
}

/// `parley [FILE.json] [--open-configuration]`: in the running instance if
/// there is one (GApplication forwards the command line to it).
fn command_line(app: &adw::Application, cl: &gio::ApplicationCommandLine) -> glib::ExitCode {
    let path = cl
        .arguments()
        .iter()
        .skip(1)
        .map(|a| cl.create_file_for_arg(a))
        .find_map(|f| f.path());
    let existed = window(app).is_some();
    if let Some(mut w) = ensure_window(app, path.clone()) {
        if existed && cl.options_dict().contains("new-window") {
            // Another window on the same agents and conversations.
            if let Some(model) = model_of(app) {
                w = new_window(app, &model);
            }
        }
        if let (true, Some(p)) = (existed, path) {
            open_config(&w, p);
        }
        gtk::prelude::GtkWindowExt::present(&w);
        exit_after_first_frame(app, &w);
        crate::ui::smoke::start(app, &w);
        if cl.options_dict().contains("open-configuration") {
            choose(&w);
        }
    }
    glib::ExitCode::SUCCESS
}

pub fn run() -> glib::ExitCode {
    let app: ParleyApplication = glib::Object::builder()
        .property("application-id", APP_ID)
        .property("flags", gio::ApplicationFlags::HANDLES_COMMAND_LINE)
        .build();
    app.add_main_option(
        "open-configuration",
        glib::Char::from(0),
        glib::OptionFlags::NONE,
        glib::OptionArg::None,
        &gettext("Choose a configuration file to open"),
        None,
    );
    app.add_main_option(
        "new-window",
        glib::Char::from(0),
        glib::OptionFlags::NONE,
        glib::OptionArg::None,
        &gettext("Open another window"),
        None,
    );
    app.connect_startup(|app| {
        load_css();
        setup_actions(app.upcast_ref());
        gtk::Window::set_default_icon_name(APP_ID);
    });
    app.connect_activate(|app| {
        let app = app.upcast_ref::<adw::Application>();
        if let Some(w) = ensure_window(app, None) {
            gtk::prelude::GtkWindowExt::present(&w);
            exit_after_first_frame(app, &w);
            crate::ui::smoke::start(app, &w);
        }
    });
    app.connect_command_line(|app, cl| command_line(app.upcast_ref(), cl));
    let status = app.run();
    if crate::ui::smoke::failed() {
        return glib::ExitCode::FAILURE;
    }
    status
}
