#!/usr/bin/python3
"""Prints every control (button, text field, check box…) of Parley's windows
whose accessible name is missing or said twice (one per line, see
a11y_check.py), then `windows: N`. The window
tests run it against a real `parley` (screen readers see the same tree)."""
import sys

from a11y_check import bad_name

try:
    import pyatspi
except ImportError:
    print("SKIP: python3-pyatspi is not installed")
    sys.exit(0)

# The controls a person reaches with Tab or reads in a form.
ROLES = ("push button", "toggle button", "text", "password text", "entry", "check box", "combo box", "radio button", "spin button", "slider", "switch")
unnamed = []
windows = 0


def walk(node, path):
    global unnamed
    try:
        role = node.getRoleName()
        name = node.name or ""
        # GTK 4.8 never sets "showing" below a window; "visible" includes
        # the pages of a stack that are not shown, which are checked too.
        showing = node.getState().contains(pyatspi.STATE_VISIBLE)
    except Exception:
        return
    why = bad_name(node) if showing and role in ROLES else None
    if why:
        unnamed.append(f"{role} at {path}: {why}")
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
