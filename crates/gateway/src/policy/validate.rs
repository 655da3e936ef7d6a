//! Raw TOML to the validated model: every check a policy must pass, each
//! failure naming the file, the tool and the field.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use super::raw::{RawHttp, RawPolicy, RawServer, RawSsh, RawTool, RawWrap};
use super::url_template::{parse_url_template, port_number};
use super::{
    CredentialSource, DEFAULT_MAX_ID_BYTES, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_SESSION_IDS,
    DEFAULT_TIMEOUT, HostPort, HttpMethod, HttpSpec, LiteralOrigin, Location,
    MAX_FRAME_BYTES_CEILING, MAX_FRAME_VALUES_CEILING, MAX_FRAME_VALUES_FLOOR, Policy, PolicyError,
    ServerSettings, SshSpec, TargetSpec, ToolSpec, WrapSettings, default_port, normalize_host,
};
use crate::schema::ToolSchema;
use crate::template::Template;

pub(super) struct Validator<'a> {
    pub(super) file: &'a Path,
}

impl Validator<'_> {
    fn err(&self, tool: Option<&str>, field: &str, message: impl Into<String>) -> PolicyError {
        PolicyError::Invalid {
            file: self.file.to_owned(),
            location: Location {
                tool: tool.map(str::to_owned),
                field: field.to_owned(),
            },
            message: message.into(),
        }
    }

    pub(super) fn policy(&self, raw: RawPolicy) -> Result<Policy, PolicyError> {
        let server = self.server(raw.server)?;
        let mut credentials = BTreeMap::new();
        for (name, c) in raw.credentials {
            let field = format!("credentials.{name}");
            let source = match (c.env, c.file) {
                (Some(env), None) if !env.is_empty() => CredentialSource::Env(env),
                (None, Some(file)) if !file.as_os_str().is_empty() => CredentialSource::File(file),
                _ => {
                    return Err(self.err(
                        None,
                        &field,
                        "set exactly one of `env = \"VAR\"` or `file = \"/path\"`",
                    ));
                }
            };
            credentials.insert(name, source);
        }
        let mut tools: Vec<ToolSpec> = Vec::new();
        for (index, raw_tool) in raw.tools.into_iter().enumerate() {
            let tool = self.tool(raw_tool, index, &credentials)?;
            if tools.iter().any(|t| t.name == tool.name) {
                return Err(self.err(Some(&tool.name), "tools.name", "duplicate tool name"));
            }
            tools.push(tool);
        }
        let wrap = match raw.wrap {
            Some(raw_wrap) => self.wrap(raw_wrap)?,
            None => WrapSettings::default(),
        };
        Ok(Policy {
            source: self.file.to_owned(),
            server,
            credentials,
            tools,
            wrap,
        })
    }

    fn wrap(&self, raw: RawWrap) -> Result<WrapSettings, PolicyError> {
        let named = |field: &str, names: &[String]| {
            for name in names {
                if name.is_empty() || name.chars().any(char::is_control) {
                    return Err(self.err(
                        None,
                        field,
                        "each entry must be a non-empty name without control characters",
                    ));
                }
            }
            Ok(())
        };
        if let Some(tools) = &raw.tools {
            named("wrap.tools", tools)?;
        }
        named("wrap.methods", &raw.methods)?;
        let request_timeout = match raw.request_timeout_ms {
            None => super::DEFAULT_WRAP_REQUEST_TIMEOUT,
            Some(ms @ 1..=3_600_000) => Duration::from_millis(ms),
            Some(_) => {
                return Err(self.err(
                    None,
                    "wrap.request_timeout_ms",
                    "must be between 1 and 3600000",
                ));
            }
        };
        Ok(WrapSettings {
            tools: raw.tools,
            methods: raw.methods,
            request_timeout,
        })
    }

    fn server(&self, raw: RawServer) -> Result<ServerSettings, PolicyError> {
        if raw.name.trim().is_empty() {
            return Err(self.err(None, "server.name", "must not be empty"));
        }
        let max_frame_bytes = raw
            .max_frame_bytes
            .unwrap_or(portcullis_wire::limits::DEFAULT_MAX_FRAME_BYTES as u64);
        if !(256..=MAX_FRAME_BYTES_CEILING).contains(&max_frame_bytes) {
            return Err(self.err(
                None,
                "server.max_frame_bytes",
                format!("must be between 256 and {MAX_FRAME_BYTES_CEILING}"),
            ));
        }
        let max_depth = raw
            .max_depth
            .unwrap_or(portcullis_wire::limits::DEFAULT_MAX_DEPTH as u64);
        if !(4..=portcullis_wire::limits::HARD_MAX_DEPTH as u64).contains(&max_depth) {
            return Err(self.err(
                None,
                "server.max_depth",
                format!(
                    "must be between 4 and {}",
                    portcullis_wire::limits::HARD_MAX_DEPTH
                ),
            ));
        }
        let max_frame_values = raw
            .max_frame_values
            .unwrap_or(portcullis_wire::limits::DEFAULT_MAX_VALUES as u64);
        if !(MAX_FRAME_VALUES_FLOOR..=MAX_FRAME_VALUES_CEILING).contains(&max_frame_values) {
            return Err(self.err(
                None,
                "server.max_frame_values",
                format!("must be between {MAX_FRAME_VALUES_FLOOR} and {MAX_FRAME_VALUES_CEILING}"),
            ));
        }
        let max_id_bytes = raw.max_id_bytes.unwrap_or(DEFAULT_MAX_ID_BYTES as u64);
        if !(16..=65_536).contains(&max_id_bytes) {
            return Err(self.err(None, "server.max_id_bytes", "must be between 16 and 65536"));
        }
        let max_session_ids = raw
            .max_session_ids
            .unwrap_or(DEFAULT_MAX_SESSION_IDS as u64);
        if !(1..=100_000_000).contains(&max_session_ids) {
            return Err(self.err(
                None,
                "server.max_session_ids",
                "must be between 1 and 100000000",
            ));
        }
        Ok(ServerSettings {
            name: raw.name,
            version: raw
                .version
                .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
            instructions: raw.instructions,
            on_invalid: raw.on_invalid,
            on_denied: raw.on_denied,
            max_frame_bytes: max_frame_bytes as usize,
            max_depth: max_depth as usize,
            max_frame_values: max_frame_values as usize,
            max_id_bytes: max_id_bytes as usize,
            max_session_ids: max_session_ids as usize,
        })
    }

    fn tool(
        &self,
        raw: RawTool,
        index: usize,
        credentials: &BTreeMap<String, CredentialSource>,
    ) -> Result<ToolSpec, PolicyError> {
        let label = if raw.name.is_empty() {
            format!("#{}", index + 1)
        } else {
            raw.name.clone()
        };
        let tool = Some(label.as_str());
        let valid_name = (1..=128).contains(&raw.name.len())
            && raw
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        if !valid_name {
            return Err(self.err(
                tool,
                "tools.name",
                "must be 1-128 characters of A-Z, a-z, 0-9, '_', '-', '.'",
            ));
        }
        let timeout = match raw.timeout_ms {
            None => DEFAULT_TIMEOUT,
            Some(ms @ 1..=600_000) => Duration::from_millis(ms),
            Some(_) => {
                return Err(self.err(tool, "tools.timeout_ms", "must be 1..=600000"));
            }
        };
        let schema_value = raw.input_schema.ok_or_else(|| {
            self.err(
                tool,
                "tools.input_schema",
                "missing: every tool declares the arguments it accepts",
            )
        })?;
        let schema = ToolSchema::compile(schema_value)
            .map_err(|message| self.err(tool, "tools.input_schema", message))?;
        schema
            .refuse_unchecked_formats()
            .map_err(|message| self.err(tool, "tools.input_schema", message))?;
        let target = match (raw.http, raw.ssh) {
            (Some(http), None) => TargetSpec::Http(self.http(http, tool)?),
            (None, Some(ssh)) => TargetSpec::Ssh(self.ssh(ssh, tool)?),
            _ => {
                return Err(self.err(
                    tool,
                    "tools",
                    "declare exactly one of [tools.http] or [tools.ssh]",
                ));
            }
        };
        let (section, templates, credential): (&str, Vec<&Template>, Option<&String>) =
            match &target {
                TargetSpec::Http(h) => (
                    "tools.http",
                    std::iter::once(&h.host)
                        .chain(&h.path)
                        .chain(h.query.iter().map(|(_, v)| v))
                        .collect(),
                    h.credential.as_ref(),
                ),
                TargetSpec::Ssh(s) => ("tools.ssh", s.argv.iter().collect(), s.credential.as_ref()),
            };
        for name in crate::template::used_args(templates) {
            schema.check_placeholder(&name).map_err(|message| {
                self.err(tool, &format!("{section} placeholder {{{name}}}"), message)
            })?;
        }
        if let Some(credential) = credential
            && !credentials.contains_key(credential)
        {
            return Err(self.err(
                tool,
                &format!("{section}.credential"),
                format!("no [credentials.{credential}] section defines it"),
            ));
        }
        Ok(ToolSpec {
            name: raw.name.into(),
            title: raw.title,
            description: raw.description,
            timeout,
            schema,
            target,
        })
    }

    fn allow(
        &self,
        raw: &[String],
        tool: Option<&str>,
        field: &str,
    ) -> Result<Vec<HostPort>, PolicyError> {
        if raw.is_empty() {
            return Err(self.err(tool, field, "must list at least one host:port"));
        }
        let mut out = BTreeSet::new();
        for entry in raw {
            let parsed = entry.rsplit_once(':').and_then(|(host, port)| {
                let port = port_number(port)?;
                let host = normalize_host(host)?;
                Some(HostPort { host, port })
            });
            match parsed {
                Some(hp) => {
                    out.insert(hp);
                }
                None => {
                    return Err(self.err(
                        tool,
                        field,
                        format!("{entry:?} is not host:port (e.g. \"127.0.0.1:8080\")"),
                    ));
                }
            }
        }
        Ok(out.into_iter().collect())
    }

    fn http(&self, raw: RawHttp, tool: Option<&str>) -> Result<HttpSpec, PolicyError> {
        let method = match raw.method.to_ascii_uppercase().as_str() {
            "GET" => HttpMethod::Get,
            "HEAD" => HttpMethod::Head,
            "POST" => HttpMethod::Post,
            "PUT" => HttpMethod::Put,
            "PATCH" => HttpMethod::Patch,
            "DELETE" => HttpMethod::Delete,
            _ => {
                return Err(self.err(
                    tool,
                    "tools.http.method",
                    "must be one of GET, HEAD, POST, PUT, PATCH, DELETE",
                ));
            }
        };
        let allow = self.allow(&raw.allow, tool, "tools.http.allow")?;
        let url = parse_url_template(&raw.url)
            .map_err(|message| self.err(tool, "tools.http.url", message))?;
        let mut literal_origin = None;
        if let Some(host) = url.host.literal() {
            let port = url.port.unwrap_or(default_port(&url.scheme));
            let normalized = normalize_host(host).unwrap_or_default();
            if !allow.iter().any(|a| a.host == normalized && a.port == port) {
                return Err(self.err(
                    tool,
                    "tools.http.allow",
                    format!("the url's host {normalized}:{port} is not in allow, so the tool could never run"),
                ));
            }
            literal_origin = Some(LiteralOrigin::new(&url.scheme, normalized, port));
        }
        let max_response_bytes = output_cap(raw.max_response_bytes).ok_or_else(|| {
            self.err(
                tool,
                "tools.http.max_response_bytes",
                "must be 1..=67108864",
            )
        })?;
        Ok(HttpSpec {
            method,
            scheme: url.scheme,
            host: url.host,
            literal_origin,
            port: url.port,
            path: url.path,
            query: url.query,
            url_template: raw.url,
            allow,
            credential: raw.credential,
            max_response_bytes,
        })
    }

    fn ssh(&self, raw: RawSsh, tool: Option<&str>) -> Result<SshSpec, PolicyError> {
        let host = normalize_host(&raw.host)
            .ok_or_else(|| self.err(tool, "tools.ssh.host", "must be a host name or IP address"))?;
        let port = raw.port.unwrap_or(22);
        if port == 0 {
            return Err(self.err(tool, "tools.ssh.port", "must be 1..=65535"));
        }
        let user_ok = !raw.user.is_empty()
            && !raw.user.starts_with('-')
            && raw
                .user
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        if !user_ok {
            return Err(self.err(tool, "tools.ssh.user", "must be a plain user name"));
        }
        let allow = self.allow(&raw.allow, tool, "tools.ssh.allow")?;
        if !allow.iter().any(|a| a.host == host && a.port == port) {
            return Err(self.err(
                tool,
                "tools.ssh.allow",
                format!("{host}:{port} is not in allow, so the tool could never run"),
            ));
        }
        if raw.argv.is_empty() {
            return Err(self.err(tool, "tools.ssh.argv", "must name at least the command"));
        }
        let mut argv = Vec::new();
        for (i, arg) in raw.argv.iter().enumerate() {
            let t = Template::parse(arg)
                .map_err(|e| self.err(tool, &format!("tools.ssh.argv[{i}]"), e.to_string()))?;
            if i == 0 && t.literal().is_none() {
                return Err(self.err(
                    tool,
                    "tools.ssh.argv[0]",
                    "the command itself must be literal, not a placeholder",
                ));
            }
            argv.push(t);
        }
        let max_output_bytes = output_cap(raw.max_output_bytes)
            .ok_or_else(|| self.err(tool, "tools.ssh.max_output_bytes", "must be 1..=67108864"))?;
        Ok(SshSpec {
            host,
            port,
            user: raw.user,
            argv,
            allow,
            credential: raw.credential,
            known_hosts: raw.known_hosts,
            max_output_bytes,
        })
    }
}

fn output_cap(raw: Option<u64>) -> Option<usize> {
    match raw {
        None => Some(DEFAULT_MAX_OUTPUT_BYTES),
        Some(n @ 1..=67_108_864) => Some(n as usize),
        Some(_) => None,
    }
}
