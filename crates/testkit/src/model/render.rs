//! Rendering: the bytes each operation puts on the wire, given the ids the
//! model assigned it. Pure: what the bytes mean is the prediction's job.

use portcullis_wire::Limits;
use serde_json::{Value, json};

use super::ops::{BadId, Op, Service};
use crate::fixtures::{self, frame};

/// The ids an operation's frames carry: `first` for every request it
/// sends, `second` only for the second call of [`Op::Concatenated`].
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Ids {
    pub(super) first: i64,
    pub(super) second: i64,
}

/// A call to a tool whose only argument is a `service` name.
fn service_call(id: i64, tool: &str, service: Service, modern: bool) -> Vec<u8> {
    if modern {
        fixtures::modern_call(id, tool, service.arguments(), "2026-07-28")
    } else {
        fixtures::call(id, tool, service.arguments())
    }
}

/// The bytes of `op` in a session with these limits.
pub(super) fn render(op: &Op, ids: Ids, limits: &Limits) -> Vec<u8> {
    let id = ids.first;
    match *op {
        Op::Initialize => fixtures::initialize(id, "2025-11-25"),
        Op::Initialized => fixtures::initialized(),
        Op::Ping => frame(&json!({"jsonrpc":"2.0","id":id,"method":"ping"})),
        Op::ToolsList => frame(&json!({"jsonrpc":"2.0","id":id,"method":"tools/list"})),
        Op::Call(service) => service_call(id, "service_status", service, false),
        Op::CallCrlf(service) => {
            let mut bytes = service_call(id, "service_status", service, false);
            bytes.pop();
            bytes.extend_from_slice(b"\r\n");
            bytes
        }
        Op::ModernCall(service) => service_call(id, "service_status", service, true),
        Op::Restart(service) => service_call(id, "restart_service", service, false),
        Op::ModernRestart(service) => service_call(id, "restart_service", service, true),
        Op::DeepArguments(over) => {
            // The frame's own object, `params` and `arguments` are three
            // levels; the array fills the rest up to the limit.
            let depth = limits.effective_depth() - 3 + usize::from(over);
            let deep: Value =
                serde_json::from_str(&format!("{}{}", "[".repeat(depth), "]".repeat(depth)))
                    .expect("nested arrays");
            fixtures::call(
                id,
                "service_status",
                json!({"service": "api", "deep": deep}),
            )
        }
        Op::Discover => frame(&json!({"jsonrpc":"2.0","id":id,"method":"server/discover",
            "params":{"_meta": fixtures::modern_meta("2026-07-28")}})),
        Op::ModernBadVersion => {
            fixtures::modern_call(id, "service_status", json!({"service":"api"}), "2099-01-01")
        }
        Op::Probe(allowed) => {
            let host = if allowed { "127.0.0.1" } else { "localhost" };
            fixtures::call(id, "region_probe", json!({ "host": host }))
        }
        Op::DebugLine => b"debug: entering tool handler\n".to_vec(),
        Op::Banner => b"server v1.2 ready, loading optional extension\n".to_vec(),
        Op::SameLineBanner => {
            let mut bytes = fixtures::call(id, "service_status", json!({"service":"api"}));
            bytes.pop();
            bytes.extend_from_slice(b" server ready\n");
            bytes
        }
        Op::Concatenated => {
            let mut bytes = fixtures::call(id, "service_status", json!({"service":"api"}));
            bytes.pop();
            bytes.extend(fixtures::call(
                ids.second,
                "service_status",
                json!({"service":"web-1"}),
            ));
            bytes
        }
        Op::OverLong => {
            let mut bytes = vec![b' '; limits.max_frame_bytes + 16];
            let call = fixtures::call(id, "service_status", json!({"service":"api"}));
            bytes.extend_from_slice(&call);
            bytes
        }
        Op::BadUtf8 => {
            let mut bytes = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"service_status\",\"arguments\":{\"service\":\"ap\xffi\"}}}".to_vec();
            bytes.push(b'\n');
            bytes
        }
        Op::DuplicateName => format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"service_status\",\"name\":\"restart_service\",\"arguments\":{{\"service\":\"api\"}}}}}}\n").into_bytes(),
        Op::WrongId(bad) => {
            let id = match bad {
                BadId::Bool => "true",
                BadId::Null => "null",
                BadId::Float => "1.5",
                BadId::Object => "{}",
                BadId::Huge => "9007199254740992",
            };
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"service_status\",\"arguments\":{{\"service\":\"api\"}}}}}}\n").into_bytes()
        }
        Op::UnknownArgument => fixtures::call(
            id,
            "service_status",
            json!({"service":"api","verbose":true}),
        ),
        Op::NotificationCall => frame(
            &json!({"jsonrpc":"2.0","method":"tools/call","params":{"name":"service_status","arguments":{"service":"api"}}}),
        ),
        Op::ReusedId => service_call(id, "service_status", Service::Api, false),
        Op::UnknownTool => fixtures::call(id, "deploy_everything", json!({})),
        Op::UnknownMethod => frame(&json!({"jsonrpc":"2.0","id":id,"method":"resources/list"})),
        Op::Cancel(n) => frame(
            &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": n}}),
        ),
        Op::EmptyLine => b"\n".to_vec(),
        Op::ParamsString => {
            frame(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":"run"}))
        }
        Op::Truncate => {
            let mut bytes = fixtures::call(id, "service_status", json!({"service":"api"}));
            bytes.truncate(bytes.len() / 2);
            bytes
        }
    }
}
