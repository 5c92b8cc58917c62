//! The store against a real SQLite file in a temporary directory.

use super::*;
use crate::core::types::message::{Part, PartKind, Role, ToolCall};

const CONFIG: &str = "/home/u/.config/parley/config.json";

fn conversation(h: &History, id: &str, agent: &str) {
    h.writer().send(Op::Conversation {
        id: id.into(),
        config: CONFIG.into(),
        agent: agent.into(),
        created_at: "2026-12-01T10:00:00.000Z".into(),
    });
}

fn user(id: &str, text: &str) -> Message {
    let mut m = Message::new(id.into(), "demo", Role::User);
    m.parts.push(Part::Text { text: text.into() });
    m
}

fn delta(conv: &str, id: &str, index: usize, text: &str) -> Op {
    Op::Delta {
        conversation: conv.into(),
        message_id: id.into(),
        index,
        kind: PartKind::Text,
        text: Some(text.into()),
        part: None,
    }
}

/// A streamed answer: the message, then its text in many deltas, a tool
/// part, and (if `done`) the finished message.
fn stream(h: &History, conv: &str, id: &str, chunks: usize, done: bool) -> Message {
    let mut m = Message::new(id.into(), "demo", Role::Agent);
    m.done = false;
    h.writer().send(Op::Message {
        conversation: conv.into(),
        message: m.clone(),
    });
    let mut text = String::new();
    for i in 0..chunks {
        let piece = format!("chunk {i} of the rainbow answer; ");
        text.push_str(&piece);
        h.writer().send(delta(conv, id, 0, &piece));
    }
    let tool = Part::Tool(ToolCall {
        id: "t1".into(),
        title: "Read src/main.rs".into(),
        ..ToolCall::default()
    });
    h.writer().send(Op::Delta {
        conversation: conv.into(),
        message_id: id.into(),
        index: 1,
        kind: PartKind::Tool,
        text: None,
        part: Some(tool.clone()),
    });
    m.parts = vec![Part::Text { text }, tool];
    if done {
        m.done = true;
        m.stop_reason = Some(agent_client_protocol_schema::v1::StopReason::EndTurn);
        h.writer().send(Op::Message {
            conversation: conv.into(),
            message: m.clone(),
        });
    }
    m
}

#[test]
fn a_streamed_conversation_comes_back_whole_and_is_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("parley/history.sqlite3");
    let (h, notices) = History::open(&path).expect("open");
    assert!(notices.is_empty());
    conversation(&h, "c1", "demo");
    let question = user("m1", "Why is the sky blue?\nAnd the sea?");
    h.writer().send(Op::Message {
        conversation: "c1".into(),
        message: question.clone(),
    });
    let answer = stream(&h, "c1", "m2", 5_000, true);
    h.writer().flush().expect("flush");

    assert_eq!(h.messages("c1").expect("messages"), vec![question, answer]);
    let list = h.list(CONFIG, "demo", 10, 0).expect("list");
    assert_eq!(list.len(), 1);
    assert_eq!(
        (list[0].title.as_str(), list[0].messages),
        ("Why is the sky blue?", 2)
    );
    // The agent's title wins over the first message.
    h.writer().send(Op::Title {
        conversation: "c1".into(),
        title: Some("Colours".into()),
    });
    h.writer().flush().expect("flush");
    assert_eq!(h.list(CONFIG, "demo", 10, 0).expect("list")[0].title, "Colours");
    // History of another configuration, or agent, stays apart.
    assert!(h.list("/elsewhere.json", "demo", 10, 0).expect("list").is_empty());
    assert!(h.list(CONFIG, "claude", 10, 0).expect("list").is_empty());

    let hits = h.search(CONFIG, "rainbo", 5).expect("search");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(
        (hits[0].conversation.as_str(), hits[0].message_id.as_str()),
        ("c1", "m2")
    );
    assert!(
        hits[0].snippet.contains("\u{2}rainbow\u{3}"),
        "{:?}",
        hits[0].snippet
    );
    assert_eq!(h.search(CONFIG, "sky", 5).expect("search")[0].message_id, "m1");
    assert!(h.search("/elsewhere.json", "sky", 5).expect("search").is_empty());
    assert!(h
        .search(CONFIG, "\" OR * NEAR(", 5)
        .expect("FTS syntax is not passed on")
        .is_empty());
}

