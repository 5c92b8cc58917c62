#!/usr/bin/python3
"""Drives the views added since the first rounds with the keyboard alone,
through AT-SPI, as a person with a screen reader and no mouse would. Prints
one line per step and finishes with `ok` or `FAILED: reason`.

  a11y-views.py both-ways    After a turn with a tool: Tab and Shift+Tab
                             each go round the whole window and come back,
                             through the same named stops (the conversation
                             is one stop, left both ways).
  a11y-views.py mention      `@no` in the message: "2 matches: …" is heard,
                             Down is heard as the next file, Tab takes it.
  a11y-views.py elicitation  The agent's form opens on its required Name
                             field: focused (a focus event is sent), said
                             to be required; every stop is named both ways;
                             Enter in it submits the form.
  a11y-views.py inbox        A permission waits: Ctrl+I opens the inbox, its
                             row says whose and what waits, Tab reaches it
                             and Close, Enter on it goes to the request.
  a11y-views.py terminal     Signing in in a terminal: what the terminal
                             asks ("Type yes to sign in:") can be read;
                             typing yes and Enter signs in.
  a11y-views.py rtl          Parley in a Hebrew locale (LANG, LOCPATH set by
                             the caller): the window is mirrored, the agents
                             right of the conversation and Send left of the
                             message; Tab still goes round, every stop named.
"""
import sys
import time

from a11y_keys import *  # noqa: F401,F403 (the shared steps)
from a11y_keys import HEARD, pyatspi  # noqa: F401

FOCUSES = []


def listen_focus():
    """Keeps every focus event: (role, name) of what took the focus."""
    def on_event(event):
        try:
            if event.detail1 != 1:
                return
            app = event.source.getApplication()
            if app is None or "parley" not in (app.name or "").lower():
                return
            FOCUSES.append((event.source.getRoleName(), event.source.name or ""))
        except Exception:
            pass
    pyatspi.Registry.registerEventListener(on_event, "object:state-changed:focused")


def turn_with_a_tool(frame):
    select_agent_and_send(frame, "hello")
    wait_for("the permission banner", lambda: find(frame, lambda n: n.getRoleName() == "push button" and "Allow once" in (n.name or "")))
    press("alt+1")
    wait_for("the end of the turn", lambda: find(frame, lambda n: n.getRoleName() == "push button" and n.name == "Send"), 60)
    say("answered")


def both_ways():
    frame = start()
    turn_with_a_tool(frame)
    forward = tab_round(frame, 80, "Tab", must_return=True)
    back = tab_round(frame, 80, "shift+Tab", must_return=True)

    def controls(stops):
        # The conversation is one stop, on the row last focused.
        return {s for s in stops if not s.startswith("list item")}
    for stops, key in ((forward, "Tab"), (back, "Shift+Tab")):
        if not any(s.startswith("list item") for s in stops):
            fail(f"{key} never reached the conversation: {stops}")
    if controls(forward) != controls(back):
        fail(f"Tab and Shift+Tab stop at different controls: only by Tab {controls(forward) - controls(back)}, only by Shift+Tab {controls(back) - controls(forward)}")
    say("ok")


def mention():
    listen()
    frame = start()
    select_agent_and_send(frame, "", send=False)
    before = len(HEARD)
    for key in ("at", "n", "o"):
        press(key, 0.3)
    listed = wait_for("the Files list", lambda: find(frame, lambda n: n.getRoleName() == "list" and n.name == "Files"), 10)
    items = [c.name or "" for c in listed if c is not None]
    say(f"files: {items}")
    if sorted(items) != ["notebook.txt", "notes.md"]:
        fail(f"the Files list holds {items}")
    if not heard(f"2 matches: {items[0]}", 10):
        fail(f"the matches were not heard: {HEARD[before:]}")
    say(f"heard: 2 matches: {items[0]}")
    press("Down", 0.5)
    if not heard(items[1], 10):
        fail(f"the highlighted file was not heard: {HEARD[before:]}")
    say(f"heard: {items[1]}")
    press("Tab", 0.8)
    node = focused(frame)
    if node is None or node.name != "Message":
        fail(f"the focus left the message: {describe(node)}")
    t = node.queryText()
    text = t.getText(0, t.characterCount)
    say(f"message: {text!r}")
    if f"@{items[1]}" not in text:
        fail(f"Tab did not take {items[1]}: {text!r}")
    say("ok")


