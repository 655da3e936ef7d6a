//! Rendering: the bytes each operation puts on the wire, with the
//! prediction those bytes imply (an operation's id decides both, so the two
//! are written side by side, one arm per operation).

use portcullis_wire::Stage;
use serde_json::{Value, json};

use super::ops::{BadId, Op, Service};
use super::predict::{Era, Model};
use crate::fixtures::{self, frame};

impl Model {
    /// Appends `op`'s bytes to the input and applies its prediction;
    /// false once nothing after it can be read (closed or truncated).
    pub(super) fn apply(&mut self, op: &Op) -> bool {
        if self.closed {
            return false;
        }
        let bytes = match *op {
            Op::Initialize => {
                let id = self.fresh_id();
                if self.admit(id, Era::Legacy) {
                    if self.initialized {
                        self.invalid(Stage::Mcp);
                    } else {
                        self.initialized = true;
                        self.era = Some(Era::Legacy);
                    }
                }
                fixtures::initialize(id, "2025-11-25")
            }
            Op::Initialized => {
                if !self.initialized && self.era != Some(Era::Modern) {
                    self.invalid(Stage::Mcp);
                }
                fixtures::initialized()
            }
            Op::Ping => {
                let id = self.fresh_id();
                if self.admit(id, Era::Legacy) {
                    self.era = Some(Era::Legacy);
                }
                frame(&json!({"jsonrpc":"2.0","id":id,"method":"ping"}))
            }
            Op::ToolsList => {
                let id = self.fresh_id();
                if self.admit(id, Era::Legacy) {
                    self.legacy_ready();
                }
                frame(&json!({"jsonrpc":"2.0","id":id,"method":"tools/list"}))
            }
            Op::Call(service) => {
                let id = self.fresh_id();
                self.call(id, "service_status", service, false)
            }
            Op::CallCrlf(service) => {
                let id = self.fresh_id();
                let mut bytes = self.call(id, "service_status", service, false);
                bytes.pop();
                bytes.extend_from_slice(b"\r\n");
                bytes
            }
            Op::ModernCall(service) => {
                let id = self.fresh_id();
                self.call(id, "service_status", service, true)
            }
            Op::Restart(service) => {
                let id = self.fresh_id();
                self.call(id, "restart_service", service, false)
            }
            Op::ModernRestart(service) => {
                let id = self.fresh_id();
                self.call(id, "restart_service", service, true)
            }
            Op::DeepArguments(over) => {
                let id = self.fresh_id();
                // The frame's own object, `params` and `arguments` are three
                // levels; the array fills the rest up to the limit.
                let depth = self.limits.effective_depth() - 3 + usize::from(over);
                let deep: Value =
                    serde_json::from_str(&format!("{}{}", "[".repeat(depth), "]".repeat(depth)))
                        .expect("nested arrays");
                if over {
                    self.invalid(Stage::Json);
                } else if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    self.refused_call(id, Stage::Schema);
                }
                fixtures::call(
                    id,
                    "service_status",
                    json!({"service": "api", "deep": deep}),
                )
            }
            Op::Discover => {
                let id = self.fresh_id();
                if self.admit(id, Era::Modern) {
                    self.era = Some(Era::Modern);
                }
                frame(&json!({"jsonrpc":"2.0","id":id,"method":"server/discover",
                    "params":{"_meta": fixtures::modern_meta("2026-07-28")}}))
            }
            Op::ModernBadVersion => {
                let id = self.fresh_id();
                if self.admit(id, Era::Modern) {
                    self.invalid(Stage::Mcp);
                }
                fixtures::modern_call(id, "service_status", json!({"service":"api"}), "2099-01-01")
            }
            Op::Probe(allowed) => {
                let id = self.fresh_id();
                let host = if allowed { "127.0.0.1" } else { "localhost" };
                if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    if allowed {
                        self.expected.push(("region_probe".into(), host.into()));
                    } else {
                        self.refused_call(id, Stage::Authz);
                    }
                }
                fixtures::call(id, "region_probe", json!({ "host": host }))
            }
            Op::DebugLine => {
                self.invalid(Stage::Json);
                b"debug: entering tool handler\n".to_vec()
            }
            Op::Banner => {
                self.invalid(Stage::Json);
                b"server v1.2 ready, loading optional extension\n".to_vec()
            }
            Op::SameLineBanner => {
                self.invalid(Stage::Json);
                let id = self.fresh_id();
                let mut bytes = fixtures::call(id, "service_status", json!({"service":"api"}));
                bytes.pop();
                bytes.extend_from_slice(b" server ready\n");
                bytes
            }
            Op::Concatenated => {
                self.invalid(Stage::Json);
                let a = self.fresh_id();
                let b = self.fresh_id();
                let mut bytes = fixtures::call(a, "service_status", json!({"service":"api"}));
                bytes.pop();
                bytes.extend(fixtures::call(
                    b,
                    "service_status",
                    json!({"service":"web-1"}),
                ));
                bytes
            }
            Op::OverLong => {
                self.invalid(Stage::Framing);
                let mut bytes = vec![b' '; self.limits.max_frame_bytes + 16];
                let call = fixtures::call(
                    self.next_id + 1000,
                    "service_status",
                    json!({"service":"api"}),
                );
                bytes.extend_from_slice(&call);
                bytes
            }
            Op::BadUtf8 => {
                self.invalid(Stage::Utf8);
                let mut bytes = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"service_status\",\"arguments\":{\"service\":\"ap\xffi\"}}}".to_vec();
                bytes.push(b'\n');
                bytes
            }
            Op::DuplicateName => {
                self.invalid(Stage::Json);
                let id = self.fresh_id();
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"service_status\",\"name\":\"restart_service\",\"arguments\":{{\"service\":\"api\"}}}}}}\n").into_bytes()
            }
            Op::WrongId(bad) => {
                // 2^53 is refused as JSON (the I-JSON integer range holds
                // wherever a number appears); the other ids parse and are
                // refused by JSON-RPC.
                self.invalid(match bad {
                    BadId::Huge => Stage::Json,
                    _ => Stage::Rpc,
                });
                let id = match bad {
                    BadId::Bool => "true",
                    BadId::Null => "null",
                    BadId::Float => "1.5",
                    BadId::Object => "{}",
                    BadId::Huge => "9007199254740992",
                };
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"service_status\",\"arguments\":{{\"service\":\"api\"}}}}}}\n").into_bytes()
            }
            Op::UnknownArgument => {
                let id = self.fresh_id();
                if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    self.refused_call(id, Stage::Schema);
                }
                fixtures::call(
                    id,
                    "service_status",
                    json!({"service":"api","verbose":true}),
                )
            }
            Op::NotificationCall => {
                self.invalid(Stage::Mcp);
                frame(
                    &json!({"jsonrpc":"2.0","method":"tools/call","params":{"name":"service_status","arguments":{"service":"api"}}}),
                )
            }
            Op::ReusedId => {
                let id = self.used.last().copied().unwrap_or_else(|| self.fresh_id());
                self.call(id, "service_status", Service::Api, false)
            }
            Op::UnknownTool => {
                let id = self.fresh_id();
                if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    self.invalid(Stage::Mcp);
                }
                fixtures::call(id, "deploy_everything", json!({}))
            }
            Op::UnknownMethod => {
                let id = self.fresh_id();
                if self.admit(id, Era::Legacy) {
                    self.legacy_ready();
                }
                frame(&json!({"jsonrpc":"2.0","id":id,"method":"resources/list"}))
            }
            Op::Cancel(n) => frame(
                &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": n}}),
            ),
            Op::EmptyLine => {
                self.invalid(Stage::Framing);
                b"\n".to_vec()
            }
            Op::ParamsString => {
                self.invalid(Stage::Rpc);
                let id = self.fresh_id();
                frame(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":"run"}))
            }
            Op::Truncate => {
                self.invalid(Stage::Framing);
                let mut bytes =
                    fixtures::call(self.next_id + 1, "service_status", json!({"service":"api"}));
                bytes.truncate(bytes.len() / 2);
                self.input.extend(bytes);
                return false;
            }
        };
        self.input.extend(bytes);
        true
    }
}
