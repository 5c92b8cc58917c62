//! Integration tests: real agent processes (the demo agent in its scripted
//! modes), real files in temp dirs, the services and parley-cli as users
//! and scripts drive them. One test binary, several modules.

mod acp;
mod attention;
mod auth;
mod chat;
mod checkpoints;
mod cli;
mod common;
mod config;
mod config_hardening;
mod controls;
mod flatpak;
mod fs_boundary;
mod hardening_four;
mod history;
mod launch;
#[path = "../support/model_api.rs"]
mod model_api;
mod no_home;
mod processes;
mod real_agents;
mod real_claude;
mod real_codex;
mod real_gemini;
mod real_sign_in;
mod registry;
mod remote;
mod sshd;
mod steering;
mod subagents;
mod supervisor;
mod terminals;
mod translations;
mod worktrees;
