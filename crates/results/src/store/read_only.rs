//! Opening the store for reading only (`results`, `compare`, `report`): such a
//! command must never create a database or its directory, nor migrate one,
//! and must work on a database the user cannot write.
//!
//! Design notes:
//! - The file is opened with `SQLITE_OPEN_READ_ONLY`, so SQLite itself refuses
//!   every write; no pragma that writes (journal mode) is issued.
//! - A WAL database needs its `-shm` index to be read. SQLite creates it beside
//!   the file when it can; when it cannot (a read-only directory and no
//!   `-shm` left by a writer) the first query fails with CANTOPEN or a
//!   READONLY code, and the file is reopened with `immutable=1`, which reads
//!   the main file without any locking or index. That is only correct while no
//!   writer is active, which is the case in a directory nobody can write to.
//! - No migration is applied: the read queries work on every schema version
//!   since the first. A database newer than this binary knows is refused, as
//!   `Store::open` does. When a migration changes what the reads query, this
//!   is where older versions must be refused or read differently.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::{sql_err, Store, StoreError, MIGRATIONS};

impl Store {
    /// Opens `db`, or the default database ([`super::default_db_path`]),
    /// read-only (see [`Store::open_read_only`]): what `results`, `compare`
    /// and `report` read.
    pub fn open_existing(db: Option<&Path>) -> Result<Store, StoreError> {
        let path = match db {
            Some(p) => p.to_path_buf(),
            None => super::default_db_path()?,
        };
        Store::open_read_only(&path)
    }

    /// Opens an existing database at `path` for reading only: creates no file
    /// or directory, applies no migration, and refuses a database whose schema
    /// is newer than this stackbench knows. A missing file is
    /// [`StoreError::Missing`].
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Missing {
                path: path.display().to_string(),
            });
        }
        let (store, found) = match open_probed(path, false) {
            Err(StoreError::Sqlite { error, .. }) if needs_immutable(&error) => {
                open_probed(path, true)?
            }
            other => other?,
        };
        let known = MIGRATIONS.len() as u32;
        match found {
            0 => Err(StoreError::NotAStore {
                path: path.display().to_string(),
            }),
            found if found > known => Err(StoreError::TooNew {
                path: path.display().to_string(),
                found,
                known,
            }),
            _ => Ok(store),
        }
    }
}

/// Opens read-only and reads the schema version (0 when there is no
/// `schema_migrations` table): the first query is what touches the file.
fn open_probed(path: &Path, immutable: bool) -> Result<(Store, u32), StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = if immutable {
        Connection::open_with_flags(immutable_uri(path), flags | OpenFlags::SQLITE_OPEN_URI)
    } else {
        Connection::open_with_flags(path, flags)
    }
    .map_err(|e| sql_err(path, e))?;
    let store = Store {
        conn,
        path: path.to_path_buf(),
    };
    let found = store.probe().map_err(|e| sql_err(path, e))?;
    Ok((store, found))
}

impl Store {
    fn probe(&self) -> rusqlite::Result<u32> {
        // A writer may hold the lock briefly (WAL recovery, checkpoint).
        self.conn.busy_timeout(std::time::Duration::from_secs(10))?;
        let has_table: bool = self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master
                WHERE type = 'table' AND name = 'schema_migrations')",
            [],
            |r| r.get(0),
        )?;
        if !has_table {
            return Ok(0);
        }
        self.conn.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            [],
            |r| r.get(0),
        )
    }
}

/// Errors of a read-only open that `immutable=1` avoids: the WAL index could
/// not be created or opened.
fn needs_immutable(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly)
    )
}

/// `file:PATH?immutable=1`, the path percent-encoded where a URI needs it.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_escape_what_sqlite_would_parse() {
        assert_eq!(
            immutable_uri(Path::new("/tmp/a b/r?#%.db")),
            "file:/tmp/a%20b/r%3F%23%25.db?immutable=1"
        );
    }

    #[test]
    fn the_immutable_fallback_reads_a_wal_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("odd name?.db");
        Store::open(Some(&path)).unwrap();
        let (store, found) = open_probed(&path, true).unwrap();
        assert_eq!(found, MIGRATIONS.len() as u32);
        assert!(store.list(&Default::default()).unwrap().is_empty());
    }
}
