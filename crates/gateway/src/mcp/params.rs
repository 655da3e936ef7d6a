//! Parsers for the params of the requests the gateway serves. Each refuses
//! with a [`Refusal`] naming what is wrong, never echoing argument values.

use portcullis_wire::codes::INVALID_PARAMS;
use std::borrow::Cow;

use portcullis_wire::{Id, Json, Object};

use super::Refusal;

/// A parsed `initialize` request.
#[derive(Debug, Clone, PartialEq)]
pub struct Initialize {
    /// The version the client asked for.
    pub requested: String,
}

/// Parse `initialize` params.
pub fn initialize_params(params: Option<&Object<'_>>) -> Result<Initialize, Refusal> {
    let params =
        params.ok_or_else(|| Refusal::new(INVALID_PARAMS, "initialize requires params"))?;
    let requested = params
        .get("protocolVersion")
        .and_then(Json::as_str)
        .ok_or_else(|| Refusal::new(INVALID_PARAMS, "params.protocolVersion must be a string"))?;
    if !params.get("capabilities").is_some_and(Json::is_object) {
        return Err(Refusal::new(
            INVALID_PARAMS,
            "params.capabilities must be an object",
        ));
    }
    let info_ok = params
        .get("clientInfo")
        .and_then(Json::as_object)
        .is_some_and(|i| {
            i.get("name").is_some_and(Json::is_string)
                && i.get("version").is_some_and(Json::is_string)
        });
    if !info_ok {
        return Err(Refusal::new(
            INVALID_PARAMS,
            "params.clientInfo must be an object with string name and version",
        ));
    }
    Ok(Initialize {
        requested: requested.to_owned(),
    })
}

/// A parsed `tools/call`, borrowing from the frame.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsCall<'a> {
    /// The tool name.
    pub name: Cow<'a, str>,
    /// The arguments (an empty object when omitted).
    pub arguments: Object<'a>,
}

/// Parse `tools/call` params. Members beyond `name`, `arguments` and
/// `_meta` are refused: a call the gateway does not fully understand is
/// not executed.
pub fn tools_call_params(params: Option<Object<'_>>) -> Result<ToolsCall<'_>, Refusal> {
    let params =
        params.ok_or_else(|| Refusal::new(INVALID_PARAMS, "tools/call requires params"))?;
    // One pass over the members (the reader refused duplicates); the checks
    // below then run in a fixed order, whatever order the client wrote.
    let (mut name, mut arguments, mut meta) = (None, None, None);
    let mut extra: Option<Cow<'_, str>> = None;
    for (key, value) in params {
        match &*key {
            "name" => name = Some(value),
            "arguments" => arguments = Some(value),
            "_meta" => meta = Some(value),
            _ => {
                if extra.as_deref().is_none_or(|first| *key < *first) {
                    extra = Some(key);
                }
            }
        }
    }
    let name = match name {
        Some(Json::String(name)) => name,
        Some(_) => return Err(Refusal::new(INVALID_PARAMS, "params.name must be a string")),
        None => return Err(Refusal::new(INVALID_PARAMS, "params.name is required")),
    };
    let arguments = match arguments {
        None => Object::default(),
        Some(Json::Object(a)) => a,
        Some(_) => {
            return Err(Refusal::new(
                INVALID_PARAMS,
                "params.arguments must be an object",
            ));
        }
    };
    match meta {
        None | Some(Json::Object(_)) => {}
        Some(_) => {
            return Err(Refusal::new(
                INVALID_PARAMS,
                "params._meta must be an object",
            ));
        }
    }
    // The first in name order, whatever order the client wrote them in.
    if let Some(extra) = extra {
        return Err(Refusal::new(
            INVALID_PARAMS,
            format!(
                "unsupported member {} in tools/call params",
                portcullis_wire::strict_json::display_name(&extra)
            ),
        ));
    }
    Ok(ToolsCall { name, arguments })
}

/// Parse `notifications/cancelled` params: the request id, if valid.
pub fn cancelled_request(params: Option<&Object<'_>>) -> Option<Id> {
    match params?.get("requestId")? {
        Json::String(s) => Some(Id::Str(s.clone().into_owned())),
        Json::Number(n) => n.as_i64().map(Id::Int),
        _ => None,
    }
}
