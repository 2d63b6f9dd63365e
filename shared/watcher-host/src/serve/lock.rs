//! One `serve` per database: the writer's lock (contracts/serve.md "an embedded durable store (a
//! single SQLite file)"; `docs/interpretation.md` "One serve per database").
//!
//! Two `serve` processes on one database would both run every loop: both tell every
//! notification, both fire every timer. So `serve` takes an exclusive OS lock on a file beside
//! the database, `<database>.lock`, before it opens the database, and holds it until it stops.
//! The file holds the holder's pid and the instant it took the lock, so a second `serve` is
//! refused naming both. The lock is the operating system's (`flock` on Unix, `LockFileEx` on
//! Windows, through [`std::fs::File::try_lock`]): it ends with the process however the process
//! ends, `kill -9` included, so a lock file left behind never blocks the next start. The file
//! itself is never removed (removing it while a second process waits on it would let a third
//! take a lock on a new file beside the second).
//!
//! The commands that only read the database (`a2a-watcher subject|lapses|timeline|agents
//! --db/--config`, `report basis`) take no lock and keep working beside a running `serve`; the
//! Learnables authority's definitions live in the same file, so this one lock covers them.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The exclusive lock of one `serve` on its database, held until dropped.
#[derive(Debug)]
pub struct DatabaseLock {
    /// The open lock file; the OS lock lives as long as this handle.
    _file: File,
    /// The lock file's path.
    path: PathBuf,
}

/// Who holds a database's lock, as its lock file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The holder's process id.
    pub pid: u32,
    /// When it took the lock (UTC), when the file says.
    pub since: Option<jiff::Timestamp>,
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock: another `serve` runs on this database. Stop it first, or
    /// give this one another `database`.
    #[error(
        "the database {} is in use by another a2a-watcher serve ({}; lock file {}): one serve runs \
         per database, so this one does not start. Stop that one first, or give this one another \
         `database`",
        .database.display(),
        holder_words(.holder.as_ref()),
        .lock_file.display()
    )]
    InUse {
        /// The database, as the configuration names it (absolute when it could be resolved).
        database: PathBuf,
        /// The lock file.
        lock_file: PathBuf,
        /// The holder, when its lock file could be read.
        holder: Option<Holder>,
    },
    /// The lock file could not be created, read or written (a missing folder, permissions).
    #[error("could not lock the database {}: the lock file {}", .database.display(), .lock_file.display())]
    Io {
        /// The database.
        database: PathBuf,
        /// The lock file.
        lock_file: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
}

/// `pid N, running since T`, or why the holder is unknown.
fn holder_words(holder: Option<&Holder>) -> String {
    match holder {
        Some(Holder {
            pid,
            since: Some(since),
        }) => format!("pid {pid}, holding it since {since}"),
        Some(Holder { pid, since: None }) => format!("pid {pid}"),
        None => "its pid could not be read from the lock file".to_owned(),
    }
}

/// The lock file of `database`: the same path with `.lock` added (`watcher.db.lock`).
pub fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// `database` with its folder resolved (symbolic links and `..`), so that two spellings of one
/// database name one lock file; as given when the folder does not exist (opening then fails,
/// naming it).
fn resolved(database: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(database) {
        return p;
    }
    let folder = match database.parent() {
        Some(f) if !f.as_os_str().is_empty() => f,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(folder), database.file_name()) {
        (Ok(f), Some(name)) => f.join(name),
        _ => database.to_path_buf(),
    }
}

