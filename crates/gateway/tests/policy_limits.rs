//! Policy settings outside their documented ranges are refused at load, and
//! the error names the file, the tool (by name, or by position when it has
//! none) and the field.

use std::path::Path;

use portcullis_gateway::Policy;

const SCHEMA: &str =
    "[tools.input_schema]\ntype = \"object\"\nproperties.service = { type = \"string\" }\n";
const HTTP: &str = "[tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:8080/x\"\nallow = [\"127.0.0.1:8080\"]\n";

fn policy(server_extra: &str, tool: &str) -> String {
    format!("[server]\nname = \"t\"\n{server_extra}\n[[tools]]\n{tool}")
}

fn refusal(text: &str) -> String {
    Policy::from_toml(text, Path::new("limits.toml"))
        .expect_err("policy must be refused")
        .to_string()
}

fn assert_refused(text: &str, names: &[&str]) {
    let message = refusal(text);
    assert!(message.starts_with("limits.toml:"), "{message}");
    for name in names {
        assert!(message.contains(name), "names {name}: {message}");
    }
}

#[test]
fn server_settings_outside_their_ranges_are_refused() {
    let tool = format!("name = \"probe\"\n{HTTP}{SCHEMA}");
    assert_refused(
        &policy("", &tool).replace("name = \"t\"", "name = \" \""),
        &["server.name"],
    );
    for (setting, field) in [
        ("max_frame_bytes = 255", "server.max_frame_bytes"),
        ("max_frame_bytes = 1099511627776", "server.max_frame_bytes"),
        ("max_depth = 3", "server.max_depth"),
        ("max_depth = 100000", "server.max_depth"),
        ("max_frame_values = 63", "server.max_frame_values"),
        ("max_frame_values = 1048577", "server.max_frame_values"),
    ] {
        assert_refused(&policy(setting, &tool), &[field, "must be between"]);
    }
    let lowest = policy(
        "max_frame_bytes = 256\nmax_depth = 4\nmax_frame_values = 64",
        &tool,
    );
    assert!(Policy::from_toml(&lowest, Path::new("limits.toml")).is_ok());
}

#[test]
fn a_tool_without_a_usable_name_is_named_by_its_position() {
    assert_refused(
        &policy("", &format!("name = \"\"\n{HTTP}{SCHEMA}")),
        &["#1", "tools.name"],
    );
    assert_refused(
        &policy("", &format!("name = \"two words\"\n{HTTP}{SCHEMA}")),
        &["two words", "tools.name", "1-128 characters"],
    );
}

#[test]
fn tool_limits_outside_their_ranges_are_refused() {
    for (extra, field) in [
        ("timeout_ms = 0\n", "tools.timeout_ms"),
        ("timeout_ms = 600001\n", "tools.timeout_ms"),
    ] {
        assert_refused(
            &policy("", &format!("name = \"probe\"\n{extra}{HTTP}{SCHEMA}")),
            &["probe", field],
        );
    }
    assert_refused(
        &policy(
            "",
            &format!("name = \"probe\"\n{HTTP}max_response_bytes = 0\n{SCHEMA}"),
        ),
        &["probe", "tools.http.max_response_bytes"],
    );
    assert_refused(
        &policy(
            "",
            &format!("name = \"probe\"\n{HTTP}max_response_bytes = 67108865\n{SCHEMA}"),
        ),
        &["probe", "tools.http.max_response_bytes"],
    );
}

#[test]
fn a_tool_without_an_input_schema_is_refused() {
    assert_refused(
        &policy("", &format!("name = \"probe\"\n{HTTP}")),
        &["probe", "tools.input_schema", "missing"],
    );
}

#[test]
fn an_empty_allowlist_is_refused() {
    let http = HTTP.replace("[\"127.0.0.1:8080\"]", "[]");
    assert_refused(
        &policy("", &format!("name = \"probe\"\n{http}{SCHEMA}")),
        &["probe", "tools.http.allow", "at least one"],
    );
}

#[test]
fn ssh_tools_that_could_never_run_are_refused() {
    let ssh = |host: &str, port: &str, allow: &str, argv: &str| {
        policy(
            "",
            &format!(
                "name = \"restart\"\n[tools.ssh]\nhost = \"{host}\"\n{port}user = \"deploy\"\nargv = {argv}\nallow = [\"{allow}\"]\n{SCHEMA}"
            ),
        )
    };
    let ok = ssh(
        "127.0.0.1",
        "port = 2222\n",
        "127.0.0.1:2222",
        "[\"uptime\"]",
    );
    assert!(Policy::from_toml(&ok, Path::new("limits.toml")).is_ok());
    assert_refused(
        &ssh("-oProxyCommand=x", "", "127.0.0.1:22", "[\"uptime\"]"),
        &["restart", "tools.ssh.host"],
    );
    assert_refused(
        &ssh("127.0.0.1", "port = 0\n", "127.0.0.1:22", "[\"uptime\"]"),
        &["restart", "tools.ssh.port"],
    );
    assert_refused(
        &ssh("127.0.0.1", "port = 2222\n", "127.0.0.1:22", "[\"uptime\"]"),
        &[
            "restart",
            "tools.ssh.allow",
            "127.0.0.1:2222 is not in allow",
        ],
    );
    assert_refused(
        &ssh("127.0.0.1", "", "127.0.0.1:22", "[]"),
        &["restart", "tools.ssh.argv", "at least the command"],
    );
}
