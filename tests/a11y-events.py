#!/usr/bin/python3
"""Listens to the accessibility events of Parley's windows, as a screen
reader would, while the window's first-run check (PARLEY_SMOKE) sends a
message, allows the permission the demo agent asks for and waits for the
answer. Prints `listening`, then one line per relevant event
(`EVENT <type> | <text>`), then `done` when Parley has gone or after the
time limit given as the first argument (seconds)."""
import sys

try:
    import pyatspi
    from gi.repository import GLib
except ImportError:
    print("SKIP: python3-pyatspi is not installed", flush=True)
    sys.exit(0)

limit = int(sys.argv[1]) if len(sys.argv) > 1 else 60
loop = GLib.MainLoop()


def text_of(event):
    try:
        if event.type.startswith("object:property-change:accessible-description"):
            return event.source.description or ""
        if event.type.startswith("object:property-change:accessible-name"):
            return event.source.name or ""
        if event.type.startswith("object:announcement"):
            return str(event.any_data)
        if event.type.startswith("object:text-changed"):
            return str(event.any_data)
    except Exception:
        return ""
    return ""


def in_parley(event):
    try:
        app = event.source.getApplication()
        return app is not None and "parley" in (app.name or "").lower()
    except Exception:
        return False


def on_event(event):
    if not in_parley(event):
        return
    text = text_of(event).replace("\n", " ")
    if text:
        print(f"EVENT {event.type} | {text[:300]}", flush=True)


pyatspi.Registry.registerEventListener(
    on_event,
    "object:property-change:accessible-description",
    "object:property-change:accessible-name",
    "object:announcement",
    "object:text-changed:insert",
)
GLib.timeout_add_seconds(limit, loop.quit)
print("listening", flush=True)
try:
    loop.run()
finally:
    print("done", flush=True)
