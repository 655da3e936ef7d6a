//! Where `ssh` finds the tool's key for one call: the policy's key file, a
//! sealed memory file, or (the fallback) a 0600 file in the call's private
//! directory.

use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use rustix::fs::{MemfdFlags, Mode, SealFlags};

/// Where `ssh` finds the key for one call.
pub(super) enum Identity {
    /// The policy's own key file.
    Given(PathBuf),
    /// An anonymous memory file, held open for the call, and the
    /// `/proc/<pid>/fd/<n>` path that reaches it.
    Memory { _fd: OwnedFd, path: PathBuf },
    /// The fallback: a 0600 file in the call's private directory.
    File(PathBuf),
}

impl Identity {
    /// The key held in memory, as a memory file when that works, else as
    /// a file in `dir`.
    pub(super) fn private(key: &str, dir: &Path, force_file: bool) -> io::Result<Self> {
        if !force_file {
            match memory_file(key) {
                Ok((fd, path)) => return Ok(Self::Memory { _fd: fd, path }),
                Err(err) => tracing::debug!(
                    error = %err,
                    "no usable memory file for the identity; using a private file"
                ),
            }
        }
        let path = dir.join("identity");
        write_private(&path, key)?;
        Ok(Self::File(path))
    }

    pub(super) fn path(&self) -> &Path {
        match self {
            Self::Given(path) | Self::Memory { path, .. } | Self::File(path) => path,
        }
    }
}

impl Drop for Identity {
    fn drop(&mut self) {
        if let Self::File(path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// `key` (plus the final newline OpenSSH wants) in a sealed 0600 memory
/// file, and a path to it that other processes of this user can open.
fn memory_file(key: &str) -> io::Result<(OwnedFd, PathBuf)> {
    let fd = rustix::fs::memfd_create(
        "portcullis-ssh-identity",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    rustix::fs::fchmod(&fd, Mode::RUSR | Mode::WUSR)?;
    let mut file = File::from(fd);
    file.write_all(key.as_bytes())?;
    file.write_all(b"\n")?;
    rustix::fs::fcntl_add_seals(
        &file,
        SealFlags::SEAL | SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE,
    )?;
    let path = PathBuf::from(format!(
        "/proc/{}/fd/{}",
        std::process::id(),
        file.as_raw_fd()
    ));
    // The path must reach this very file (procfs mounted and not hidden).
    let (seen, held) = (std::fs::metadata(&path)?, file.metadata()?);
    if (seen.dev(), seen.ino()) != (held.dev(), held.ino()) {
        return Err(io::Error::other(
            "the /proc path does not reach the memory file",
        ));
    }
    Ok((file.into(), path))
}

fn write_private(path: &Path, key: &str) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(key.as_bytes())?;
    // The store trims values; OpenSSH wants the key's final newline.
    file.write_all(b"\n")?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
    use std::os::unix::fs::PermissionsExt as _;

    use rustix::io::FdFlags;

    use super::*;

    /// The memory file holds the key and its final newline, is 0600,
    /// is not inherited by `ssh` (close-on-exec: `ssh` opens it by its
    /// `/proc` path), and is sealed against any change: no write, no
    /// shrinking, no growing, and no undoing or adding of seals.
    #[test]
    fn the_memory_file_holds_the_key_read_only_and_sealed() {
        let (fd, path) = memory_file("-----KEY-----").unwrap();
        assert_eq!(
            path,
            PathBuf::from(format!(
                "/proc/{}/fd/{}",
                std::process::id(),
                fd.as_raw_fd()
            ))
        );
        let flags = rustix::io::fcntl_getfd(&fd).unwrap();
        assert!(flags.contains(FdFlags::CLOEXEC), "{flags:?}");
        let seals = rustix::fs::fcntl_get_seals(&fd).unwrap();
        assert_eq!(
            seals,
            SealFlags::SEAL | SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE
        );
        let mut file = File::from(fd);
        assert_eq!(
            file.metadata().unwrap().permissions().mode() & 0o7777,
            0o600
        );
        let mut text = String::new();
        file.seek(SeekFrom::Start(0)).unwrap();
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "-----KEY-----\n");
        assert!(file.write_all(b"x").is_err());
        assert!(file.set_len(1).is_err());
        assert!(file.set_len(100).is_err());
        assert!(rustix::fs::fcntl_add_seals(&file, SealFlags::FUTURE_WRITE).is_err());
    }
}
