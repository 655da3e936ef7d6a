//! Records the rmcp version Cargo.lock resolved, for the PASS line.
use std::{env, fs, path::Path};

fn main() {
    let lock = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = fs::read_to_string(&lock).unwrap_or_default();
    let version = text
        .split("[[package]]")
        .find(|block| block.lines().any(|l| l.trim() == "name = \"rmcp\""))
        .and_then(|block| {
            block
                .lines()
                .find_map(|l| l.trim().strip_prefix("version = \""))
                .map(|v| v.trim_end_matches('"').to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=RMCP_VERSION={version}");
}
