//! The configuration: its model, the JSON Schema and validation, where the
//! file lives, the default file, saving atomically, watching, recent files.

pub mod edit;
pub mod model;
pub mod parse;
pub mod rules;
pub mod service;
pub mod store;
pub mod validate;
pub mod watch;

pub use validate::Problem;
