//! [`Records`](watcher_runtime::store::Records) on SQLite: the record: subjects and tasks loaded and committed by compare-and-set, and the input numbers ([`watcher_runtime::store::Records`]).

use super::*;
use watcher_runtime::store::Records;

#[async_trait]
impl Records for SqliteStore {
    async fn load(
        &self,
        tenant: &Tenant,
        scope: &Scope,
        now: Instant,
    ) -> Result<Slice, StoreError> {
        let (tenant, scope) = (tenant.clone(), scope.clone());
        self.read(move |conn| load_in(conn, &tenant, &scope, now))
            .await
    }

    async fn commit(&self, tenant: &Tenant, commit: Commit) -> Result<(), StoreError> {
        let tenant = tenant.clone();
        // Serialised here, on the caller's thread, not in the writer's group.
        let commit = PreparedCommit::of(commit)?;
        self.write(move |conn| commit_in(conn, &tenant, &commit))
            .await
    }

    /// Taken in the writer's next group and answered as soon as it is taken, before that group
    /// commits: an input waits for one commit (its own), not two (issue 10). Never handed out
    /// twice: see `take_sequence`.
    async fn next_sequence(&self) -> Result<u64, StoreError> {
        let high = Arc::clone(&self.sequence_high);
        self.writer
            .write_answered_early(move |conn| take_sequence(conn, &high))
            .await
    }

    async fn subject(
        &self,
        tenant: &Tenant,
        subject: &Subject,
    ) -> Result<Option<SubjectState>, StoreError> {
        let (tenant, subject) = (tenant.clone(), subject.clone());
        // One snapshot: the subject's row and its fact rows are two statements.
        self.read(move |conn| read_tx(conn, |tx| read_subject(tx, &tenant, &subject)))
            .await
    }

    async fn all_records(&self) -> Result<Vec<ExpectationRecord>, StoreError> {
        self.read(|conn| {
            let states: Vec<SubjectState> = json_rows(
                conn,
                "SELECT state FROM subjects ORDER BY tenant, subject_type, subject_id",
                [],
                "subject",
            )?;
            let mut all: Vec<ExpectationRecord> =
                states.into_iter().flat_map(|s| s.records).collect();
            all.sort_by_key(|r| r.order);
            Ok(all)
        })
        .await
    }
}