#[test]
fn a_crash_mid_stream_keeps_what_was_written_marked_interrupted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("history.sqlite3");
    {
        let (h, _) = History::open(&path).expect("open");
        conversation(&h, "c1", "demo");
        stream(&h, "c1", "m1", 1_000, false);
        h.writer().flush().expect("flush");
        // Dropped without the finished message, as a kill -9 leaves it.
    }
    let (h, notices) = History::open(&path).expect("reopen");
    assert_eq!(notices, vec![OpenNotice::Interrupted(1)]);
    let m = &h.messages("c1").expect("messages")[0];
    assert!(m.done);
    assert_eq!(m.error.as_deref(), Some(INTERRUPTED));
    assert!(m.text().starts_with("chunk 0 of") && m.text().contains("chunk 999 of"));
}

#[test]
fn a_queued_message_moves_after_the_answer_it_waited_for() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (h, _) = History::open(&dir.path().join("h.sqlite3")).expect("open");
    conversation(&h, "c1", "demo");
    let first = user("m1", "first");
    let mut queued = user("m2", "second");
    queued.queued = true;
    for m in [first, queued.clone()] {
        h.writer().send(Op::Message {
            conversation: "c1".into(),
            message: m,
        });
    }
    stream(&h, "c1", "m3", 3, true);
    queued.queued = false;
    h.writer().send(Op::Message {
        conversation: "c1".into(),
        message: queued,
    });
    h.writer().flush().expect("flush");
    let ids: Vec<String> = h
        .messages("c1")
        .expect("messages")
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, ["m1", "m3", "m2"]);
}

#[test]
fn a_file_that_is_not_a_database_is_moved_aside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("history.sqlite3");
    std::fs::write(&path, vec![0x42u8; 8192]).expect("write");
    let (h, notices) = History::open(&path).expect("open anew");
    let [OpenNotice::MovedAside(aside)] = notices.as_slice() else {
        panic!("{notices:?}")
    };
    assert_eq!(
        std::fs::read(aside).expect("kept").len(),
        8192,
        "the old file is kept as it was"
    );
    conversation(&h, "c1", "demo");
    h.writer().flush().expect("the new file works");
}

#[test]
fn a_newer_schema_is_refused_not_overwritten() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("history.sqlite3");
    drop(History::open(&path).expect("open"));
    let conn = rusqlite::Connection::open(&path).expect("raw");
    conn.pragma_update(None, "user_version", 99).expect("bump");
    drop(conn);
    match History::open(&path) {
        Err(HistoryError::Newer { found: 99, known }) => assert_eq!(known, schema::VERSION),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a newer file was opened"),
    }
}

#[test]
fn a_failed_write_is_told_and_the_writer_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (h, _) = History::open(&dir.path().join("h.sqlite3")).expect("open");
    conversation(&h, "c1", "demo");
    h.writer().flush().expect("flush");
    // A message of a conversation that does not exist breaks the foreign key.
    h.writer().send(Op::Message {
        conversation: "nowhere".into(),
        message: user("m1", "lost"),
    });
    let e = h.writer().flush().expect_err("refused");
    assert!(e.contains("FOREIGN KEY"), "{e}");
    assert!(h.writer().failure().is_some());
    h.writer().send(Op::Message {
        conversation: "c1".into(),
        message: user("m2", "kept"),
    });
    h.writer().flush().expect("the next batch is written");
    assert!(h.writer().failure().is_none());
    assert_eq!(h.messages("c1").expect("messages").len(), 1);
}

