"""What the AT-SPI scripts count as a bad accessible name: none, a class
name ("GtkImage"), a mnemonic's underscore ("_Cancel"), or a name said
twice. GTK 4.8 makes a name of a widget's own label *and* the text of what
labels it, so a doubled name reads "Cancel the Turn Cancel", "Age Age" or
"Sign in with Demo sign-in Demo sign-in"."""
import re


def doubled(name):
    """The word run `name` repeats, or None."""
    words = name.split()
    n = len(words)
    # A run said twice in a row: "Age Age", "… Demo sign-in Demo sign-in".
    for k in range(1, n // 2 + 1):
        for i in range(0, n - 2 * k + 1):
            # ("Sign in in a terminal" is English.)
            if words[i:i + k] == words[i + k:i + 2 * k] and (k > 1 or len(words[i]) > 2):
                return " ".join(words[i:i + k])
    # Ends as it begins: "Cancel the Turn Cancel", "Add Auggie CLI Add".
    for k in range(1, n // 2 + 1):
        if words[:k] == words[n - k:] and n > k:
            return " ".join(words[:k])
    return None


def child_texts(node, depth=0):
    out = []
    if depth > 3:
        return out
    try:
        children = list(node)
    except Exception:
        return out
    for c in children:
        if c is None:
            continue
        try:
            if c.getRoleName() == "label" and c.name:
                out.append(c.name)
        except Exception:
            continue
        out += child_texts(c, depth + 1)
    return out


def bad_name(node):
    """Why `node`'s name is bad, or None."""
    try:
        name = node.name or ""
    except Exception:
        return None
    if not name.strip():
        return "no name"
    if name.startswith("Gtk") or name.startswith("Adw"):
        return f"named after its class: {name!r}"
    if re.search(r"(^|\s)_\w", name):
        return f"a mnemonic's underscore: {name!r}"
    run = doubled(name)
    if run:
        return f"{run!r} said twice: {name!r}"
    # A button's name and then the text of its own label: "Restart the
    # Agent Restart Agent". (A row's name rightly joins its labels.)
    try:
        button = node.getRoleName() in ("push button", "toggle button")
    except Exception:
        button = False
    for text in child_texts(node) if button else []:
        # A name that ends with its value is no doubling: "Model: Demo
        # Mini" (a picker), "Version 0.1.0" (About's version button).
        head = name[: -len(text)].rstrip() if name.endswith(" " + text) else ""
        if name != text and head and not head.endswith(":") and len(text.split()) > 1:
            return f"its label's text said again: {name!r}"
    return None


if __name__ == "__main__":
    for good in ["Cancel", "Start Demo Agent", "Allow once (Alt+1)", "Send", "Demo Agent, stopped", "Previous Match", "Sign in in a terminal"]:
        assert doubled(good) is None, good
    for bad in ["Age Age", "Cancel the Turn Cancel", "Add Auggie CLI Add", "Sign in with Demo sign-in Demo sign-in"]:
        assert doubled(bad), bad
    class Node:
        def __init__(self, role, name, children=()):
            self.role, self.name, self.children = role, name, list(children)

        def getRoleName(self):
            return self.role

        def __iter__(self):
            return iter(self.children)

    label = lambda text: Node("label", text)
    assert bad_name(Node("push button", "Restart the Agent Restart Agent", [label("Restart Agent")]))
    assert bad_name(Node("push button", "Mode: Ask", [label("Ask")])) is None
    assert bad_name(Node("push button", "Model: Demo Mini", [label("Demo Mini")])) is None
    assert bad_name(Node("push button", "Version 0.1.0", [label("0.1.0")])) is None
    assert bad_name(Node("push button", "_Save", [label("Save")]))
    print("ok")
