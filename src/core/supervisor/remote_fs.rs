//! An agent's `fs/*` on another host: one session per host to the
//! helper's file service (`remote::helper`, mode `fs`), one JSON line per
//! request and per answer, matched by id. A request gets its answer or,
//! within `acp::fs::REQUEST_TIMEOUT`, an error; a lost session fails what
//! waits on it and the next request starts a new one.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

type Waiting = Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>;

pub struct FsClient {
    input: tokio::sync::Mutex<tokio::process::ChildStdin>,
    waiting: Arc<Waiting>,
    next: AtomicU64,
    alive: Arc<AtomicBool>,
    host: String,
    // Killed when the client goes.
    _child: tokio::process::Child,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl FsClient {
    pub fn start(program: &Path, args: &[String], host: &str) -> std::io::Result<Arc<Self>> {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("no pipes"));
        };
        let waiting: Arc<Waiting> = Arc::default();
        let alive = Arc::new(AtomicBool::new(true));
        let (w, a, lost) = (waiting.clone(), alive.clone(), lost_text(host));
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(output).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let Some(id) = v.get("id").and_then(Value::as_u64) else {
                    continue;
                };
                let result = match v.get("ok") {
                    Some(ok) => Ok(ok.clone()),
                    None => Err(v
                        .get("err")
                        .and_then(Value::as_str)
                        .unwrap_or("no answer")
                        .to_owned()),
                };
                if let Some(tx) = lock(&w).remove(&id) {
                    let _ = tx.send(result);
                }
            }
            a.store(false, Ordering::SeqCst);
            for (_, tx) in lock(&w).drain() {
                let _ = tx.send(Err(lost.clone()));
            }
        });
        Ok(Arc::new(FsClient {
            input: tokio::sync::Mutex::new(input),
            waiting,
            next: AtomicU64::new(1),
            alive,
            host: host.to_owned(),
            _child: child,
        }))
    }

    pub fn alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// One `fs/*` request (its params as the agent sent them) for the agent
    /// whose directory is `root`.
    pub async fn request(
        &self,
        root: &Path,
        method: &str,
        params: &str,
        limit: Duration,
    ) -> Result<Value, String> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let params: Box<serde_json::value::RawValue> =
            serde_json::value::RawValue::from_string(params.to_owned()).map_err(|e| e.to_string())?;
        let line = serde_json::json!({"id": id, "root": root, "method": method, "params": params});
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id, tx);
        let sent = {
            let mut input = self.input.lock().await;
            let mut bytes = line.to_string().into_bytes();
            bytes.push(b'\n');
            input.write_all(&bytes).await
        };
        if sent.is_err() {
            lock(&self.waiting).remove(&id);
            self.alive.store(false, Ordering::SeqCst);
            return Err(lost_text(&self.host));
        }
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(lost_text(&self.host)),
            Err(_) => {
                lock(&self.waiting).remove(&id);
                Err(crate::i18n::gettext_f(
                    "{host} did not answer within {seconds} s",
                    &[("host", &self.host), ("seconds", &limit.as_secs().to_string())],
                ))
            }
        }
    }
}

fn lost_text(host: &str) -> String {
    crate::i18n::gettext_f("the connection to {host} was lost", &[("host", host)])
}