/// A file Parley refuses keeps every byte: nothing is switched to WAL,
/// no table is added, no side file is made.
#[test]
fn a_refused_file_is_not_changed_at_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: [(&str, i64, &str); 4] = [
        (
            "newer",
            99,
            "CREATE TABLE conversations (id); CREATE TABLE messages (id); CREATE TABLE parts (id);",
        ),
        (
            "negative",
            -3,
            "CREATE TABLE conversations (id); CREATE TABLE messages (id); CREATE TABLE parts (id);",
        ),
        ("foreign", 0, "CREATE TABLE bookmarks (url TEXT);"),
        ("foreign-versioned", 1, "CREATE TABLE bookmarks (url TEXT);"),
    ];
    for (name, version, sql) in cases {
        let path = dir.path().join(format!("{name}.sqlite3"));
        let conn = rusqlite::Connection::open(&path).expect("another program's file");
        conn.execute_batch(sql).expect("tables");
        conn.pragma_update(None, "user_version", version)
            .expect("version");
        drop(conn);
        let before = std::fs::read(&path).expect("bytes");
        match History::open(&path) {
            Ok(_) => panic!("{name}: opened"),
            Err(HistoryError::Newer { found, .. }) => assert_eq!((name, found), ("newer", 99)),
            Err(HistoryError::Foreign { why, .. }) => assert_ne!(name, "newer", "{why}"),
            Err(e) => panic!("{name}: {e}"),
        }
        assert_eq!(std::fs::read(&path).expect("bytes"), before, "{name} was changed");
        for side in ["-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(side);
            assert!(!std::path::Path::new(&p).exists(), "{name}{side} was made");
        }
    }
}

/// `history.sqlite3` as a link: to another program's database, refused and
/// that file untouched; to Parley's own history, followed.
#[test]
fn a_link_to_another_programs_database_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let other = dir.path().join("places.sqlite");
    let conn = rusqlite::Connection::open(&other).expect("another program's file");
    conn.execute_batch("CREATE TABLE moz_places (url TEXT);")
        .expect("table");
    drop(conn);
    let before = std::fs::read(&other).expect("bytes");
    let link = dir.path().join("history.sqlite3");
    std::os::unix::fs::symlink(&other, &link).expect("link");
    match History::open(&link) {
        Err(HistoryError::Foreign { why, .. }) => assert!(why.contains("another program"), "{why}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("the link was followed into another program's file"),
    }
    assert_eq!(std::fs::read(&other).expect("bytes"), before);
    // A link to a file of Parley's is fine.
    let own = dir.path().join("kept.sqlite3");
    drop(History::open(&own).expect("open"));
    let link2 = dir.path().join("history2.sqlite3");
    std::os::unix::fs::symlink(&own, &link2).expect("link");
    let (h, _) = History::open(&link2).expect("Parley's own file through a link");
    conversation(&h, "c1", "demo");
    h.writer().flush().expect("written");
}

/// A search of many words is refused at once, with why; repeated words
/// count once; and the history answers the next question.
#[test]
fn a_search_of_many_words_is_refused_and_repeats_count_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (h, _) = History::open(&dir.path().join("h.sqlite3")).expect("open");
    conversation(&h, "c1", "demo");
    h.writer().send(Op::Message {
        conversation: "c1".into(),
        message: user("m1", "alpha beta"),
    });
    h.writer().flush().expect("flush");
    let many: String = (0..4000).map(|i| format!("w{i} ")).collect();
    match h.search(CONFIG, &many, 10) {
        Err(HistoryError::Query(why)) => assert!(why.contains("too long"), "{why}"),
        other => panic!("{other:?}"),
    }
    let words: String = (0..40).map(|i| format!("w{i} ")).collect();
    match h.search(CONFIG, &words, 10) {
        Err(HistoryError::Query(why)) => assert!(why.contains("too many words: at most 32"), "{why}"),
        other => panic!("{other:?}"),
    }
    // 150 times the same word is one term.
    let same = "alpha ".repeat(150);
    assert!(same.len() <= super::SEARCH_MAX_BYTES);
    assert_eq!(h.search(CONFIG, &same, 10).expect("one term").len(), 1);
    assert_eq!(h.list(CONFIG, "demo", 10, 0).expect("list").len(), 1);
}

