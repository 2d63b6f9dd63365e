//! Group commit (issue 10): one writer thread owns the write connection, takes every write
//! waiting, runs each in its own savepoint inside one `BEGIN IMMEDIATE` transaction, and
//! commits them together — one WAL sync (`synchronous = FULL`) for the group. A write's answer
//! is sent only after that commit returned, so an answer still means "on disk". A write that
//! fails (a lost compare-and-set, an error) is rolled back to its savepoint alone; the others of
//! its group are kept. Reads of a file database use their own connections from a small pool
//! (WAL readers see the last commit and never wait for the writer).
//!
//! Why a thread and a channel rather than a mutex: the writer must see every write waiting
//! when it starts a group; a channel hands it all of them at once (`try_recv` until empty), and
//! SQLite connections are blocking, so the writer is a plain OS thread, not a tokio task.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};

use rusqlite::{Connection, OpenFlags};
use watcher_runtime::store::StoreError;

use crate::codec::db;
use crate::schema::BUSY_TIMEOUT;

/// Most writes in one group (one transaction, one sync).
pub(crate) const MAX_GROUP: usize = 512;

/// Most idle read connections kept.
const MAX_IDLE_READERS: usize = 8;

/// Sends a write's answer once its group's commit is known (`Some(error)`: the commit failed).
type Reply = Box<dyn FnOnce(Option<&str>) + Send>;
/// Runs one write inside the group's transaction (or learns why the group could not start);
/// answers whether it succeeded (else its savepoint is rolled back) and its reply.
type Job = Box<dyn FnOnce(Result<&mut Connection, &str>) -> (bool, Reply) + Send>;

fn backend(msg: &str) -> StoreError {
    StoreError::backend(std::io::Error::other(msg.to_owned()))
}

/// How many groups and writes the writer committed (for tests: writes waiting together are
/// committed together).
#[derive(Debug, Default)]
pub(crate) struct GroupStats {
    /// Groups (transactions) run.
    pub(crate) groups: AtomicU64,
    /// Writes run.
    pub(crate) writes: AtomicU64,
    /// The largest group so far.
    pub(crate) largest: AtomicU64,
    /// Writes handed to the writer so far.
    pub(crate) sent: AtomicU64,
}

/// The writer: a handle on the writer thread's queue. Cloning shares it; the thread ends (and
/// closes the connection) when the last handle is dropped.
#[derive(Clone)]
pub(crate) struct Writer {
    jobs: mpsc::Sender<Job>,
    pub(crate) stats: Arc<GroupStats>,
}

impl Writer {
    /// Starts the writer thread on `conn` (already prepared).
    pub(crate) fn start(conn: Connection) -> Result<Self, StoreError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let stats = Arc::new(GroupStats::default());
        let counted = Arc::clone(&stats);
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer_loop(conn, &queue, &counted))
            .map_err(StoreError::backend)?;
        Ok(Writer { jobs, stats })
    }

    fn job<T, F>(f: F, send: impl FnOnce(Result<T, StoreError>) + Send + 'static) -> Job
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        Box::new(move |conn| {
            let result = match conn {
                Ok(c) => f(c),
                Err(e) => Err(backend(e)),
            };
            let ok = result.is_ok();
            let reply: Reply = Box::new(move |commit_error| {
                send(match (result, commit_error) {
                    (Ok(_), Some(e)) => Err(backend(&format!("the commit failed: {e}"))),
                    (result, _) => result,
                });
            });
            (ok, reply)
        })
    }

    /// Hands `job` to the writer thread and waits for what it sends on `rx`.
    async fn submit<T>(
        &self,
        job: Job,
        rx: tokio::sync::oneshot::Receiver<Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.stats.sent.fetch_add(1, Ordering::Relaxed);
        self.jobs
            .send(job)
            .map_err(|_| backend("the SQLite writer has stopped"))?;
        rx.await
            .map_err(|_| backend("the SQLite writer dropped this write (it panicked)"))?
    }

    /// Runs `f` in the next group and answers once the group is committed (durable), or with
    /// the error that rolled `f` back.
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job = Self::job(f, move |r| {
            let _ = tx.send(r);
        });
        self.submit(job, rx).await
    }

    /// Runs `f` in the next group and answers as soon as `f` has run, before the group commits:
    /// for a value the caller may use at once although the write is not yet durable (the
    /// raising-order number: the commit that uses it makes it durable). If the group is then
    /// rolled back, what `f` wrote is lost; `f` must tolerate that.
    pub(crate) async fn write_answered_early<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let result = match conn {
                Ok(c) => f(c),
                Err(e) => Err(backend(e)),
            };
            let ok = result.is_ok();
            let _ = tx.send(result);
            let reply: Reply = Box::new(|_| {});
            (ok, reply)
        });
        self.submit(job, rx).await
    }

    /// As [`Writer::write`], blocking the calling thread (outside the async paths: setup).
    pub(crate) fn write_blocking<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel();
        let job = Self::job(f, move |r| {
            let _ = tx.send(r);
        });
        self.jobs
            .send(job)
            .map_err(|_| backend("the SQLite writer has stopped"))?;
        rx.recv()
            .map_err(|_| backend("the SQLite writer dropped this write (it panicked)"))?
    }
}