impl DatabaseLock {
    /// Takes the exclusive lock of `database` (`<database>.lock`, created when missing) without
    /// waiting, and writes this process's pid and `now` into the lock file.
    ///
    /// # Errors
    /// [`LockError::InUse`] naming the holder's pid when another process holds it;
    /// [`LockError::Io`] when the lock file cannot be created or written. A file system
    /// without locks ([`std::io::ErrorKind::Unsupported`]) is not an error: `serve` starts,
    /// warning that a second one would not be refused.
    pub fn acquire(database: &Path, now: jiff::Timestamp) -> Result<DatabaseLock, LockError> {
        let database = resolved(database);
        let path = lock_path(&database);
        let io = |source| LockError::Io {
            database: database.clone(),
            lock_file: path.clone(),
            source,
        };
        // Not truncated on open: the holder's pid must survive a contender's open.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                // Unreadable (Windows locks are mandatory): the holder is unknown.
                #[allow(
                    clippy::verbose_file_reads,
                    reason = "the open handle is read: opening the path again could read another file"
                )]
                let holder = file
                    .read_to_string(&mut text)
                    .ok()
                    .and_then(|_| parse_holder(&text));
                return Err(LockError::InUse {
                    database,
                    lock_file: path,
                    holder,
                });
            }
            Err(TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Unsupported => {
                tracing::warn!(lock_file = %path.display(), "the file system does not lock files: a second serve on this database would not be refused");
                return Ok(DatabaseLock { _file: file, path });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let holder = format!("pid={}\nsince={now}\n", std::process::id());
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(holder.as_bytes()))
            .and_then(|()| file.flush())
            .map_err(io)?;
        Ok(DatabaseLock { _file: file, path })
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The holder a lock file names (`pid=N` and `since=INSTANT` lines); `None` without a pid.
fn parse_holder(text: &str) -> Option<Holder> {
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(str::trim)
    };
    Some(Holder {
        pid: value("pid")?.parse().ok()?,
        since: value("since").and_then(|s| s.parse().ok()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "a2a-watcher-lock-test-{}-{}",
            std::process::id(),
            jiff::Timestamp::now().as_nanosecond()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A second lock of one database is refused, naming the database, the lock file and the
    /// holder's pid and instant; dropping the first frees it.
    #[test]
    fn a_second_lock_is_refused_naming_the_holder_until_the_first_is_dropped() {
        let dir = folder();
        let db = dir.join("watcher.db");
        let at: jiff::Timestamp = "2026-09-10T20:15:00Z".parse().unwrap();
        let first = DatabaseLock::acquire(&db, at).expect("the first lock");
        assert_eq!(first.path(), lock_path(&resolved(&db)));
        // Another spelling of the same database names the same lock.
        let again = DatabaseLock::acquire(&dir.join(".").join("watcher.db"), at).unwrap_err();
        let LockError::InUse {
            database, holder, ..
        } = &again
        else {
            panic!("{again:?}");
        };
        assert_eq!(database, &resolved(&db));
        assert_eq!(
            holder,
            &Some(Holder {
                pid: std::process::id(),
                since: Some(at)
            })
        );
        let text = again.to_string();
        assert!(
            text.contains(&format!("{}", resolved(&db).display()))
                && text.contains(&format!("pid {}", std::process::id()))
                && text.contains("2026-09-10T20:15:00Z"),
            "{text}"
        );
        drop(first);
        let later: jiff::Timestamp = "2026-09-10T20:16:00Z".parse().unwrap();
        let _second = DatabaseLock::acquire(&db, later).expect("free once the first is dropped");
        let kept = std::fs::read_to_string(lock_path(&resolved(&db))).unwrap();
        assert_eq!(
            parse_holder(&kept),
            Some(Holder {
                pid: std::process::id(),
                since: Some(later)
            }),
            "{kept}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_lock_file_without_a_pid_names_no_holder() {
        assert_eq!(parse_holder(""), None);
        assert_eq!(
            parse_holder("pid=42\nsince=soon\n"),
            Some(Holder {
                pid: 42,
                since: None
            })
        );
        assert_eq!(
            holder_words(None),
            "its pid could not be read from the lock file"
        );
    }

    #[test]
    fn a_missing_folder_is_an_error_naming_the_lock_file() {
        let db = folder().join("no-such-folder").join("watcher.db");
        let e = DatabaseLock::acquire(&db, jiff::Timestamp::UNIX_EPOCH).unwrap_err();
        assert!(matches!(e, LockError::Io { .. }), "{e:?}");
        assert!(e.to_string().contains("watcher.db.lock"), "{e}");
    }
}
