//! Replays `regressions/mcp_process/*.bin` through the real `portcullis mcp`
//! (the folder is listed in testkit's `EXTERNAL_REPLAYS`). Each file is a
//! whole stdin session that ends (end of input) while an SSH call still
//! runs; the SSH tool runs a fake `ssh` that never ends by itself
//! (`ssh_lifetime`). Each is replayed twice, with the key held in memory
//! (from the environment) and with a key file. After the gateway exits —
//! within the grace period plus a bound — stdout must be a clean
//! transcript, and neither the client, nor anything in its process group,
//! nor any identity material under `TMPDIR` may remain.

mod common;
mod ssh_lifetime;

use std::time::Duration;

use portcullis_testkit::regressions::{discover_in, workspace_root};
use ssh_lifetime::{KeySource, Scenario};

/// Long enough that the call has started its client when the grace period
/// ends, whatever the machine's load.
const GRACE_MS: u64 = 2000;

/// How long after the grace period the gateway may take to exit.
const EXIT_MARGIN: Duration = Duration::from_secs(5);

#[test]
fn mcp_process_regressions_leave_no_process_and_no_key_behind() {
    let root = workspace_root().join("regressions");
    let regressions = discover_in(&root, "mcp_process");
    assert!(
        !regressions.is_empty(),
        "no regressions in {}/mcp_process",
        root.display()
    );
    for regression in &regressions {
        let name = regression.path.display().to_string();
        let session = std::fs::read(&regression.path).expect("read the regression");
        for source in [KeySource::Env, KeySource::File] {
            let scenario = Scenario::new(source);
            let mut gateway = scenario.spawn(GRACE_MS);
            let stdout = common::drain(gateway.child.stdout.take().expect("stdout"));
            gateway.write(&session);
            gateway.close_stdin();
            let status = gateway.wait(Duration::from_millis(GRACE_MS) + EXIT_MARGIN);
            let survivors = scenario.survivors();
            let started = scenario.client_pids();
            ssh_lifetime::kill_leftovers(&scenario);
            let status = status.unwrap_or_else(|| {
                panic!(
                    "{name} ({source:?}): no exit within the grace period + {EXIT_MARGIN:?} ({})",
                    gateway.launch
                )
            });
            let stderr = gateway.stderr();
            let stdout = stdout.join().expect("stdout reader");
            assert!(
                !started.is_empty(),
                "{name} ({source:?}): the session never started the ssh client\nstderr:\n{stderr}"
            );
            if let Err(violation) = portcullis_wire::check_transcript(&stdout) {
                panic!("{name} ({source:?}): {violation}");
            }
            assert!(
                survivors.none(),
                "{name} ({source:?}): survived the gateway (exit {status:?}): {survivors:?}\nstderr:\n{stderr}"
            );
        }
    }
}
