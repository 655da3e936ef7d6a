//! Driver for the official Rust MCP SDK's client (`rmcp`, features `client`
//! and `transport-child-process`), run by interop/check.py:
//!
//!     portcullis-interop-rmcp --lifecycle initialize|discover CONFIG
//!
//! `initialize` is the legacy handshake; `discover` is the modern
//! `server/discover` lifecycle (2026-07-28), where every request carries its
//! own `_meta`. Prints what the client saw as JSON lines on stdout.

use std::{process::Stdio, time::Duration};

use rmcp::{
    ClientLifecycleMode, ClientServiceExt, RoleClient,
    model::{CallToolRequestParams, ProtocolVersion},
    service::RunningService,
    transport::TokioChildProcess,
};
use serde_json::{Value, json};
use tokio::process::Command;

/// Each check is bounded by check.py (30 s); this makes a hung step a
/// reported failure before that.
const STEP_TIMEOUT: Duration = Duration::from_secs(20);

/// What the other official SDKs pass to a stdio server by default; rmcp
/// passes its whole environment, so the driver narrows it to the same set
/// and the credential arrives only through the configured `env`.
const INHERITED_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

fn emit(event: Value) {
    println!("{event}");
}

fn arguments(value: &Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

async fn step<T, E: std::fmt::Display>(
    fut: impl Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(STEP_TIMEOUT, fut).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err(format!("no answer within {STEP_TIMEOUT:?}")),
    }
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: &Value) -> Value {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments(args));
    match step(client.call_tool(params)).await {
        Ok(result) => json!({ "result": result }),
        Err(err) => json!({ "error": err }),
    }
}

async fn run(config: Value, lifecycle: ClientLifecycleMode) -> Result<(), (String, String)> {
    let fail = |step: &str| {
        let step = step.to_owned();
        move |err: String| (step, err)
    };
    let server = &config["server"];
    let mut command = Command::new(server["command"].as_str().unwrap_or_default());
    command.env_clear();
    for key in INHERITED_ENV {
        if let Ok(value) = std::env::var(key) {
            command.env(key, value);
        }
    }
    for (key, value) in config["env"].as_object().into_iter().flatten() {
        command.env(key, value.as_str().unwrap_or_default());
    }
    for arg in server["args"].as_array().into_iter().flatten() {
        command.arg(arg.as_str().unwrap_or_default());
    }
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|err| ("spawn".to_owned(), err.to_string()))?;

    let mut client = step(().serve_with_lifecycle(transport, lifecycle))
        .await
        .map_err(fail("initialize"))?;
    let info = client.peer_info().ok_or_else(|| {
        (
            "initialize".to_owned(),
            "no server information after the lifecycle".to_owned(),
        )
    })?;
    emit(json!({
        "event": "initialized",
        "protocolVersion": info.protocol_version,
        "serverInfo": info.server_info,
    }));

    let tools = step(client.list_all_tools())
        .await
        .map_err(fail("tools/list"))?;
    emit(json!({ "event": "tools", "tools": tools }));

    let tool = config["tool"].as_str().unwrap_or_default();
    let mut bad = call(&client, tool, &config["bad_arguments"]).await;
    bad["event"] = json!("bad_call");
    emit(bad);
    let mut good = call(&client, tool, &config["good_arguments"]).await;
    good["event"] = json!("good_call");
    emit(good);

    // close() cancels the service, whose transport closes the child's stdin
    // and waits for it to exit (SIGTERM only after its grace period).
    let at = now();
    step(async { client.close().await.map_err(|e| e.to_string()) })
        .await
        .map_err(fail("close"))?;
    emit(json!({ "event": "closed", "at": at, "returned_at": now() }));
    Ok(())
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (lifecycle, path) = match args.as_slice() {
        [flag, mode, path] if flag == "--lifecycle" && mode == "initialize" => {
            (ClientLifecycleMode::Initialize, path)
        }
        [flag, mode, path] if flag == "--lifecycle" && mode == "discover" => (
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            path,
        ),
        _ => {
            eprintln!("usage: portcullis-interop-rmcp --lifecycle initialize|discover CONFIG");
            return std::process::ExitCode::from(2);
        }
    };
    emit(json!({ "event": "client", "name": "rmcp", "version": env!("RMCP_VERSION") }));
    let config: Value = match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(config) => config,
        Err(err) => {
            emit(json!({ "event": "fatal", "step": "config", "error": err }));
            return std::process::ExitCode::FAILURE;
        }
    };
    match run(config, lifecycle).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err((step, error)) => {
            emit(json!({ "event": "fatal", "step": step, "error": error }));
            std::process::ExitCode::FAILURE
        }
    }
}
