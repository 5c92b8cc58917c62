//! Parley runs coding agents that speak the Agent Client Protocol side by
//! side, in one native GNOME window.
//!
//! ```text
//!  config file ──GFileMonitor──▶ ConfigService ─┐ hooks (given by Core)
//!                                               ▼
//!  widgets ◀─bind── GObject models ◀─ bridge ◀─ events ◀── AgentService + ChatService (tokio)
//!     │                                              ▲          │  ▲
//!     └──────────── the services (Core) ─────────────┘   stdin/stdout (JSON-RPC)
//!                                                           agent processes
//! ```
//!
//! The core's rooms, and who takes whom (one way; `docs/architecture.md`
//! has the picture, `build-aux/check-cycles.py` keeps it so):
//!
//! ```text
//!  RegistryService ─▶ ConfigService, AgentService
//!  AuthService ─────▶ AgentService, ChatService
//!  ChatService ─────▶ AgentService, HistoryService
//!  AgentService ────▶ TerminalService
//!  every service ───▶ events ─▶ types
//! ```
//!
//! # Module map
//!
//! - [`core`] — no display needed; never imports gtk, adw or sourceview:
//!   - [`core::services`]: [`core::services::Core`] builds the services
//!     and hands them out; `Core::call` answers `serve`'s calls by name.
//!   - [`core::supervisor`]: `AgentService`. The lifecycle as one pure
//!     function ([`core::supervisor::lifecycle`]; every change of state
//!     goes through it), processes and the stop sequence
//!     ([`core::supervisor::process`]) beneath a guardian
//!     ([`core::supervisor::guardian`]), limits and the idle check; its
//!     `impl` is split along its seams: start, stop, handler, logs, idle,
//!     sign-in state, login terminals, hosts (the held ssh connection and
//!     the helper there, for agents on other hosts). `TerminalService`
//!     ([`core::supervisor::terminals`]): the ACP terminal capability.
//!   - [`core::remote`]: an agent's `host` (ssh, toolbox, distrobox,
//!     podman) and Parley's helper on the far side
//!     ([`core::remote::helper`]): the agent, its files and terminals there.
//!   - [`core::chat`]: `ChatService`: conversations, turns, permissions,
//!     elicitation (forms checked against their schema, links), hung turns
//!     (the silence watch, a Cancel's grace), session options, the inbox,
//!     steering (the queue edited, Retry, Steer, Fork with `session/fork`
//!     or a transcript, drafts, the conversations reopened at start); its
//!     state in `chat::state`, each part an `impl` of its own.
//!   - [`core::checkpoints`]: `CheckpointService`: each turn's files
//!     recorded before and after in a shadow git repository of Parley's,
//!     the Changes of a conversation, reverts (three-way where a file
//!     changed since) and their Undo.
//!   - [`core::history`]: the SQLite store, and `HistoryService`
//!     ([`core::history::service`]): the recorder, search, status.
//!   - [`core::config`]: model, parsing with line and column, schema and
//!     validation, permission rules ([`core::config::rules`]: pure
//!     matching, first match wins), the file (creating, saving atomically,
//!     recent files), watching, edits that keep the user's comments
//!     ([`core::config::edit`]), and `ConfigService`
//!     ([`core::config::service`]).
//!   - [`core::auth`]: `AuthService`: agent methods, keys, terminal
//!     commands, cancel, sign out.
//!   - [`core::registry`]: agents from the ACP registry: HTTPS through
//!     libsoup 3 ([`core::registry::fetch`]), archives unpacked so nothing
//!     lands outside their directory ([`core::registry::unpack`]), the
//!     registry as read ([`core::registry::listing`]), installs, and
//!     `RegistryService` ([`core::registry::service`]).
//!   - Beneath the services: [`core::events`] (the spec's events and the
//!     channel), [`core::types`] (what events carry), [`core::acp`]
//!     (JSON-RPC over newline-delimited stdio, typed calls, the confined
//!     `fs/*` capability), [`core::launch`] (the launch doctor),
//!     [`core::secrets`] (saved keys in the keyring), [`core::channels`]
//!     (notification channels of kind `command`), [`core::files`],
//!     [`core::links`], [`core::home`], [`core::atomic`].
//! - [`ui`] — the libadwaita window. Who owns what, and who may call whom:
//!   - [`ui::application::ParleyApplication`] owns the one
//!     [`ui::models::AppModel`] (and through it the core) for every window.
//!   - [`ui::bridge`] drains the events once per frame into
//!     `AppModel::apply`, which routes each to the
//!     [`ui::models::AgentObject`] it concerns, or to the terminals' output
//!     ([`ui::models::TerminalOutputs`]). An agent holds its facets:
//!     [`ui::models::AgentState`], [`ui::models::SessionControls`],
//!     [`ui::models::SignIn`] and [`ui::models::ConversationObject`]
//!     (messages, permissions, elicitations). Models never touch widgets.
//!   - [`ui::notifier`], [`ui::announcer`] and [`ui::theme`] listen to
//!     model signals.
//!   - [`ui::window`] only assembles views; [`ui::widgets`] bind to the
//!     facet they show and report errors through the `win.toast` action; no
//!     widget imports the window or the application: the windows that open
//!     over it (`history_search`, `add_agent`, `inbox`) take a parent
//!     `gtk::Window`, what they read, and a callback.
//!   - Add Agent…: the registry's dialog ([`ui::widgets::add_agent`]); an
//!     agent's Update and Remove Agent… are the window's (`registry.rs`).
//!   - Attention: the inbox ([`ui::widgets::inbox`], Ctrl+I), elicitation
//!     dialogs ([`ui::widgets::elicitation`]); badges, Alt+Up/Down, unseen
//!     answers, the "not responding" banner and saving a rule are the
//!     window's (`attention.rs`); rules in Preferences ([`ui::preferences`]).
//! - [`i18n`] (gettext) and [`logging`] (tracing) serve both.
//!
//! # Where the code refines the design (`docs/architecture.md`)
//!
//! - **No orphans, even on SIGKILL or `setsid`**: each agent runs beneath a
//!   *guardian*, a forked child subreaper that inherits every descendant
//!   which leaves the agent's group, ends them all once the agent has
//!   exited, and kills them when a pipe only Parley holds closes, however
//!   Parley ends (`core::supervisor::guardian`).
//! - **Streaming without copies**: the connection decodes a `session/update`
//!   line in one pass into the protocol's own type; other messages keep
//!   `params` as borrowed `RawValue` until someone who knows the type reads
//!   it (see BENCHMARKS.md).
//! - **Watching** uses `gio::FileMonitor` on the file and its directory, run
//!   on a GLib main context of its own thread inside the core, so the
//!   window and `parley-cli serve` watch the same way.
//! - **Inside Flatpak** agents start through `flatpak-spawn --host
//!   --watch-bus` and a host-side wrapper (`process::HOST_WRAPPER`) that
//!   gives the agent its own group, forwards SIGTERM to it, and kills it
//!   when the wrapper is killed.
//! - **Launch doctor**: commands are looked for in the agent's PATH, the login
//!   shell's PATH (read once, off the main thread), per-user bin directories
//!   and beside Parley's own programs (the bundled demo agent).
//! - **The conversation list shows rows, not messages**: a message is one
//!   row per part, and an agent's text is cut into rows of about 1 KB
//!   (`ui::models::segments`), flattened into one model. The list is the
//!   conversation's own virtualised widget (`ui::widgets::message_list`):
//!   it binds, measures and lays out only the rows on the page (and binds
//!   a page above and below in idle time), knows the others by a measured
//!   or estimated height, and scrolls by an anchor row, so a frame costs
//!   what is visible, not what the conversation holds. GTK 4.8's list view
//!   kept ~200 rows bound and re-bound them while scrolling. A message's
//!   paragraphs are text blocks (`ui::widgets::text_block`): one Pango
//!   layout per width where GTK 4.8's label lays its text out three or four
//!   times, and a real label in their place once the pointer or the focus
//!   comes. Text deltas are joined on a thread before the main loop
//!   (`ui::bridge`). Figures in BENCHMARKS.md.
//! - The window and its views (conversation, composer, permission banner,
//!   agent and message rows) are composite templates; the small dialogs
//!   (settings editor, logs) and the slash-command popover are built in
//!   code.
//! - GTK 4.8's bindings gate `gtk::Accessible` behind `v4_10`: accessible
//!   names set in code go through [`ui::a11y`].
//! - Tests: `tests/integration/` is one binary of modules (real agents, real
//!   files, `parley-cli`); `tests/ui.rs` is a `harness = false` binary that
//!   drives the window on one GTK thread under Xvfb.

pub mod core;
pub mod demo_agent;
pub mod i18n;
pub mod logging;
pub mod ui;
