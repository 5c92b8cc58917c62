//! The store against a real SQLite file in a temporary directory.

use super::*;
use crate::core::types::message::{PartKind, Role, ToolCall};

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
