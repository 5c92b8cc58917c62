#!/usr/bin/python3
"""Prints every push button, toggle button and text field of Parley's windows
that has no accessible name (one per line), then `windows: N`. The window
tests run it against a real `parley` (screen readers see the same tree)."""
import re
import sys

try:
    import pyatspi
except ImportError:
    print("SKIP: python3-pyatspi is not installed")
    sys.exit(0)

unnamed = []
windows = 0


def walk(node, path):
    global unnamed
    try:
        role = node.getRoleName()
        name = node.name or ""
        showing = node.getState().contains(pyatspi.STATE_SHOWING)
    except Exception:
        return
    if showing and role in ("push button", "toggle button", "text") and (not name or name.startswith("Gtk") or re.search(r"(^|\s)_\w", name)):
        unnamed.append(f"{role} at {path}")
    for i, child in enumerate(node):
        if child is not None:
            walk(child, f"{path}/{role}[{i}]")


for app in pyatspi.Registry.getDesktop(0):
    if app is None or "parley" not in (app.name or "").lower():
        continue
    for frame in app:
        if frame is not None:
            windows += 1
            walk(frame, frame.name or "window")

for u in unnamed:
    print(u)
print(f"windows: {windows}")
