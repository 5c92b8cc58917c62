"""What the AT-SPI scripts (`a11y-keyboard.py`, `a11y-views.py`) share:
the running Parley's windows, the focus, synthesized keys, and what a
screen reader would hear."""
import sys
import time

try:
    import gi
    gi.require_version("Gdk", "4.0")
    import pyatspi
    from gi.repository import Gdk
except (ImportError, ValueError):
    print("SKIP: python3-pyatspi is not installed", flush=True)
    sys.exit(0)

from a11y_check import bad_name  # noqa: E402

MODIFIERS = {"ctrl": 37, "alt": 64, "shift": 50}  # Xvfb's keycodes


def say(text):
    print(text, flush=True)


def fail(reason):
    say(f"FAILED: {reason}")
    sys.exit(1)


def frames():
    out = []
    for app in pyatspi.Registry.getDesktop(0):
        if app is not None and "parley" in (app.name or "").lower():
            out += [f for f in app if f is not None]
    return out


def main_frame():
    for f in frames():
        if f.name == "Parley" or "Agent" in (f.name or ""):
            return f
    fs = frames()
    return fs[0] if fs else None


def focused(node):
    try:
        if node.getState().contains(pyatspi.STATE_FOCUSED):
            return node
        children = list(node)
    except Exception:
        return None
    for c in children:
        if c is not None:
            f = focused(c)
            if f is not None:
                return f
    return None


def describe(node):
    if node is None:
        return "nothing"
    try:
        return f"{node.getRoleName()} {node.name!r}"
    except Exception:
        return "gone"


def press(step, wait=0.4):
    """`Tab`, `shift+Tab`, `alt+1`, `ctrl+e`; a longer word is typed."""
    parts = step.split("+")
    key = parts[-1]
    mods = [MODIFIERS[m] for m in parts[:-1]]
    for m in mods:
        pyatspi.Registry.generateKeyboardEvent(m, None, pyatspi.KEY_PRESS)
    if mods:
        # The modifier is down before the key (synthesized events can
        # otherwise arrive as a plain key).
        time.sleep(0.1)
    if len(key) == 1 or Gdk.keyval_from_name(key) not in (0, 0xFFFFFF):
        pyatspi.Registry.generateKeyboardEvent(Gdk.keyval_from_name(key), None, pyatspi.KEY_SYM)
    for m in reversed(mods):
        pyatspi.Registry.generateKeyboardEvent(m, None, pyatspi.KEY_RELEASE)
    time.sleep(wait)


KEY_NAMES = {" ": "space", "-": "minus", "@": "at", ".": "period", "/": "slash", ":": "colon", "_": "underscore"}


def type_text(text):
    for ch in text:
        name = KEY_NAMES.get(ch, ch)
        pyatspi.Registry.generateKeyboardEvent(Gdk.keyval_from_name(name), None, pyatspi.KEY_SYM)
        time.sleep(0.02)
    time.sleep(0.3)


def find(node, pred):
    try:
        if pred(node):
            return node
        children = list(node)
    except Exception:
        return None
    for c in children:
        if c is not None:
            hit = find(c, pred)
            if hit is not None:
                return hit
    return None


def wait_for(what, pred, limit=30):
    deadline = time.time() + limit
    while time.time() < deadline:
        hit = pred()
        if hit:
            return hit
        time.sleep(0.2)
    fail(f"timed out waiting for {what}")


def unnamed(node):
    return bad_name(node)


def tab_round(frame, limit=60, key="Tab", must_return=False):
    """Tabs (or Shift+Tabs: key) until the focus comes back; every stop
    must have a name. With must_return, the focus must come back."""
    stops = []
    first = None
    came_back = False
    for _ in range(limit):
        press(key, 0.25)
        node = focused(frame)
        here = describe(node)
        why = unnamed(node) if node is not None else None
        if why:
            fail(f"a Tab stop badly named, {why}: {here} (after {stops[-3:]})")
        # The same stop four presses in a row: the focus is stuck (a trap
        # would otherwise pass as "came back" to where it stays).
        if len(stops) >= 3 and stops[-3:] == [here] * 3:
            fail(f"{key} is stuck on {here}")
        if first is None:
            first = here
        elif here == first and len(stops) > 1:
            came_back = True
            break
        stops.append(here)
    if must_return and not came_back:
        fail(f"{key} did not come back to {first} in {limit} presses: {stops[-8:]}")
    # "nothing": GTK 4.8 marks no node focused inside an AdwEntryRow; its
    # name is checked by a11y-names.py.
    say(f"{key} stops: {len(stops)}: {stops}")
    return stops


