//! The host side of the report: each distinct host snapshot rendered
//! generically from its JSON (so fields added later — a full audit, its
//! checks — appear without changes here), and the audit's `warn` findings
//! gathered for the top of the page.

use std::fmt::Write;

use serde_json::Value;

use super::prepare::Prepared;
use super::svg::esc;
use super::tables::inline;

/// Whether an array looks like audit checks: objects with a `status`.
fn is_checks(items: &[Value]) -> bool {
    !items.is_empty()
        && items
            .iter()
            .all(|i| i.get("status").is_some_and(Value::is_string))
}

fn is_warn(check: &Value) -> bool {
    check
        .get("status")
        .and_then(Value::as_str)
        .is_some_and(|s| {
            matches!(
                s.to_ascii_lowercase().as_str(),
                "warn" | "warning" | "fail" | "bad" | "error"
            )
        })
}

/// Every audit check (object with a `status`) anywhere in a JSON tree.
pub fn find_checks(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Array(items) if is_checks(items) => out.extend(items.iter().cloned()),
        Value::Array(items) => items.iter().for_each(|i| find_checks(i, out)),
        Value::Object(map) => map.values().for_each(|i| find_checks(i, out)),
        _ => {}
    }
}

/// The warn findings of every input's host audit, most prominent first.
pub fn findings(prep: &Prepared) -> String {
    let mut rows = Vec::new();
    let mut seen: Vec<Value> = Vec::new();
    for input in &prep.inputs {
        let Some(run) = &input.loaded.run else {
            continue;
        };
        let mut checks = Vec::new();
        find_checks(
            &serde_json::to_value(&run.host).unwrap_or(Value::Null),
            &mut checks,
        );
        for c in checks.into_iter().filter(is_warn) {
            if seen.contains(&c) {
                continue;
            }
            let field = |k: &str| c.get(k).map(inline).unwrap_or_default();
            let id = ["id", "name", "check", "key"]
                .iter()
                .map(|k| field(k))
                .find(|s| !s.is_empty())
                .unwrap_or_else(|| "check".into());
            let mut text = format!("<strong>{}</strong>", esc(&id));
            let (current, recommended) = (field("current"), field("recommended"));
            if !current.is_empty() {
                let _ = write!(text, ": is <code>{}</code>", esc(&current));
            }
            if !recommended.is_empty() {
                let _ = write!(text, ", recommended <code>{}</code>", esc(&recommended));
            }
            let why = field("why");
            if !why.is_empty() {
                let _ = write!(text, " — {}", esc(&why));
            }
            rows.push(format!(
                "<li>{text} <small>({})</small></li>",
                esc(&input.name)
            ));
            seen.push(c);
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "<section id=\"findings\" class=\"findings\"><h2>Host audit: {} setting(s) work against low latency</h2><ul>{}</ul></section>",
        rows.len(),
        rows.join("")
    )
}

/// A JSON value as HTML: objects as key/value tables, arrays of objects as
/// tables (audit checks with their status), scalars as text.
pub fn json_html(v: &Value) -> String {
    match v {
        Value::Null => "<span class=\"na\">not available</span>".into(),
        Value::String(s) => esc(s),
        Value::Bool(_) | Value::Number(_) => esc(&v.to_string()),
        Value::Array(items) if items.is_empty() => "<span class=\"na\">none</span>".into(),
        Value::Array(items) if items.iter().all(Value::is_object) => {
            let mut cols: Vec<String> = Vec::new();
            for item in items {
                for key in item.as_object().into_iter().flat_map(|m| m.keys()) {
                    if !cols.contains(key) {
                        cols.push(key.clone());
                    }
                }
            }
            let mut out = String::from("<table class=\"json\"><thead><tr>");
            for c in &cols {
                let _ = write!(out, "<th>{}</th>", esc(c));
            }
            out.push_str("</tr></thead><tbody>");
            for item in items {
                let class = match item.get("status").and_then(Value::as_str) {
                    Some(_) if is_warn(item) => " class=\"warnrow\"",
                    Some(s) if s.eq_ignore_ascii_case("ok") => " class=\"okrow\"",
                    _ => "",
                };
                let _ = write!(out, "<tr{class}>");
                for c in &cols {
                    let _ = write!(
                        out,
                        "<td>{}</td>",
                        item.get(c).map(json_html).unwrap_or_default()
                    );
                }
                out.push_str("</tr>");
            }
            out.push_str("</tbody></table>");
            out
        }
        Value::Array(items) => esc(&items.iter().map(inline).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => {
            let mut out = String::from("<table class=\"kv\"><tbody>");
            for (k, v) in map {
                let _ = write!(
                    out,
                    "<tr><th>{}</th><td>{}</td></tr>",
                    esc(&k.replace('_', " ")),
                    json_html(v)
                );
            }
            out.push_str("</tbody></table>");
            out
        }
    }
}

/// The host snapshots, one per distinct snapshot, naming the inputs that share it.
pub fn hosts(prep: &Prepared) -> String {
    let mut groups: Vec<(Value, Vec<&str>)> = Vec::new();
    for input in &prep.inputs {
        let Some(run) = &input.loaded.run else {
            continue;
        };
        let host = serde_json::to_value(&run.host).unwrap_or(Value::Null);
        match groups.iter_mut().find(|(h, _)| *h == host) {
            Some((_, names)) => names.push(&input.name),
            None => groups.push((host, vec![&input.name])),
        }
    }
    if groups.is_empty() {
        return "<p class=\"note\">No input is a cauda run file, so no host conditions were recorded.</p>".into();
    }
    let mut out = String::new();
    for (host, names) in groups {
        let _ = write!(
            out,
            "<div class=\"host\"><p class=\"meta\">recorded with {}</p>{}</div>",
            esc(&names.join(", ")),
            json_html(&host)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_checks_are_found_anywhere_and_warnings_marked() {
        let host = serde_json::json!({
            "kernel": "6.1",
            "audit": {"profile": "latency", "checks": [
                {"id": "vm.swappiness", "status": "warn", "current": "60", "recommended": "≤ 10", "why": "swap stalls"},
                {"id": "clocksource", "status": "ok", "current": "tsc"}
            ]}
        });
        let mut checks = Vec::new();
        find_checks(&host, &mut checks);
        assert_eq!(checks.len(), 2);
        assert_eq!(checks.iter().filter(|c| is_warn(c)).count(), 1);
        let html = json_html(&host);
        assert!(html.contains("class=\"warnrow\"") && html.contains("vm.swappiness"));
        assert!(html.contains("<th>recommended</th>"));
    }
}