fn writer_loop(mut conn: Connection, queue: &mpsc::Receiver<Job>, stats: &GroupStats) {
    while let Ok(first) = queue.recv() {
        let mut jobs = vec![first];
        while jobs.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        let n = jobs.len() as u64;
        stats.groups.fetch_add(1, Ordering::Relaxed);
        stats.writes.fetch_add(n, Ordering::Relaxed);
        stats.largest.fetch_max(n, Ordering::Relaxed);
        run_group(&mut conn, jobs);
    }
}

/// One group: `BEGIN IMMEDIATE`, each job in `SAVEPOINT job` (released, or rolled back alone
/// when it fails or panics), `COMMIT`; then every reply, with the commit's error if it failed.
fn run_group(conn: &mut Connection, jobs: Vec<Job>) {
    if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
        let msg = format!("could not start the transaction: {e}");
        for job in jobs {
            let (_, reply) = job(Err(&msg));
            reply(Some(&msg));
        }
        return;
    }
    let mut replies = Vec::with_capacity(jobs.len());
    // Set once the transaction itself is lost (SQLite rolled it back on a severe error): the
    // remaining jobs are not run and every reply carries the error.
    let mut broken: Option<String> = None;
    for job in jobs {
        if let Some(msg) = &broken {
            let (_, reply) = job(Err(msg));
            replies.push(reply);
            continue;
        }
        if let Err(e) = run_cached(conn, "SAVEPOINT job") {
            let msg = e.to_string();
            let (_, reply) = job(Err(&msg));
            replies.push(reply);
            broken = Some(msg);
            continue;
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| job(Ok(&mut *conn))));
        let ok = matches!(outcome, Ok((true, _)));
        let end = if ok {
            run_cached(conn, "RELEASE job")
        } else {
            run_cached(conn, "ROLLBACK TO job").and_then(|()| run_cached(conn, "RELEASE job"))
        };
        if let Err(e) = end {
            broken = Some(e.to_string());
        }
        // A job that panicked has no reply: its caller learns it from the dropped channel.
        if let Ok((_, reply)) = outcome {
            replies.push(reply);
        }
    }
    let failed = match broken {
        Some(msg) => {
            let _ = conn.execute_batch("ROLLBACK");
            Some(msg)
        }
        None => match conn.execute_batch("COMMIT") {
            Ok(()) => None,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                Some(e.to_string())
            }
        },
    };
    for reply in replies {
        reply(failed.as_deref());
    }
}

/// Runs one statement without parameters from the connection's statement cache (the savepoint
/// statements run twice per write: `execute_batch` would parse them each time).
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Read connections to a database file, opened on demand and kept for reuse.
pub(crate) struct Readers {
    path: PathBuf,
    pub(crate) idle: Mutex<Vec<Connection>>,
    /// Counting handler for new connections ([`crate::SqliteStore::counting_work`]).
    pub(crate) work: Mutex<Option<Arc<AtomicU64>>>,
}

impl Readers {
    pub(crate) fn new(path: PathBuf) -> Self {
        Readers {
            path,
            idle: Mutex::new(Vec::new()),
            work: Mutex::new(None),
        }
    }

    /// Drops the idle connections (new ones are opened with the current settings).
    pub(crate) fn clear(&self) {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    fn open(&self) -> Result<Connection, StoreError> {
        let mut conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(db)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
        // Reads only: a bug that writes through a reader fails instead of bypassing the group.
        conn.pragma_update(None, "query_only", true).map_err(db)?;
        crate::schema::tune(&conn)?;
        let work = self
            .work
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(work) = work {
            crate::count_work(&mut conn, &work)?;
        }
        Ok(conn)
    }

    /// Runs `f` on a read connection on tokio's blocking pool.
    pub(crate) async fn read<T, F>(self: &Arc<Self>, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let me = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let pooled = me.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
            let mut conn = match pooled {
                Some(c) => c,
                None => me.open()?,
            };
            let out = f(&mut conn);
            if conn.is_autocommit() {
                let mut idle = me.idle.lock().unwrap_or_else(PoisonError::into_inner);
                if idle.len() < MAX_IDLE_READERS {
                    idle.push(conn);
                }
            }
            out
        })
        .await
        .map_err(StoreError::backend)?
    }
}
