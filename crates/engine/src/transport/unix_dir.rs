//! The private directory the responder puts one test's AF_UNIX sockets in:
//! created with mode 0700 under `$XDG_RUNTIME_DIR` (else the temporary
//! directory, `$TMPDIR` or /tmp) and removed, with its sockets, when the test
//! ends. One directory per test rather than per responder: a responder killed
//! between tests leaves nothing behind.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// Longest socket path: `sun_path` is 108 bytes including the final NUL.
pub const MAX_PATH_BYTES: usize = 107;

/// A test's socket directory; removed when dropped.
#[derive(Debug)]
pub struct SocketDir {
    path: PathBuf,
}

impl SocketDir {
    /// Creates a fresh private directory under the default base.
    pub fn create() -> Result<SocketDir, String> {
        SocketDir::create_in(&base_dir())
    }

    /// Creates a fresh private directory (mkdtemp, mode 0700) under `base`.
    pub fn create_in(base: &Path) -> Result<SocketDir, String> {
        let template = base.join("stackbench-XXXXXX");
        let mut bytes = CString::new(template.as_os_str().as_bytes())
            .map_err(|_| format!("bad directory '{}'", base.display()))?
            .into_bytes_with_nul();
        // SAFETY: `bytes` is a NUL-terminated template that mkdtemp edits in place.
        let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
        if made.is_null() {
            let e = std::io::Error::last_os_error();
            return Err(format!(
                "transport unix: cannot create a socket directory in '{}': {e} \
                 (set XDG_RUNTIME_DIR or TMPDIR to a writable directory)",
                base.display()
            ));
        }
        bytes.pop(); // the NUL
        Ok(SocketDir {
            path: PathBuf::from(OsString::from_vec(bytes)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of socket `name` in this directory, refused when longer than
    /// `sun_path` allows.
    pub fn socket_path(&self, name: &str) -> Result<PathBuf, String> {
        let path = self.path.join(name);
        let len = path.as_os_str().len();
        if len > MAX_PATH_BYTES {
            return Err(format!(
                "transport unix: socket path '{}' is {len} bytes, more than the {MAX_PATH_BYTES} \
                 sun_path allows: set XDG_RUNTIME_DIR or TMPDIR to a shorter directory",
                path.display()
            ));
        }
        Ok(path)
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// `$XDG_RUNTIME_DIR` when set (a per-user tmpfs), else the temporary directory.
fn base_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => std::env::temp_dir(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn directory_is_private_and_removed() {
        let dir = SocketDir::create_in(&std::env::temp_dir()).unwrap();
        let path = dir.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(dir.socket_path("w0.sock").unwrap(), b"x").unwrap();
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn too_long_paths_and_unwritable_bases_are_one_line_errors() {
        let name = format!("{}-{}", "d".repeat(90), std::process::id());
        let long = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&long).unwrap();
        let dir = SocketDir::create_in(&long).unwrap();
        let e = dir.socket_path("w0.sock").unwrap_err();
        assert!(
            e.contains("sun_path") && e.contains("XDG_RUNTIME_DIR"),
            "{e}"
        );
        drop(dir);
        let _ = std::fs::remove_dir(&long);
        let e = SocketDir::create_in(Path::new("/proc/no-such-dir")).unwrap_err();
        assert!(e.contains("cannot create a socket directory"), "{e}");
        assert!(!e.contains('\n'));
    }
}
