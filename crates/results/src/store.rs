//! The result store: an embedded SQLite database (WAL mode) holding every run
//! record as JSON, its labels, and the environment it was measured in.
//!
//! Design notes:
//! - The record is kept whole as JSON (the versioned contract of
//!   `stackbench_record`); only what queries need is copied into
//!   indexed columns (start time, study, variant, workloads). Rows are read
//!   back through `record_from_json`: an older record is migrated to the
//!   current layout, a newer one is refused naming its run id.
//! - Each save is one transaction, so a process killed mid-study leaves every
//!   completed run intact and no partial row (SQLite's journal guarantees it).
//! - The schema is versioned by the `schema_migrations` table; [`MIGRATIONS`]
//!   lists the steps in order and opening a database applies the missing ones.
//!   Read-only commands open with [`Store::open_read_only`] instead, which
//!   creates nothing and migrates nothing (see `read_only`).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use stackbench_record::RunRecord;
use stackbench_record::{record_from_json, RecordError};
use thiserror::Error;

use crate::env::Environment;

mod read_only;

/// Label key → value, e.g. `study=best-practices`, `kernel=6.1` (defined
/// beside the study files that set most of them).
pub use stackbench_model::study::Labels;

/// Row id of a stored run.
pub type RunId = i64;

/// Environment variable overriding the database location.
pub const DB_ENV: &str = "STACKBENCH_DB";

/// Schema steps; step `i` brings the schema from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: runs, their labels, and the study files they came from.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        started_unix_s REAL NOT NULL,
        stored_unix_s REAL NOT NULL,
        stackbench_version TEXT NOT NULL,
        complete INTEGER NOT NULL,
        study TEXT,
        variant TEXT,
        workloads TEXT NOT NULL,
        record_json TEXT NOT NULL,
        env_json TEXT NOT NULL
    );
    CREATE INDEX runs_started ON runs(started_unix_s);
    CREATE INDEX runs_study ON runs(study, variant);
    CREATE TABLE labels (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE INDEX labels_key_value ON labels(key, value);
    CREATE TABLE studies (
        name TEXT PRIMARY KEY,
        description TEXT NOT NULL,
        file_text TEXT NOT NULL,
        updated_unix_s REAL NOT NULL
    );",
];

/// Why the store could not be used. Causes are held as `error`, not
/// `source`: each message already contains its cause, and a `source()` would
/// print it twice in the CLI's one-line error chain.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("result database {path}: {error} (use --db PATH or --no-store)")]
    Sqlite {
        path: String,
        error: rusqlite::Error,
    },
    #[error("cannot create the directory for {path}: {error} (use --db PATH or --no-store)")]
    CreateDir { path: String, error: std::io::Error },
    #[error("result database {path} has schema version {found}, newer than this stackbench supports ({known}): upgrade stackbench or use --db with another file")]
    TooNew {
        path: String,
        found: u32,
        known: u32,
    },
    #[error("no home directory for the default result database: set {DB_ENV} or pass --db PATH")]
    NoHome,
    #[error("no stored run with id {0}: `stackbench results list` shows the ids")]
    NoSuchRun(RunId),
    /// Not `key=value`. The message names no flag: `--label` (which sets a
    /// label) and `--where` (which selects by one) both parse labels, and
    /// each caller names its own flag and what it does.
    #[error("bad label '{0}': use key=value, e.g. kernel=6.1")]
    BadLabel(String),
    #[error("stored run {id} is not valid JSON: {error}")]
    Corrupt { id: RunId, error: serde_json::Error },
    #[error("stored run {id}: {error}")]
    BadRecord { id: RunId, error: RecordError },
    #[error("no results database at {path}: run `stackbench run` or `stackbench study` first, or give --db PATH")]
    Missing { path: String },
    #[error("{path} is not a stackbench result database (it has no schema version): give --db PATH of one `stackbench run` wrote")]
    NotAStore { path: String },
}

/// A stored run, as read back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredRun {
    pub id: RunId,
    pub stored_unix_s: f64,
    pub labels: Labels,
    /// The run record, migrated to the current schema version.
    pub record: RunRecord,
    pub env: Environment,
}

/// One line of `stackbench results list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub id: RunId,
    pub started_unix_s: f64,
    pub complete: bool,
    pub study: Option<String>,
    pub variant: Option<String>,
    pub workloads: String,
    pub labels: Labels,
    /// Why the stored record cannot be read (e.g. written by a newer
    /// stackbench); absent when it can. Such a run is still listed, from its
    /// indexed columns, but `results show` and every comparison refuse it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An open result database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// Where runs are stored by default: `$STACKBENCH_DB`, else
