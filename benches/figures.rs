//! Every bench's figures as JSON lines, beside what it prints: one object
//! per figure, `{bench, figure, value, unit, floor?, ratio?, goal?, time,
//! commit}`, appended to `target/bench/BENCH-latest.jsonl` (a run starts it
//! anew) and kept as `target/bench/BENCH-TIME.jsonl`.
//! `build-aux/bench-compare.sh OLD NEW` compares two such files.
//! `BENCHMARKS.jsonl` beside `BENCHMARKS.md` holds the figures recorded there.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

static FIGURES: OnceLock<Figures> = OnceLock::new();

/// The command that measures the figures recorded next (BENCHMARKS.md's
/// summary says it beside each).
static COMMAND: Mutex<String> = Mutex::new(String::new());

/// Names the command that gives the figures recorded from now on.
pub fn command(command: &str) {
    if let Ok(mut c) = COMMAND.lock() {
        *c = command.to_owned();
    }
}

/// Starts this run's files for `bench` (`core`, `window`).
pub fn start(bench: &'static str) {
    let _ = FIGURES.set(Figures::start(bench));
}

/// Records a figure of this run (see [`Figures::record`]).
pub fn record(figure: &str, value: f64, unit: &str, floor: Option<f64>, goal: Option<f64>) {
    if let Some(f) = FIGURES.get() {
        f.record(figure, value, unit, floor, goal);
    }
}

pub struct Figures {
    bench: &'static str,
    files: Vec<PathBuf>,
    commit: String,
}

impl Figures {
    fn start(bench: &'static str) -> Figures {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join("bench");
        let _ = std::fs::create_dir_all(&dir);
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let latest = dir.join(format!("{bench}-latest.jsonl"));
        let _ = std::fs::write(&latest, b"");
        let commit = std::process::Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        // A `+` when the tree had changes of its own: the figures are of
        // the commit and more.
        let changed = std::process::Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=no"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .is_ok_and(|o| !o.stdout.is_empty());
        let commit = if changed { format!("{commit}+") } else { commit };
        Figures {
            bench,
            files: vec![latest, dir.join(format!("{bench}-{time}.jsonl"))],
            commit,
        }
    }

    /// One figure: `value` in `unit`; `floor` is the same run's floor in
    /// the same unit (the ratio is what compares across runs); `goal` is
    /// the ratio's (or, with no floor, the value's) goal.
    fn record(&self, figure: &str, value: f64, unit: &str, floor: Option<f64>, goal: Option<f64>) {
        let mut line = serde_json::json!({
            "bench": self.bench,
            "figure": figure,
            "value": value,
            "unit": unit,
            "time": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            "commit": self.commit,
        });
        if let Some(f) = floor.filter(|f| *f > 0.0) {
            line["floor"] = serde_json::json!(f);
            line["ratio"] = serde_json::json!(value / f);
        }
        if let Some(g) = goal {
            line["goal"] = serde_json::json!(g);
        }
        if let Some(c) = COMMAND.lock().ok().filter(|c| !c.is_empty()) {
            line["command"] = serde_json::json!(*c);
        }
        for file in &self.files {
            if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(file) {
                let _ = writeln!(f, "{line}");
            }
        }
    }
}

/// Voluntary context switches so far of all the threads of a process
/// (`"self"` or a pid): the times it slept and was woken.
pub fn wakeups(process: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{process}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .filter_map(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                .and_then(|n| n.trim().parse::<u64>().ok())
        })
        .sum()
}
