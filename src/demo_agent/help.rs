//! What the demo agent says it can do: `--help`, which lists every mode and
//! prompt keyword (and which the `help` keyword streams), and the slash
//! commands it announces.

use serde_json::json;

use super::state::Agent;
use super::wire::stream;

pub(super) const HELP: &str = "\
parley-demo-agent: the ACP (protocol version 1) agent bundled with Parley.

It speaks JSON-RPC on stdin/stdout and logs on stderr. In normal use every
prompt gets a demo of what Parley shows: a thought, a plan, tool calls (read,
search, edit with a diff after a permission request, a failing execute),
streamed Markdown, usage reports and slash commands (/help, /plan, /flood).

Start-up modes, comma-separated in PARLEY_DEMO_MODE:
  exit-at-start        exit with status 3 before reading anything
  no-initialize        never answer initialize
  protocol-2           answer initialize with protocolVersion 2
  garbage              print non-JSON lines on stdout before every message
  huge-line:N          answer initialize after a line of N MiB
  stderr:K             write K lines on stderr at start
  stderr-line:N        write one stderr line of N MiB at start
  ignore-eof           keep running after stdin ends
  ignore-term          ignore SIGTERM
  child-ignores-term   start a child process that ignores SIGTERM
  setsid-child         start a child in a session of its own (setsid) that
                       ignores SIGTERM
  double-fork          start a daemon by a double fork: a setsid child whose
                       parent exits at once
  auth-required        answer session/new with an authentication error
  auth-agent           offer agent sign-in methods (demo-login succeeds,
                       demo-refuse fails, demo-slow takes 30 s) and logout;
                       answer prompts with an authentication error until
                       signed in
  auth-env             offer an env_var method; session/new fails until
                       DEMO_API_KEY is set
  auth-terminal        offer a terminal method (--login) and its legacy
                       _meta form; session/new fails until a terminal
                       sign-in left .parley-demo-signed-in in the cwd
  early-updates        send a session update before answering session/new
  legacy-modes         offer the legacy modes and models (session/set_mode,
                       session/set_model), not config options
  no-options           offer no session options at all
  options:N            offer N session options (1 to 6): mode, model,
                       effort, brief, sandbox, verbosity
  images, embedded     take image content / embedded resources in prompts
  mcp-http, mcp-sse    take MCP servers over http / sse (stdio always)
  additional-dirs      take additionalDirectories in session/new
  close-stdout         close stdout after answering initialize, keep running
  auth-status          offer auth/status (unauthenticated until signed in)
  steer-request        advertise the _session/steering extension (as codex-acp
                       2.6 does) and take its messages into the running turn
  replay-on-resume     with resume: replay the session on session/resume too
                       (as fast-agent 0.10.48 does, against the spec)
  auth-gateway         offer a gateway method (_meta.gateway) and say who is
                       signed in (_auth/status_update): Not logged in until
                       a gateway is given
  tokens               tell each turn's tokens in the prompt result (usage,
                       and _meta.quota)
                       and send auth/status_update after demo-login
  resume               offer session/resume and session/close
  load                 offer session/load (replays the stored turns as
                       user and agent message chunks) and session/close
  slow-reopen          answer session/resume and session/load after 1 s
  list                 offer session/list (the stored sessions of a cwd,
                       newest first, one page) and session/delete
  fork                 offer session/fork (a new session holding the
                       stored turns of the given one)
  steer                advertise _meta.claudeCode.promptQueueing: a prompt
                       during a turn of its session is taken into it
                       (slow and wait say \"Steered: TEXT\") and answered
                       when that turn ends
With resume, load, list or fork, sessions are stored as <sessionId>.json files
in PARLEY_DEMO_SESSIONS (default: parley-demo-sessions in the temporary
directory), with session ids unique across processes; each prompt adds a
turn (its text and the agent text streamed), session-info stores the title.

Prompt keywords (the prompt's first word):
  flood N M            N text chunks of M bytes, as fast as possible
  flood-file PATH N    the text of PATH (UTF-8) in N chunks, as fast as possible
  slow N MS            N text chunks, MS milliseconds apart
  stop REASON          end the turn with end_turn, max_tokens,
                       max_turn_requests or refusal
  wait                 stream slowly until session/cancel (stopReason cancelled)
  crash                stream a little, then exit with status 3 mid-turn
  permission [N]       ask for permission N times; each answer is shown
  ask KIND PATH TITLE  ask for permission for a tool call of KIND (none: no
                       kind; announced:KIND: the kind only in the tool call's
                       announcement) touching PATH (-: none); show the answer
  silent SECONDS       say nothing for SECONDS, then answer
  ignore-cancel        say nothing and never end the turn, even when
                       cancelled (for a minute)
  elicit-form          ask the client for a form (name, age, colour,
                       subscribe) and show the answer
  elicit-url [tricky|userinfo]
                       ask the client to visit a URL; on accept, tell it
                       the elicitation is complete, then show the answer
                       (tricky: line breaks after a trusted host's name;
                       userinfo: a trusted name before an @)
  unknown-request      send Parley a request of an unknown method
  permission-elsewhere ask for permission in a session that is not this one
  tool ID TITLE        report a completed tool call with this id
  permission-hostile   ask for permission with a NUL and a right-to-left
                       override in the tool's title
  fs-read PATH         ask Parley to read PATH and show the answer
  fs-write PATH TEXT   ask Parley to write TEXT to PATH and show the answer
  disk-edit OP...      change files in the cwd by itself (not through fs/*),
                       each named in a tool call (quiet:OP: not named):
                       write:PATH=TEXT, append:PATH=TEXT, delete:PATH,
                       rename:FROM=TO, chmod:PATH=MODE, mkdir:PATH,
                       rmdir:PATH, rmtree:PATH, symlink:PATH=TARGET, sleep:MS
                       (in TEXT, \\n is a newline, \\s a space)
  disk-edit-now OP...  as disk-edit, the moment the prompt arrives
  changefiles          as disk-edit, a line appended to src/main.rs
  fs-race N OUTSIDE    swap a directory of the cwd with a symlink to OUTSIDE
                       (renameat2 RENAME_EXCHANGE) while reading and writing
                       through it N times; report what came from outside
  fs-fifo PATH         make a FIFO at PATH and ask Parley to read it
  fs-no-read N PATH    ask Parley to read PATH N times, then stop reading
                       stdin for good (the answers pile up)
  fs-read-len PATH [LINE [LIMIT]]
                       ask Parley to read PATH; show only the answer's size
  usage USED SIZE      report context usage
  cost AMOUNT          report usage with a cost in USD
  session-info TITLE   title the session (session_info_update)
  switch-mode MODE     change its own mode (config_option_update)
  received             tell the MCP servers, additional directories and
                       option values the session got, and the last
                       prompt's content blocks
The model option's value demo-unavailable is always refused.
  late                 send a chunk after answering session/prompt
  unknown-update       send a session update of an unknown kind
  remembered           say the user messages the stored session holds
                       (modes resume, load, list or fork)
  subagents [SECONDS]  delegate to two helpers at once (needs the client's
                       subagents capability): one explores for SECONDS
                       (default 3) and starts a child of its own, one asks
                       permission on its own session and appends to
                       NOTES.md; each reports back (session_message)
  subagents-flood K N M K helpers stream N chunks of M bytes each at once
  subagents-quiet [SECONDS]
                       the same, the explorer silent while it works
  timeline             a notice, two plans by id (one removed), two agent
                       messages (messageId), a tool call with its name, a
                       context compaction with a summary, an update of an
                       unknown kind (twice), and a last notice
  stderr K             write K lines on stderr
  error                answer session/prompt with a JSON-RPC error
  echo TEXT            answer TEXT
  terminals            use the client's terminals: echo, 5 MB through a
                       1,000-byte limit, kill a sleep and a command that
                       ignores SIGTERM, an unknown id; say what came back
  terminal-colors      a tool call showing a terminal with coloured output
  terminal-flood BYTES a tool call showing a terminal that prints BYTES bytes
  terminal-race        four terminal/create written at once; says how many were made
  terminal-run SCRIPT  run sh -c SCRIPT in a client terminal; say its exit
                       code and output
  terminal-orphan MARK a terminal whose command leaves a grandchild (its
                       environment holds MARK), then wait a minute
  broken-chunks        chunks with a split surrogate pair, invalid UTF-8 and
                       a byte-order mark, written raw
  text-fixture NAME [pieces]
                       answer fixture NAME in one chunk (or streamed in
                       pieces): four-fences, nul (control characters), link
                       (a misleading link) or bidi (a right-to-left override
                       in a file name)
Any prompt ends with stopReason cancelled if session/cancel arrives.

--login: the terminal sign-in: asks for \"yes\" on its terminal, then
exits 0 (and leaves .parley-demo-signed-in in the current directory) or 1.
";

/// The slash commands, as `session/new` (and resume, load) announce them.
pub(super) fn available_commands(agent: &Agent, sid: &str) {
    agent.update(
        sid,
        json!({"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "help", "description": "What the demo agent can do"},
            {"name": "plan", "description": "Show a plan whose entries progress"},
            {"name": "flood", "description": "Stream 2,000 chunks as fast as possible"}
        ]}),
    );
}

/// The `help` keyword: `--help`, streamed as a code block.
pub(super) async fn answer(agent: &Agent, sid: &str) -> String {
    stream(agent, sid, &format!("```\n{HELP}```\n"), 0).await;
    "end_turn".to_string()
}
