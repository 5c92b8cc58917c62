//! The Agent Client Protocol over newline-delimited JSON-RPC 2.0.
//!
//! - [`lines`]: the capped line reader (32 MiB per line).
//! - [`connection`]: requests with id correlation, notifications, and requests
//!   from the agent answered later; dispatch is strictly in arrival order.
//! - `incoming`: the shapes a line from the agent is decoded into (the
//!   envelope, and the fast paths for session updates).
//! - [`calls`]: the typed ACP calls, with the protocol's own serde types.
//! - [`fs`]: the `fs/*` client capability, confined to the agent's cwd.
//! - `fs_syscalls`: the system calls `fs` is made of.
//! - [`repair`]: lines spoilt only by lone surrogates, invalid UTF-8 or a
//!   byte-order mark, mended so their text is kept.

pub mod calls;
pub mod connection;
pub mod fs;
mod fs_syscalls;
#[cfg(test)]
mod fuzz;
mod incoming;
pub mod lines;
pub mod repair;

pub use connection::{Connection, Handler, Responder, RpcError};

/// The largest line accepted from an agent; a longer one ends the connection.
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;
