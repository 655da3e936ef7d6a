//! Reading `--pins FILE` and writing `--pins-write FILE`. The write goes
//! to a temporary file beside the target, then replaces it, so a reader
//! never sees half a pins file.

use std::path::Path;

use anyhow::Context as _;
use portcullis_wrap::{Pins, parse_pins, render_pins};

/// Read and parse a pins file.
pub fn read(path: &Path) -> anyhow::Result<Pins> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the pins file {}", path.display()))?;
    parse_pins(&text).with_context(|| format!("{}: not a pins file", path.display()))
}

/// Write `pins` to `path`, replacing it whole.
pub fn write(path: &Path, pins: &Pins) -> std::io::Result<()> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".tmp-{}", std::process::id()));
    std::fs::write(&temp, render_pins(pins))?;
    std::fs::rename(&temp, path)
}
