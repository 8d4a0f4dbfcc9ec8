//! Answers the nats-conformance adapter protocol (docs/adapter-protocol.md, version 2) with async-nats,
//! the NATS client for Rust. Its public subject check is `Subject::validated` (the rule it applies
//! before subscribing: `Subject::is_valid`), which answers `valid_subject` for the subscribe rule;
//! this file only reads requests and writes answers.
use std::io::{BufRead, Write};

use async_nats::Subject;
use serde_json::{json, Value};

fn answer(request: &Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    match request.get("op").and_then(Value::as_str) {
        Some("hello") => json!({
            "id": id, "protocol": 2,
            "implementation": "async-nats 0.51.0",
            "server_version": null,
            "ops": ["hello", "valid_subject"],
            "subject_rules": ["subscribe"],
        }),
        Some("valid_subject") => match request.get("subject").and_then(Value::as_str) {
            None => json!({"id": id, "error": "bad-request", "detail": "missing field 'subject'"}),
            Some(_) if request.get("literal").and_then(Value::as_bool) == Some(true) => json!({
                "id": id, "error": "bad-request", "detail": "async-nats exposes no publish-subject rule"
            }),
            Some(subject) => json!({"id": id, "valid": Subject::validated(subject).is_ok()}),
        },
        other => json!({"id": id, "error": "bad-request", "detail": format!("unknown op {other:?}")}),
    }
}

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(request) if request.is_object() => answer(&request),
            _ => json!({"id": null, "error": "bad-request", "detail": "line is not a JSON object"}),
        };
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
}
