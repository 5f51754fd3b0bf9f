//! Output for people: terminal tables, Markdown and the HTML report.

pub mod color;
pub mod compare;
pub mod html;
pub mod sweep;
pub mod table;