/// A query past its deadline ends with an error that says so, and the
/// connection answers the next one.
#[test]
fn a_query_past_its_deadline_is_stopped() {
    let conn = rusqlite::Connection::open_in_memory().expect("memory");
    let endless = || -> Result<i64, HistoryError> {
        Ok(conn.query_row(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
            [],
            |r| r.get(0),
        )?)
    };
    match super::within(&conn, std::time::Duration::from_millis(50), endless) {
        Err(HistoryError::Query(why)) => assert!(why.contains("was stopped"), "{why}"),
        other => panic!("{other:?}"),
    }
    let one: i64 = conn
        .query_row("SELECT 1", [], |r| r.get(0))
        .expect("the next query");
    assert_eq!(one, 1);
}

/// Raw SQL on the file, as another program (or a damaged disk) leaves it.
fn tamper(path: &std::path::Path, sql: &str) {
    let raw = rusqlite::Connection::open(path).expect("raw connection");
    raw.busy_timeout(std::time::Duration::from_secs(5))
        .expect("busy timeout");
    raw.execute_batch(sql).expect("tampered");
}

/// Counts what `History::on_skipped` tells.
fn told_skipped(h: &History) -> Arc<Mutex<Vec<usize>>> {
    let told: Arc<Mutex<Vec<usize>>> = Arc::default();
    let t = told.clone();
    h.on_skipped(Box::new(move |n| lock(&t).push(n)));
    told
}

/// A conversation row with a value of the wrong type (a BLOB where the
/// time is text: TEXT columns turn numbers into text, so a BLOB, or text
/// that is not UTF-8, is what breaks a row) hides only itself, and is told
/// once.
#[test]
fn a_bad_conversation_row_hides_no_other_conversation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.sqlite3");
    let (h, _) = History::open(&path).expect("open");
    let told = told_skipped(&h);
    for (c, m) in [("c1", "m1"), ("c2", "m2"), ("c3", "m3"), ("c4", "m4")] {
        conversation(&h, c, "demo");
        h.writer().send(Op::Message {
            conversation: c.into(),
            message: user(m, &format!("question {c}")),
        });
    }
    h.writer().flush().expect("flush");
    tamper(
        &path,
        "UPDATE conversations SET updated_at = X'00ff' WHERE id = 'c2';
         UPDATE conversations SET title = CAST(X'c328' AS TEXT) WHERE id = 'c4';",
    );

    let mut ids: Vec<String> = h
        .list(CONFIG, "demo", 10, 0)
        .expect("the list is not lost")
        .into_iter()
        .map(|c| c.id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["c1", "c3"]);
    assert_eq!(*lock(&told), [2]);
    // Listed again (every `conversations:changed`), nothing new is told.
    assert_eq!(h.list(CONFIG, "demo", 10, 0).expect("list").len(), 2);
    // Opened, the row of c4 is the same row: not told again.
    assert_eq!(h.conversation("c4").expect("read"), None);
    assert_eq!(*lock(&told), [2]);
    assert_eq!(h.skipped(), 2);
    // The conversations that can be read open as before.
    assert_eq!(h.messages("c3").expect("messages")[0].text(), "question c3");
}

/// A message whose fields are not JSON keeps its text (its id and role
/// come from its row); a part that is not JSON is left out; both are told.
#[test]
fn a_message_with_broken_fields_keeps_its_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.sqlite3");
    let (h, _) = History::open(&path).expect("open");
    let told = told_skipped(&h);
    conversation(&h, "c1", "demo");
    h.writer().send(Op::Message {
        conversation: "c1".into(),
        message: user("m1", "Why is the sky blue?"),
    });
    let answer = stream(&h, "c1", "m2", 3, true);
    h.writer().flush().expect("flush");
    tamper(&path, "UPDATE messages SET meta = '{broken' WHERE id = 'm1';");

    let messages = h.messages("c1").expect("messages");
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(
        (
            messages[0].id.as_str(),
            messages[0].role,
            messages[0].text().as_str()
        ),
        ("m1", Role::User, "Why is the sky blue?")
    );
    assert_eq!(messages[0].agent, "demo");
    assert!(messages[0].done);
    assert_eq!(messages[1], answer);
    assert_eq!(*lock(&told), [1]);

    tamper(&path, "UPDATE parts SET json = 'nope' WHERE kind = 'tool';");
    let messages = h.messages("c1").expect("messages");
    assert_eq!(messages[1].parts, answer.parts[..1]);
    assert_eq!(*lock(&told), [1, 1]);
    // Its row is written anew when the message changes.
    let mut fixed = user("m1", "Why is the sky blue?");
    fixed.created_at = "2026-12-01T10:00:01.000Z".into();
    h.writer().send(Op::Message {
        conversation: "c1".into(),
        message: fixed.clone(),
    });
    h.writer()
        .flush()
        .expect("the broken row does not stop the writer");
    assert_eq!(h.messages("c1").expect("messages")[0], fixed);
}