/// `$XDG_DATA_HOME/stackbench/results.db`, else
/// `~/.local/share/stackbench/results.db`.
pub fn default_db_path() -> Result<PathBuf, StoreError> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var(DB_ENV) {
        return Ok(PathBuf::from(p));
    }
    let data = match var("XDG_DATA_HOME") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(var("HOME").ok_or(StoreError::NoHome)?).join(".local/share"),
    };
    Ok(data.join("stackbench").join("results.db"))
}

/// Parses `key=value` (from `--label`).
pub fn parse_label(text: &str) -> Result<(String, String), StoreError> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(StoreError::BadLabel(text.to_string())),
    }
}

/// The fix a `--where` error gives: what the flag selects and an example.
pub const WHERE_HELP: &str = "--where keeps the runs that carry the label key=value, \
     e.g. --where study=quick (`stackbench results list` shows the runs' labels)";

/// Parses a list of `key=value` labels into a map (later keys win).
pub fn parse_labels<S: AsRef<str>>(texts: &[S]) -> Result<Labels, StoreError> {
    texts.iter().map(|t| parse_label(t.as_ref())).collect()
}

fn now_unix_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Store {
    /// Opens `path` (or the default location when `None`), creating the file and
    /// its directory if needed and applying missing migrations.
    pub fn open(path: Option<&Path>) -> Result<Store, StoreError> {
        let path = match path {
            Some(p) => p.to_path_buf(),
            None => default_db_path()?,
        };
        Store::open_with(&path, MIGRATIONS)
    }

    /// Opens with an explicit migration list (tests use a longer one).
    pub fn open_with(path: &Path, migrations: &[&str]) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|error| StoreError::CreateDir {
                path: path.display().to_string(),
                error,
            })?;
        }
        let conn = Connection::open(path).map_err(|e| sql_err(path, e))?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.configure().map_err(|e| sql_err(path, e))?;
        store.migrate(migrations)?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        sql_err(&self.path, e)
    }

    fn configure(&self) -> rusqlite::Result<()> {
        self.conn.busy_timeout(std::time::Duration::from_secs(10))?;
        // WAL: readers (results list, report) never block a running study.
        // Switching a new database to WAL needs an exclusive lock, and SQLite
        // answers BUSY at once (no busy handler) when another connection is
        // opening it at the same moment: retry for up to ~2 s.
        let mut tries = 0;
        loop {
            match self
                .conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
            {
                Ok(_) => break,
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy && tries < 100 =>
                {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(e),
            }
        }
        self.conn
            .execute_batch("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;")
    }

    /// The schema version the database is at.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        self.conn
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    fn migrate(&mut self, migrations: &[&str]) -> Result<(), StoreError> {
        self.conn
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS schema_migrations (
                    version INTEGER PRIMARY KEY, applied_unix_s REAL NOT NULL)",
            )
            .map_err(|e| self.err(e))?;
        // IMMEDIATE takes the write lock before reading the version, so two
        // processes opening a new database at once (parallel runs, tests)
        // cannot both apply the same migration; the second waits (busy
        // timeout), then finds the work done.
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| sql_err(&path, e))?;
        let found: u32 = tx
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                [],
                |r| r.get(0),
            )
            .map_err(|e| sql_err(&path, e))?;
        let known = migrations.len() as u32;
        if found > known {
            return Err(StoreError::TooNew {
                path: path.display().to_string(),
                found,
                known,
            });
        }
        for (i, sql) in migrations.iter().enumerate().skip(found as usize) {
            tx.execute_batch(sql).map_err(|e| sql_err(&path, e))?;
            tx.execute(
                "INSERT INTO schema_migrations (version, applied_unix_s) VALUES (?1, ?2)",
                params![i as u32 + 1, now_unix_s()],
            )
            .map_err(|e| sql_err(&path, e))?;
        }
        tx.commit().map_err(|e| sql_err(&path, e))?;
        Ok(())
    }

    /// Stores one run with its labels and environment, in one transaction.
    pub fn save(
        &mut self,
        record: &RunRecord,
        labels: &Labels,
        env: &Environment,
    ) -> Result<RunId, StoreError> {
        let path = self.path.clone();
        let e = |err| sql_err(&path, err);
        let tx = self.conn.transaction().map_err(e)?;
        tx.execute(
            "INSERT INTO runs (started_unix_s, stored_unix_s, stackbench_version, complete,
                study, variant, workloads, record_json, env_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                record.started_unix_s,
                now_unix_s(),
                record.stackbench_version,
                record.complete,
                labels.get("study"),
                labels.get("variant"),
                workloads_of(record).join(" "),
                serde_json::to_string(record).expect("a RunRecord always serializes"),
                serde_json::to_string(env).expect("an Environment always serializes"),
            ],
        )
        .map_err(e)?;
        let id = tx.last_insert_rowid();
        for (k, v) in labels {
            tx.execute(
                "INSERT INTO labels (run_id, key, value) VALUES (?1, ?2, ?3)",
                params![id, k, v],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)?;
        Ok(id)
    }

    /// Records a study file (name, description, text) so reports can show its
    /// purpose. Saving again replaces the stored text.
    pub fn save_study(
        &self,
        name: &str,
        description: &str,
        file_text: &str,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO studies (name, description, file_text, updated_unix_s)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(name) DO UPDATE SET description = ?2, file_text = ?3,
                    updated_unix_s = ?4",
                params![name, description, file_text, now_unix_s()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// The stored description of a study, if the study file was saved.
    pub fn study_description(&self, name: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT description FROM studies WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The stored text of a study file, if it was saved.
    pub fn study_file(&self, name: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT file_text FROM studies WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Names of the studies that have stored runs, in order of their first run.
    pub fn study_names(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT study FROM runs WHERE study IS NOT NULL GROUP BY study ORDER BY MIN(id)",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Ids of runs carrying every label in `filter`, oldest first.
    pub fn select_ids(&self, filter: &Labels) -> Result<Vec<RunId>, StoreError> {
        let mut sql = String::from("SELECT id FROM runs WHERE 1=1");
        let mut args: Vec<&str> = Vec::new();
        for (k, v) in filter {
            let n = args.len();
            sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM labels l WHERE l.run_id = runs.id
                   AND l.key = ?{} AND l.value = ?{})",
                n + 1,
                n + 2
            ));
            args.push(k);
            args.push(v);
        }
        sql.push_str(" ORDER BY id");
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args), |r| r.get(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Runs carrying every label in `filter`, oldest first, read whole.
    pub fn select(&self, filter: &Labels) -> Result<Vec<StoredRun>, StoreError> {
        self.select_ids(filter)?
            .into_iter()
            .map(|id| self.get(id))
            .collect()
    }

    /// Summaries of runs carrying every label in `filter`, oldest first. A
    /// row whose record cannot be read is listed with its `error` rather than
    /// failing the whole list.
    pub fn list(&self, filter: &Labels) -> Result<Vec<RunSummary>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, started_unix_s, complete, study, variant, workloads, record_json
                 FROM runs WHERE id = ?1",
            )
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for id in self.select_ids(filter)? {
            let (mut s, record_json) = stmt
                .query_row([id], |r| {
                    let summary = RunSummary {
                        id: r.get(0)?,
                        started_unix_s: r.get(1)?,
                        complete: r.get(2)?,
                        study: r.get(3)?,
                        variant: r.get(4)?,
                        workloads: r.get(5)?,
                        labels: Labels::new(),
                        error: None,
                    };
                    Ok((summary, r.get::<_, String>(6)?))
                })
                .map_err(|e| self.err(e))?;
            s.labels = self.labels_of(id)?;
            s.error = decode_record(id, &record_json).err().map(|e| e.to_string());
            out.push(s);
        }
        Ok(out)
    }

    fn labels_of(&self, id: RunId) -> Result<Labels, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT key, value FROM labels WHERE run_id = ?1")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// One stored run by id.
    pub fn get(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let row: Option<(f64, String, String)> = self
            .conn
            .query_row(
                "SELECT stored_unix_s, record_json, env_json FROM runs WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let (stored_unix_s, record, env) = row.ok_or(StoreError::NoSuchRun(id))?;
        let record = decode_record(id, &record)?;
        // An environment that no longer parses (a field changed type) is shown
        // as unknown rather than making the run unreadable.
        let env = serde_json::from_str(&env).unwrap_or_default();
        Ok(StoredRun {
            id,
            stored_unix_s,
            labels: self.labels_of(id)?,
            record,
            env,
        })
    }

    /// Runs SQLite's integrity check; `true` when the file is sound.
    pub fn integrity_ok(&self) -> Result<bool, StoreError> {
        let status: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        Ok(status == "ok")
    }
}

fn sql_err(path: &Path, error: rusqlite::Error) -> StoreError {
    StoreError::Sqlite {
        path: path.display().to_string(),
        error,
    }
}

/// A stored record's JSON text as a record of the current schema version.
fn decode_record(id: RunId, json: &str) -> Result<RunRecord, StoreError> {
    let value = serde_json::from_str(json).map_err(|error| StoreError::Corrupt { id, error })?;
    record_from_json(value).map_err(|error| StoreError::BadRecord { id, error })
}

/// The distinct workloads of a record's classes, in order.
pub fn workloads_of(record: &RunRecord) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for class in &record.classes {
        if !out.contains(&class.workload) {
            out.push(class.workload.clone());
        }
    }
    out
}
