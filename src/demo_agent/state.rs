//! What the demo agent keeps while it runs, shared by every scenario: the
//! modes it was started with, the requests whose answers it awaits, each
//! session's cancel flag, the permission answers it remembers, what it
//! recorded of the session, and the text of the turns it stores.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::oneshot;

pub(super) struct Agent {
    pub(super) out: Mutex<std::io::Stdout>,
    pub(super) modes: Vec<String>,
    pub(super) next_id: AtomicI64,
    pub(super) pending: Mutex<HashMap<i64, oneshot::Sender<Value>>>,
    pub(super) cancelled: Mutex<HashMap<String, Arc<AtomicBool>>>,
    pub(super) always_allow: AtomicBool,
    pub(super) always_reject: AtomicBool,
    pub(super) sessions: AtomicU64,
    pub(super) used: AtomicU64,
    pub(super) cwd: Mutex<String>,
    /// Set by `fs-no-read`: stdin is no longer read.
    pub(super) deaf: AtomicBool,
    /// `auth-agent`: `authenticate` succeeded (and no `logout` since).
    pub(super) signed_in: AtomicBool,
    /// The client advertised `session.configOptions.boolean`.
    pub(super) boolean_options: AtomicBool,
    /// The client's `clientCapabilities`, as `initialize` gave them.
    pub(super) client_capabilities: Mutex<Value>,
    /// Mode `steer`: each running turn's end, and the texts taken into it.
    pub(super) steering: Mutex<HashMap<String, Steered>>,
    pub(super) recorded: Mutex<Recorded>,
    /// With `resume`, `load` or `list`: where sessions are stored.
    pub(super) sessions_dir: Option<PathBuf>,
    /// The agent text of the current turn of each session stored by this
    /// process (only those have an entry).
    pub(super) turn_text: Mutex<HashMap<String, String>>,
}

/// A running turn's end, and the texts taken into it (mode `steer`).
pub(super) type Steered = (Arc<tokio::sync::Notify>, Vec<String>);

/// What the demo keeps of the session.
#[derive(Default)]
pub struct Recorded {
    /// Current option values, by id.
    pub values: BTreeMap<String, Value>,
    pub mcp_servers: Value,
    pub additional_directories: Value,
    /// The last prompt's blocks, summed up.
    pub blocks: Vec<String>,
}

impl Agent {
    /// The agent as it starts with `modes`, before it has read anything
    /// (and before `sessions::dir` says where it stores sessions).
    pub(super) fn new(modes: Vec<String>) -> Self {
        Agent {
            out: Mutex::new(std::io::stdout()),
            modes,
            next_id: AtomicI64::new(1000),
            pending: Mutex::new(HashMap::new()),
            cancelled: Mutex::new(HashMap::new()),
            always_allow: AtomicBool::new(false),
            always_reject: AtomicBool::new(false),
            sessions: AtomicU64::new(0),
            used: AtomicU64::new(1200),
            cwd: Mutex::new(String::new()),
            deaf: AtomicBool::new(false),
            signed_in: AtomicBool::new(false),
            boolean_options: AtomicBool::new(false),
            client_capabilities: Mutex::new(Value::Null),
            steering: Mutex::new(HashMap::new()),
            recorded: Mutex::new(Recorded::default()),
            sessions_dir: None,
            turn_text: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn mode(&self, name: &str) -> Option<&str> {
        self.modes.iter().find_map(|m| {
            if m == name {
                Some("")
            } else {
                m.strip_prefix(name).and_then(|r| r.strip_prefix(':'))
            }
        })
    }

    pub(super) fn is_cancelled(&self, session: &str) -> bool {
        self.cancelled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session)
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }
}
