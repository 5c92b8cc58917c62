//! Subagents (issue 63), through `parley-cli serve` with the demo agent's
//! `subagents` turn: two helpers at once, one asking permission on its own
//! session, one cancelled alone, a child's child; each a thread of its own.

use serde_json::{json, Value};

use crate::common::*;

fn config(dir: &std::path::Path, project: &std::path::Path) -> std::path::PathBuf {
    let config = dir.join("config.json");
    let mut demo = agent("demo", "");
    demo["cwd"] = json!(project.display().to_string());
    let text = serde_json::to_string_pretty(&json!({"agents": [demo]})).unwrap_or_default();
    std::fs::write(&config, text).expect("config");
    config
}

/// Waits for an event that `done` holds of, in `seen` first; what is
/// passed over on the way is kept in `seen`.
fn events_until(
    s: &Serve,
    seen: &std::cell::RefCell<Vec<Value>>,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    if let Some(v) = seen.borrow().iter().find(|v| done(v)) {
        return v.clone();
    }
    s.wait(what, |v| {
        seen.borrow_mut().push(v.clone());
        done(v)
    })
}

/// A call whose answer is waited for without losing the events before it.
fn call(s: &mut Serve, seen: &std::cell::RefCell<Vec<Value>>, id: u64, method: &str, params: Value) -> Value {
    s.send(json!({"id": id, "method": method, "params": params}));
    events_until(s, seen, method, |v| v["id"] == id)
}

fn subagent_event<'a>(v: &'a Value, name: &str, title: &str) -> Option<&'a Value> {
    (v["event"] == name && v["payload"]["subagent"]["title"] == title).then(|| &v["payload"]["subagent"])
}

fn texts(messages: &Value) -> String {
    messages
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n")
}

