//! An agent's log: the stderr lines kept for `Logs`, and `agent:log` events.

use super::*;

impl AgentService {
    /// The last 200 stderr lines.
    pub fn logs(&self, name: &str) -> Result<Vec<String>, AgentError> {
        let mut t = lock(&self.shared.table);
        let e = t.find(name).ok_or_else(|| AgentError::Unknown(name.to_owned()))?;
        let logs = lock(&e.logs);
        Ok(logs.iter().cloned().collect())
    }

    pub(super) fn push_log(&self, name: &str, logs: &Mutex<VecDeque<String>>, line: String) {
        push_log(name, logs, &self.shared.events, line);
    }

    /// Adds a line of Parley's own to an agent's log (`agent:log`).
    pub fn log(&self, name: &str, line: String) {
        let logs = {
            let mut t = lock(&self.shared.table);
            match t.find(name) {
                Some(e) => e.logs.clone(),
                None => return,
            }
        };
        let line = capped(line);
        tracing::info!(agent = name, "{line}");
        self.push_log(name, &logs, line);
    }
}

/// The longest log line kept, in bytes. Stderr lines are cut sooner (4 KiB)
/// as they are read; this bounds Parley's own notes, which may quote what
/// an agent sent (a session id, a line it skipped) of any size.
const MAX_LOG_LINE: usize = 8 * 1024;

/// `line`, cut at [`MAX_LOG_LINE`] on a character boundary and marked `…`.
fn capped(mut line: String) -> String {
    if line.len() > MAX_LOG_LINE {
        let mut end = MAX_LOG_LINE;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push('…');
    }
    line
}

pub(super) fn push_log(name: &str, logs: &Mutex<VecDeque<String>>, events_tx: &EventSender, line: String) {
    // Every line goes through here: none is kept (200 of them) or sent
    // whole however long an agent made it.
    let line = capped(line);
    {
        let mut l = lock(logs);
        if l.len() == LOG_LINES {
            l.pop_front();
        }
        l.push_back(line.clone());
    }
    events::emit(
        events_tx,
        Event::AgentLog(AgentLog {
            agent: name.to_owned(),
            line,
        }),
    );
}

pub(super) fn with_last_lines(reason: &str, logs: &Mutex<VecDeque<String>>) -> StartError {
    let l = lock(logs);
    let skip = l.len().saturating_sub(ERROR_LOG_LINES);
    StartError {
        reason: reason.to_owned(),
        last_lines: l.iter().skip(skip).cloned().collect(),
    }
}

/// Each stderr line is kept (the last 200) and sent as `agent:log`.
pub(super) async fn read_stderr(
    stderr: tokio::process::ChildStderr,
    name: String,
    logs: Arc<Mutex<VecDeque<String>>>,
    events_tx: EventSender,
) {
    // A log line keeps its first 4 KiB; the rest is skipped as it arrives,
    // so a stderr line without end (1 GB, say) costs no memory.
    const MAX_SHOWN: usize = 4096;
    let mut reader = BufReader::new(stderr);
    while let Ok(Some((mut buf, cut))) = acp::lines::next_line_kept(&mut reader, MAX_SHOWN).await {
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        if cut {
            // Not a character cut in half: drop an incomplete last one.
            if let Err(e) = std::str::from_utf8(&buf) {
                if e.error_len().is_none() {
                    buf.truncate(e.valid_up_to());
                }
            }
        }
        let mut line = String::from_utf8_lossy(&buf).into_owned();
        if cut {
            line.push('…');
        }
        push_log(&name, &logs, &events_tx, line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_note_is_cut_on_a_character_boundary() {
        assert_eq!(capped("short".into()), "short");
        let long = "é".repeat(MAX_LOG_LINE); // 2 bytes each
        let cut = capped(long);
        assert!(cut.len() <= MAX_LOG_LINE + '…'.len_utf8());
        assert!(cut.ends_with('…'));
        assert!(cut.trim_end_matches('…').chars().all(|c| c == 'é'));
    }
}
