//! stdout ownership.
//!
//! [`take_stdout`] runs first thing in `main`, before argument parsing,
//! logging or config loading. It moves the process's stdout to a private
//! close-on-exec descriptor and points fd 1 at stderr, so anything that
//! writes to "stdout" the ordinary way (`println!`, a dependency's banner,
//! a child process that inherits fd 1) lands on stderr. Only two things
//! ever write to the private descriptor: the MCP driver's [`FrameWriter`]
//! (one complete frame per write) and the report subcommands (`inspect`,
//! `replay`, `policy`, `audit`), which get it as a plain writer.
//!
//! Everything here is safe rustix calls; the crate keeps the workspace's
//! `forbid(unsafe_code)`.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;

/// The original stdout, held on a private close-on-exec descriptor.
#[derive(Debug)]
pub struct PrivateStdout {
    fd: Option<OwnedFd>,
    redirected: bool,
}

/// Move stdout to a private descriptor and point fd 1 at stderr (or at
/// `/dev/null` when stderr is not open).
pub fn take_stdout() -> PrivateStdout {
    // At least 3, so the copy never lands on a standard descriptor.
    let fd = rustix::io::fcntl_dupfd_cloexec(io::stdout(), 3).ok();
    let redirected = rustix::stdio::dup2_stdout(io::stderr()).is_ok()
        || File::options()
            .write(true)
            .open("/dev/null")
            .is_ok_and(|null| rustix::stdio::dup2_stdout(&null).is_ok());
    PrivateStdout { fd, redirected }
}

impl PrivateStdout {
    /// Whether fd 1 no longer reaches the original stdout. When it still
    /// does, stray output could corrupt the protocol stream, so the MCP
    /// driver refuses to start.
    pub fn redirected(&self) -> bool {
        self.redirected
    }

    /// A plain writer for a report subcommand. Unbuffered: wrap it. When
    /// stdout was not open at all, output is discarded, as writing to a
    /// closed stdout through `std::io::stdout()` would.
    pub fn into_writer(self) -> Box<dyn Write + Send> {
        match self.fd {
            Some(fd) => Box::new(File::from(fd)),
            None => Box::new(io::sink()),
        }
    }

    /// The frame writer for the MCP driver. The descriptor is put in
    /// blocking mode: a whole frame is written or the write fails.
    pub fn into_frame_writer(self) -> FrameWriter {
        if let Some(fd) = &self.fd {
            make_blocking(fd);
        }
        FrameWriter {
            out: self.fd.map(File::from),
        }
    }
}

/// Clear `O_NONBLOCK` (a parent may hand over a non-blocking pipe; reads
/// and writes here expect to block). Best effort.
pub fn make_blocking(fd: impl std::os::fd::AsFd) {
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    if let Ok(flags) = fcntl_getfl(&fd)
        && flags.contains(OFlags::NONBLOCK)
    {
        let _ = fcntl_setfl(&fd, flags - OFlags::NONBLOCK);
    }
}

/// Writes protocol frames to the private stdout: each whole frame with one
/// `write_all`, then a flush. After the first error the descriptor is
/// closed and nothing more is ever written.
#[derive(Debug)]
pub struct FrameWriter {
    out: Option<File>,
}

impl FrameWriter {
    /// Whether frames can still be written.
    pub fn is_open(&self) -> bool {
        self.out.is_some()
    }

    /// Write one complete frame (it must end with `\n`).
    pub fn write_frame(&mut self, frame: &[u8]) -> io::Result<()> {
        debug_assert!(frame.ends_with(b"\n"), "a frame ends with a newline");
        let Some(out) = self.out.as_mut() else {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "stdout is closed after an earlier write error",
            ));
        };
        let result = out.write_all(frame).and_then(|()| out.flush());
        if result.is_err() {
            // Close the descriptor: a later partial frame is impossible.
            self.out = None;
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_closes_the_writer_for_good() {
        let file = File::options()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let mut writer = FrameWriter { out: Some(file) };
        assert!(writer.is_open());
        assert!(writer.write_frame(b"{}\n").is_err());
        assert!(!writer.is_open());
        assert!(writer.write_frame(b"{}\n").is_err());
    }
}