fn part_types(messages: &Value) -> Vec<String> {
    messages
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["type"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn two_helpers_at_once_one_asks_one_is_cancelled_alone_one_nests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    std::fs::write(project.join("NOTES.md"), "Teh notes.\n").expect("notes");
    let config = config(dir.path(), &project);
    let mut s = Serve::start(dir.path(), &config);
    let seen = std::cell::RefCell::new(Vec::new());
    s.call(1, "ChatService.Send", json!(["demo", "subagents 30"]));

    // Both announced on the parent, each with the parent's session id.
    let explore = s.wait("the explorer", |v| {
        subagent_event(v, "subagent:started", "Explore the tests").is_some()
    });
    let explore = explore["payload"]["subagent"].clone();
    assert_eq!(explore["status"], "working", "{explore}");
    assert_eq!(explore["canCancel"], true, "{explore}");
    let explore_id = explore["sessionId"].as_str().unwrap_or_default().to_owned();
    let parent_id = explore["parent"].as_str().unwrap_or_default().to_owned();
    assert!(
        explore_id.starts_with(&parent_id) && explore_id != parent_id,
        "{explore}"
    );

    // The fixer asks on its own session: the request says which helper.
    let asked = events_until(&s, &seen, "the helper's permission request", |v| {
        v["event"] == "permission:requested"
    });
    let asker = &asked["payload"]["subagent"];
    // Codex announces its helpers without a title: the task's first line.
    assert_eq!(asker["title"], "Fix the typo in NOTES.md", "{asked}");
    let fix_id = asker["sessionId"].as_str().unwrap_or_default().to_owned();
    assert!(fix_id.contains(":subagent:fix-"), "{asked}");
    assert_eq!(asked["payload"]["toolCall"]["title"], "Edit NOTES.md");
    let nested = events_until(&s, &seen, "the nested helper", |v| {
        subagent_event(v, "subagent:started", "Read one file").is_some()
    })["payload"]["subagent"]
        .clone();
    assert_eq!(
        nested["parent"],
        json!(explore_id),
        "a child's child nests: {nested}"
    );
    assert!(
        seen.borrow()
            .iter()
            .any(|v| v["event"] == "subagent:delta" && v["payload"]["sessionId"] == json!(explore_id)),
        "the explorer's text comes as its own deltas"
    );
    assert!(
        !seen.borrow().iter().any(|v| v["event"] == "message:delta"
            && v["payload"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("exploring"))),
        "a helper's text is never the parent's"
    );
    let id = asked["payload"]["id"].clone();
    call(
        &mut s,
        &seen,
        2,
        "ChatService.AnswerPermission",
        json!([id, "allow-once"]),
    );

    // The explorer alone is cancelled; the turn goes on.
    let refused = call(
        &mut s,
        &seen,
        3,
        "ChatService.CancelSubagent",
        json!(["demo", "no-such-session"]),
    );
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("no subagent")),
        "{refused}"
    );
    let answer = call(
        &mut s,
        &seen,
        4,
        "ChatService.CancelSubagent",
        json!(["demo", explore_id]),
    );
    assert_eq!(answer["result"], Value::Null, "{answer}");
    let ended = events_until(&s, &seen, "the explorer's end", |v| {
        subagent_event(v, "subagent:ended", "Explore the tests").is_some()
    });
    assert_eq!(ended["payload"]["subagent"]["status"], "cancelled", "{ended}");
    assert_eq!(ended["payload"]["subagent"]["stopReason"], "cancelled", "{ended}");
    let fixed = events_until(&s, &seen, "the fixer's end", |v| {
        subagent_event(v, "subagent:ended", "Fix the typo in NOTES.md").is_some()
    });
    assert_eq!(fixed["payload"]["subagent"]["status"], "done", "{fixed}");
    events_until(&s, &seen, "the turn's end", |v| {
        v["event"] == "turn:changed" && v["payload"]["busy"] == false
    });
    events_until(&s, &seen, "the turn's checkpoint", |v| {
        v["event"] == "changes:updated"
    });
    let notes = std::fs::read_to_string(project.join("NOTES.md")).unwrap_or_default();
    assert!(notes.contains("fixed by a helper"), "{notes}");

    // The conversation: each helper a thread of its own.
    let conversation = s.call(5, "ChatService.Conversation", json!(["demo"]));
    let c = &conversation["result"];
    let parent_text = texts(&c["messages"]);
    assert!(
        parent_text.contains("explore cancelled, fix done"),
        "{parent_text}"
    );
    assert!(!parent_text.contains("Looking at the tests"), "{parent_text}");
    let types = part_types(&c["messages"]);
    assert_eq!(types.iter().filter(|t| *t == "subagent").count(), 2, "{types:?}");
    let threads = c["subagents"].as_array().cloned().unwrap_or_default();
    assert_eq!(threads.len(), 3, "{c}");
    let thread = |id: &str| {
        threads
            .iter()
            .find(|t| t["sessionId"] == id)
            .cloned()
            .unwrap_or_default()
    };
    let explorer = thread(&explore_id);
    let said = texts(&explorer["messages"]);
    assert!(
        said.contains("Looking at the tests") && said.contains("Still exploring"),
        "{said}"
    );
    assert!(
        part_types(&explorer["messages"]).contains(&"subagent".to_owned()),
        "{explorer}"
    );
    let fixer = thread(&fix_id);
    assert!(
        texts(&fixer["messages"]).contains("Changed files by myself"),
        "{fixer}"
    );
    // What one session told another: a note, never the agent's own words.
    let notes: Vec<&Value> = c["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["parts"].as_array().into_iter().flatten())
        .filter(|p| p["type"] == "session")
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n["text"] == "Fixed NOTES.md." && n["sender"] == json!(fix_id)),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .all(|n| !n["text"].as_str().unwrap_or("").contains("<tools-used")),
        "the harness's tags are taken out: {notes:?}"
    );
    assert!(
        texts(&fixer["messages"]).contains("Fix the typo in NOTES.md."),
        "the task is in the helper's thread too: {fixer}"
    );
    // Once done, the fixer may not be cancelled (its capability withdrawn).
    let late = s.call(6, "ChatService.CancelSubagent", json!(["demo", fix_id]));
    assert!(
        late["error"].as_str().is_some_and(|e| e.contains("does not let")),
        "{late}"
    );
    // Its edit is the turn's, attributed.
    let changes = s.call(7, "ChatService.Changes", json!(["demo"]));
    let files = changes["result"]["turns"][0]["files"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let notes_change = files.iter().find(|f| f["path"] == "NOTES.md");
    assert!(
        notes_change.is_some_and(|f| f["unattributed"] != true),
        "{changes}"
    );
    // The export has the threads, quoted under their parent.
    let export = s.call(8, "ChatService.Export", json!(["demo"]));
    let md = export["result"].as_str().unwrap_or_default();
    assert!(
        md.contains("> ### Subagent · Explore the tests (cancelled)"),
        "{md}"
    );
    assert!(md.contains("> > ### Subagent · Read one file (done)"), "{md}");

    // Kept with their parent: reopened, found, listed as one, deleted with it.
    let listed = s.call(9, "ChatService.List", json!(["demo"]));
    let conversations = listed["result"]["conversations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        conversations.len(),
        1,
        "a helper's thread is not a conversation of the list: {listed}"
    );
    let id = conversations[0]["id"].clone();
    s.call(10, "ChatService.New", json!(["demo"]));
    let opened = s.call(11, "ChatService.Open", json!(["demo", id]));
    let reopened = opened["result"]["subagents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(reopened.len(), 3, "{opened}");
    let again = reopened
        .iter()
        .find(|t| t["sessionId"] == json!(explore_id))
        .cloned()
        .unwrap_or_default();
    assert_eq!(again["status"], "cancelled", "{again}");
    assert_eq!(texts(&again["messages"]), said, "the thread comes back as it was");
    let found = s.call(12, "ChatService.Search", json!(["exploring"]));
    let hits = found["result"].as_array().cloned().unwrap_or_default();
    assert!(
        !hits.is_empty() && hits.iter().all(|h| h["conversation"] == id),
        "a helper's words are found in its parent's conversation: {found}"
    );
    s.call(13, "ChatService.Delete", json!(["demo", id]));
    let found = s.call(14, "ChatService.Search", json!(["exploring"]));
    assert_eq!(found["result"], json!([]), "deleted with its parent: {found}");
    drop(s.stdin);
    let _ = s.child.wait();
}

/// A helper at work that goes silent is the one not responding: marked
/// `stalled` (and again not once it speaks or stops), the turn itself not.
#[test]
fn a_silent_helper_is_the_one_not_responding() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    let config = dir.path().join("config.json");
    let mut demo = agent("demo", "");
    demo["cwd"] = json!(project.display().to_string());
    let text = json!({"limits": {"turnSilenceWarning": "1s"}, "agents": [demo]});
    std::fs::write(&config, text.to_string()).expect("config");
    let mut s = Serve::start(dir.path(), &config);
    let seen = std::cell::RefCell::new(Vec::new());
    s.call(1, "ChatService.Send", json!(["demo", "subagents-quiet 30"]));
    let asked = events_until(&s, &seen, "the fixer's request", |v| {
        v["event"] == "permission:requested"
    });
    let id = asked["payload"]["id"].clone();
    call(
        &mut s,
        &seen,
        2,
        "ChatService.AnswerPermission",
        json!([id, "reject-once"]),
    );
    let stalled = events_until(&s, &seen, "the explorer not responding", |v| {
        subagent_event(v, "subagent:updated", "Explore the tests").is_some_and(|a| a["stalled"] == true)
    });
    assert_eq!(stalled["payload"]["subagent"]["status"], "working", "{stalled}");
    assert!(
        !seen.borrow().iter().any(|v| v["event"] == "turn:stalled"),
        "the turn is not the one not responding"
    );
    let explore_id = stalled["payload"]["subagent"]["sessionId"].clone();
    call(
        &mut s,
        &seen,
        3,
        "ChatService.CancelSubagent",
        json!(["demo", explore_id]),
    );
    let ended = events_until(&s, &seen, "the explorer's end", |v| {
        subagent_event(v, "subagent:ended", "Explore the tests").is_some()
    });
    assert!(ended["payload"]["subagent"].get("stalled").is_none(), "{ended}");
    events_until(&s, &seen, "the turn's end", |v| {
        v["event"] == "turn:changed" && v["payload"]["busy"] == false
    });
    assert!(
        !seen.borrow().iter().any(|v| v["event"] == "turn:stalled"),
        "the turn is not the one not responding"
    );
    drop(s.stdin);
    let _ = s.child.wait();
}