/// A hit whose conversation cannot be read is left out of a search.
#[test]
fn a_bad_row_is_left_out_of_a_search() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.sqlite3");
    let (h, _) = History::open(&path).expect("open");
    let told = told_skipped(&h);
    for (c, m) in [("c1", "m1"), ("c2", "m2")] {
        conversation(&h, c, "demo");
        h.writer().send(Op::Message {
            conversation: c.into(),
            message: user(m, "zebras at noon"),
        });
    }
    h.writer().flush().expect("flush");
    tamper(&path, "UPDATE conversations SET agent = X'01' WHERE id = 'c2';");
    let hits = h.search(CONFIG, "zebra", 10).expect("search");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].conversation, "c1");
    assert_eq!(*lock(&told), [1]);
}

/// The service tells a skipped row as `history:status`: a note in `error`
/// (the window shows it), the number in `skipped`.
#[test]
fn a_skipped_row_is_told_as_history_status() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.sqlite3");
    let (tx, rx) = crate::core::events::channel();
    let service = service::HistoryService::new(tx);
    service.open(Some(&path), std::path::Path::new(CONFIG));
    let h = service.store().expect("a history");
    for c in ["c1", "c2", "c3"] {
        conversation(&h, c, "demo");
    }
    h.writer().flush().expect("flush");
    tamper(
        &path,
        "UPDATE conversations SET updated_at = X'00' WHERE id = 'c2';",
    );
    while rx.try_recv().is_ok() {}

    assert_eq!(
        h.list(&service.config_key(), "demo", 10, 0).expect("list").len(),
        2
    );
    let told: Vec<crate::core::events::HistoryStatus> = std::iter::from_fn(|| rx.try_recv().ok())
        .filter_map(|e| match e {
            crate::core::events::Event::HistoryStatus(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].skipped, Some(1));
    assert!(told[0].writable);
    let note = told[0].error.as_deref().unwrap_or_default();
    assert!(note.starts_with("1 damaged row of the history"), "{note}");
    let json = serde_json::to_value(&told[0]).expect("json");
    assert_eq!(json["skipped"], 1);
    assert_eq!(json["writable"], true);
}

/// At rest (no text waiting) the flusher of joined text does not wake at
/// all (it ran every 50 ms); text that waits is still sent once due,
/// without another event to carry it, and then the flusher rests again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flusher_of_joined_text_sleeps_at_rest() {
    use crate::core::events::{Event, MessageDelta};
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.sqlite3");
    let (tx, _rx) = crate::core::events::channel();
    let service = service::HistoryService::new(tx);
    service.open(Some(&path), std::path::Path::new(CONFIG));
    let wakes = || service.flusher_wakes().load(Ordering::Relaxed);

    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(wakes() <= 1, "the flusher woke {} times at rest", wakes());

    let h = service.store().expect("a history");
    conversation(&h, "c1", "demo");
    let mut m = Message::new("m1".into(), "demo", Role::Agent);
    m.done = false;
    h.writer().send(Op::Message {
        conversation: "c1".into(),
        message: m,
    });
    service.recorder().ids.insert("demo".into(), "c1".into());
    service.record(&Event::MessageDelta(MessageDelta {
        agent: "demo".into(),
        message_id: "m1".into(),
        index: 0,
        kind: PartKind::Text,
        text: Some("paused here".into()),
        part: None,
    }));
    // Read without `HistoryService::flushed` (which would send the text
    // itself): only the flusher sends it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        h.writer().flush().expect("flush");
        if h.messages("c1").expect("messages")[0].text() == "paused here" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the waiting text was never sent"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let after = wakes();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        wakes() - after <= 1,
        "the flusher woke {} times at rest after a stream",
        wakes() - after
    );
}
