//! Output for people: terminal tables, Markdown and the HTML report.

pub mod blame;
pub mod color;
pub mod compare;
pub mod html;
pub mod numbers;
pub mod sweep;
pub mod table;