def start(limit=20):
    frame = wait_for("the window", main_frame, limit)
    ext = frame.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
    # No window manager here: the keyboard goes where the pointer is.
    pyatspi.Registry.generateMouseEvent(ext.x + min(ext.width, 300) // 2, ext.y + 10, "abs")
    time.sleep(0.5)
    return frame


def select_agent_and_send(frame, text, send=True):
    # Into the Agents list: Tab until the focus is in it, then the arrows.
    for _ in range(10):
        node = focused(frame)
        inside = node is not None and find(frame, lambda n: n.getRoleName() == "list" and n.name == "Agents" and find(n, lambda m: m == node) is not None)
        if inside:
            break
        press("Tab")
    press("Down")
    press("Up")
    node = focused(frame)
    if node is None or node.getRoleName() != "list item" or not (node.name or "").startswith("Demo Agent"):
        fail(f"the arrow keys did not land on the agent's row: {describe(node)}")
    say(f"agent row: {describe(node)}")
    press("Return")
    node = focused(frame)
    if describe(node) != "text 'Message'":
        fail(f"Enter on the agent did not go to the composer: {describe(node)}")
    if not send:
        return
    type_text(text)
    press("Return")
    say("sent")


HEARD = []


def listen():
    """Keeps what a screen reader would hear: announcements (GTK 4.8: the
    focused control's description changing) and typed text."""
    def on_event(event):
        try:
            app = event.source.getApplication()
            if app is None or "parley" not in (app.name or "").lower():
                return
            if event.type.startswith("object:property-change:accessible-description"):
                # What the event says, not what the control says now: one
                # announcement can follow another before this runs.
                said = event.any_data if isinstance(event.any_data, str) else None
                HEARD.append(said if said is not None else (event.source.description or ""))
            elif event.type.startswith("object:text-changed") or event.type.startswith("object:announcement"):
                HEARD.append(str(event.any_data))
        except Exception:
            pass
    pyatspi.Registry.registerEventListener(
        on_event,
        "object:property-change:accessible-description",
        "object:announcement",
        "object:text-changed:insert",
    )


def pump(seconds):
    """Waits, letting the events come in."""
    from gi.repository import GLib
    ctx = GLib.MainContext.default()
    end = time.time() + seconds
    while time.time() < end:
        while ctx.pending():
            ctx.iteration(False)
        time.sleep(0.05)


def heard(part, seconds=20):
    end = time.time() + seconds
    while time.time() < end:
        pump(0.2)
        if any(part in h for h in HEARD):
            return True
    return False


def other_window(keys, title_part, count):
    for k in keys:
        press(k, 0.6)
    win = wait_for(f"the {title_part} window", lambda: next((f for f in frames() if title_part in (f.name or "")), None), 10)
    say(f"opened: {describe(win)}")
    if any((f.name or "").startswith("Gtk") for f in frames()):
        fail(f"a window is named after its class: {[f.name for f in frames()]}")
    return win


def close_window(count):
    press("Escape", 1.0)
    wait_for("the window to close", lambda: len(frames()) == count, 10)


def every_text(node, out=None, depth=0):
    """Every name, description and text under `node`: what any screen
    reader could read out of it."""
    out = [] if out is None else out
    if depth > 60:
        return out
    try:
        out.append(node.name or "")
        out.append(node.description or "")
        try:
            t = node.queryText()
            out.append(t.getText(0, min(t.characterCount, 4000)))
        except Exception:
            pass
        children = list(node)
    except Exception:
        return out
    for c in children:
        if c is not None:
            every_text(c, out, depth + 1)
    return out
