//! The SSH rule: user, host and port are the policy's (in the allowlist),
//! each argv element equals its expansion, and no templated element that
//! starts with an argument can be read as an option.

use portcullis_gateway::SshCommand;
use serde_json::{Map, Value};

use super::template::check_expansion;
use super::tools::SshTemplate;
use super::url::same_host;

pub(super) fn check_ssh(
    t: &SshTemplate,
    args: &Map<String, Value>,
    command: &SshCommand,
) -> Result<(), String> {
    if !same_host(command.host(), &t.host) || command.port() != t.port {
        return Err(format!(
            "{}:{} is not the policy's {}:{}",
            command.host(),
            command.port(),
            t.host,
            t.port
        ));
    }
    if !t
        .allow
        .iter()
        .any(|(h, p)| *p == command.port() && same_host(h, command.host()))
    {
        return Err("host:port is not in the allowlist".into());
    }
    if command.user() != t.user {
        return Err(format!(
            "user {:?} is not the policy's {:?}",
            command.user(),
            t.user
        ));
    }
    let argv = command.argv();
    if argv.len() != t.argv.len() {
        return Err(format!(
            "argv has {} element(s), the template {}",
            argv.len(),
            t.argv.len()
        ));
    }
    for (i, (template, actual)) in t.argv.iter().zip(argv).enumerate() {
        let (expected, values) = template.expand(args)?;
        let what = format!("argv[{i}]");
        if *actual != expected {
            return Err(format!(
                "{what} is {actual:?}, not the expansion {expected:?}"
            ));
        }
        check_expansion(&what, template, &expected, &values)?;
        if template.starts_with_arg() && expected.starts_with('-') {
            return Err(format!("{what} {expected:?} would be read as an option"));
        }
    }
    Ok(())
}