def elicitation():
    listen_focus()
    frame = start()
    count = len(frames())
    select_agent_and_send(frame, "elicit-form")
    form = wait_for("the form", lambda: next((f for f in frames() if "Asks" in (f.name or "")), None), 20)
    say(f"form: {describe(form)}")
    time.sleep(1.0)
    node = focused(form)
    if node is None or node.name != "Name" or node.getRoleName() != "text":
        fail(f"the form did not open on its Name field: {describe(node)}")
    # GTK 4.8 gives no "required" state: it is said in the description.
    if not node.getState().contains(pyatspi.STATE_REQUIRED) and not (node.description or "").startswith("Required"):
        fail(f"the Name field is not said to be required: {node.description!r}")
    pump(0.5)
    if ("text", "Name") not in FOCUSES:
        fail(f"no focus event for the Name field: {FOCUSES[-5:]}")
    say(f"focused: {describe(node)}, {node.description!r}; focus event sent")
    stops = tab_round(form, 20, "Tab", must_return=True)
    back = tab_round(form, 20, "shift+Tab", must_return=True)
    if set(stops) != set(back):
        fail(f"Tab and Shift+Tab stop at different controls: {stops} / {back}")
    for _ in range(12):
        node = focused(form)
        if node is not None and node.name == "Name":
            break
        press("Tab", 0.3)
    type_text("Ada")
    press("Return", 1.0)
    wait_for("the form to close", lambda: len(frames()) == count, 10)
    wait_for("the answer", lambda: find(frame, lambda n: '"name":"Ada"' in (n.name or "")), 20)
    say("submitted with Enter")
    say("ok")


def inbox():
    frame = start()
    count = len(frames())
    select_agent_and_send(frame, "hello")
    wait_for("the permission banner", lambda: find(frame, lambda n: n.getRoleName() == "push button" and "Allow once" in (n.name or "")))
    box = other_window(["ctrl+i"], "Inbox", count)
    rows = []
    find(box, lambda n: rows.append(n.name or "") if n.getRoleName() == "list item" else False)
    say(f"inbox rows: {rows}")
    if not any(r.startswith("Demo Agent: asks to run a tool") for r in rows):
        fail(f"no row says whose and what waits: {rows}")
    stops = tab_round(box, 20, must_return=True)
    if not any("Close" in s for s in stops) or not any(s.startswith("list item 'Demo Agent: asks") for s in stops):
        fail(f"Tab does not reach the row and Close: {stops}")
    for _ in range(10):
        node = focused(box)
        if node is not None and (node.name or "").startswith("Demo Agent: asks"):
            break
        press("Tab", 0.3)
    press("Return", 1.0)
    wait_for("the inbox to close", lambda: len(frames()) == count, 10)
    press("alt+1")
    wait_for("the end of the turn", lambda: find(frame, lambda n: n.getRoleName() == "push button" and n.name == "Send"), 60)
    say("answered from the inbox")
    say("ok")


def terminal():
    listen()
    frame = start()
    select_agent_and_send(frame, "hello")
    if not heard("Sign-in needed"):
        fail(f"\"Sign-in needed\" was not heard: {HEARD[-6:]}")
    button = None
    for _ in range(12):
        press("shift+Tab", 0.4)
        node = focused(frame)
        if node is not None and node.name == "Sign in with Sign in in a terminal":
            button = node
            break
    if button is None:
        fail(f"Shift+Tab did not reach the terminal sign-in: {describe(focused(frame))}")
    say(f"method: {describe(button)}")
    press("space", 1.0)

    def asks():
        return find(frame, lambda n: "Type yes to sign in" in (n.description or ""))
    term = wait_for("the terminal's question", asks, 20)
    say(f"terminal: {term.getRoleName()} {term.name!r}, description {term.description!r}")
    type_text("yes")
    press("Return", 1.0)
    if not heard("Signed in to Demo Agent", 30):
        fail(f"\"Signed in to Demo Agent\" was not heard: {HEARD[-6:]}")
    # The terminal went with the page: the focus is on the message.
    node = wait_for("the focus on the message", lambda: (lambda n: n if n is not None and n.name == "Message" else None)(focused(frame)), 10)
    say(f"heard: signed in; focus: {describe(node)}")
    say("ok")


def rtl():
    frame = start()

    def x_of(role, name):
        node = wait_for(f"the {role} {name!r}", lambda: find(frame, lambda n: n.getRoleName() == role and n.name == name), 10)
        e = node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        return e.x
    select_agent_and_send(frame, "", send=False)
    message, agents, send = x_of("text", "Message"), x_of("list", "Agents"), x_of("push button", "Send")
    say(f"x: agents {agents}, message {message}, send {send}")
    if not (agents > message and send < message):
        fail(f"the window is not mirrored: agents at x {agents}, the message at {message}, Send at {send}")
    tab_round(frame, 60, must_return=True)
    say("ok")


{"rtl": rtl, "both-ways": both_ways, "mention": mention, "elicitation": elicitation, "inbox": inbox, "terminal": terminal}[sys.argv[1]]()
