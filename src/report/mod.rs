//! Output for people: terminal tables (and later Markdown and HTML).

pub mod compare;
pub mod table;
