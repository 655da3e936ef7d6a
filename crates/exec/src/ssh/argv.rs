//! The local command line (`ssh` options, an argv vector, never a shell)
//! and the remote one (every element single-quoted into one literal word).

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use portcullis_gateway::SshCommand;

/// The known hosts file used when a tool names none: empty, so every host
/// key is unknown and strict checking refuses the connection.
pub const NO_KNOWN_HOSTS: &str = "/dev/null";

/// The arguments passed to `ssh` (after the program name) for `cmd`.
///
/// ```text
/// -T -n -F none
/// -o BatchMode=yes -o StrictHostKeyChecking=yes -o GlobalKnownHostsFile=/dev/null
/// -o UpdateHostKeys=no -o CheckHostIP=no
/// -o IdentitiesOnly=yes -o IdentityAgent=none
/// -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no
/// -o ForwardAgent=no -o ForwardX11=no -o ClearAllForwardings=yes
/// -o ControlMaster=no -o ControlPath=none -o PermitLocalCommand=no
/// -o ProxyCommand=none -o ProxyJump=none -o EscapeChar=none -o LogLevel=ERROR
/// -o UserKnownHostsFile=<known_hosts | /dev/null>
/// -o ConnectTimeout=<timeout rounded up to whole seconds, at least 1>
/// (-i <identity> | -o PubkeyAuthentication=no)
/// -p <port> -l <user> -- <host> <quote_remote_argv(argv)>
/// ```
pub fn ssh_args(cmd: &SshCommand, identity: Option<&Path>, timeout: Duration) -> Vec<OsString> {
    let known_hosts: OsString = cmd
        .known_hosts()
        .map_or_else(|| NO_KNOWN_HOSTS.into(), |p| p.as_os_str().to_owned());
    let connect_secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
    let mut args: Vec<OsString> = vec!["-T".into(), "-n".into(), "-F".into(), "none".into()];
    let mut opt = |o: OsString| {
        args.push("-o".into());
        args.push(o);
    };
    for fixed in [
        "BatchMode=yes",
        "StrictHostKeyChecking=yes",
        "GlobalKnownHostsFile=/dev/null",
        "UpdateHostKeys=no",
        "CheckHostIP=no",
        "IdentitiesOnly=yes",
        "IdentityAgent=none",
        "PasswordAuthentication=no",
        "KbdInteractiveAuthentication=no",
        "ForwardAgent=no",
        "ForwardX11=no",
        "ClearAllForwardings=yes",
        "ControlMaster=no",
        "ControlPath=none",
        "PermitLocalCommand=no",
        "ProxyCommand=none",
        "ProxyJump=none",
        "EscapeChar=none",
        "LogLevel=ERROR",
    ] {
        opt(fixed.into());
    }
    let mut known = OsString::from("UserKnownHostsFile=");
    known.push(&known_hosts);
    opt(known);
    opt(format!("ConnectTimeout={}", connect_secs.max(1)).into());
    match identity {
        Some(path) => {
            args.push("-i".into());
            args.push(path.as_os_str().to_owned());
        }
        None => {
            args.push("-o".into());
            args.push("PubkeyAuthentication=no".into());
        }
    }
    args.push("-p".into());
    args.push(cmd.port().to_string().into());
    args.push("-l".into());
    args.push(cmd.user().into());
    args.push("--".into());
    args.push(ssh_host(cmd.host()).into());
    args.push(quote_remote_argv(cmd.argv()).into());
    args
}

/// The host as the `ssh` command line wants it: IPv6 without brackets.
fn ssh_host(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// Join `argv` into one POSIX shell command line in which every element is
/// exactly one literal word: each is wrapped in single quotes, and each
/// `'` inside becomes `'\''` (close quote, escaped quote, reopen).
/// Nothing inside single quotes is special to a POSIX shell, so `$`, `` ` ``,
/// `;`, `|`, `*`, newlines and spaces all stay literal.
pub fn quote_remote_argv(argv: &[String]) -> String {
    let mut out = String::new();
    for (i, arg) in argv.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push('\'');
        for c in arg.chars() {
            if c == '\'' {
                out.push_str("'\\''");
            } else {
                out.push(c);
            }
        }
        out.push('\'');
    }
    out
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn quoting_is_one_literal_word_per_element() {
        assert_eq!(quote_remote_argv(&s(&["ls", "-l"])), "'ls' '-l'");
        assert_eq!(quote_remote_argv(&s(&["a b; rm -rf /"])), "'a b; rm -rf /'");
        assert_eq!(quote_remote_argv(&s(&["it's"])), "'it'\\''s'");
        assert_eq!(quote_remote_argv(&s(&[""])), "''");
        assert_eq!(quote_remote_argv(&s(&["''"])), "''\\'''\\'''");
        assert_eq!(quote_remote_argv(&s(&["$(id)`id`\n*"])), "'$(id)`id`\n*'");
        assert_eq!(quote_remote_argv(&[]), "");
    }

    /// The quoting round-trips through a real POSIX shell: `sh -c` with the
    /// quoted line hands each element to `printf` as exactly one argument.
    #[test]
    fn quoting_round_trips_through_sh() {
        let args = s(&[
            "a b; touch /nonexistent/pwned",
            "it's",
            "",
            "$(echo no)",
            "`echo no`",
            "*",
            "line1\nline2",
            "back\\slash",
            "'",
            "\"dq\"",
            "~",
            "héllo",
        ]);
        let mut line = vec!["printf".to_owned(), "<%s>".to_owned()];
        line.extend(args.iter().cloned());
        let out = Command::new("/bin/sh")
            .arg("-c")
            .arg(quote_remote_argv(&line))
            .env_clear()
            .current_dir("/")
            .output()
            .expect("run /bin/sh");
        assert!(out.status.success());
        let expected: String = args.iter().map(|a| format!("<{a}>")).collect();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    }

    #[test]
    fn ipv6_hosts_lose_their_brackets() {
        assert_eq!(ssh_host("[::1]"), "::1");
        assert_eq!(ssh_host("example.com"), "example.com");
        assert_eq!(ssh_host("127.0.0.1"), "127.0.0.1");
    }
}
