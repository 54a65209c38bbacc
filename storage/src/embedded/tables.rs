//! `Tables`: the redb tables of one write transaction (live keys, retained versions, the
//! revision log, counters), shared by the writer's commits and the compactor.

use redb::{Table, WriteTransaction};

use super::schema::{db_err, encode_version, HISTORY, LATEST, LOG, META};
use crate::error::Result;
use crate::txn::RawValue;

/// The tables of one write transaction.
pub(crate) struct Tables<'txn> {
    /// Live keys.
    pub latest: Table<'txn, &'static str, (u64, &'static [u8])>,
    /// Every retained version.
    pub history: Table<'txn, (&'static str, u64), &'static [u8]>,
    /// The revision log.
    pub log: Table<'txn, u64, &'static str>,
    /// Counters.
    pub meta: Table<'txn, &'static str, u64>,
}

impl<'txn> Tables<'txn> {
    pub(super) fn open(txn: &'txn WriteTransaction) -> Result<Self> {
        Ok(Self {
            latest: txn
                .open_table(LATEST)
                .map_err(|e| db_err("open latest", e))?,
            history: txn
                .open_table(HISTORY)
                .map_err(|e| db_err("open history", e))?,
            log: txn.open_table(LOG).map_err(|e| db_err("open log", e))?,
            meta: txn.open_table(META).map_err(|e| db_err("open meta", e))?,
        })
    }

    pub(super) fn latest(&self, key: &str) -> Result<Option<RawValue>> {
        super::schema::latest_in(&self.latest, key)
    }

    /// Records a put (`Some`) or delete (`None`) of `key` at `rev`.
    pub(super) fn record(&mut self, key: &str, data: Option<&[u8]>, rev: u64) -> Result<()> {
        let ctx = "write";
        match data {
            Some(d) => self.latest.insert(key, (rev, d)).map(drop),
            None => self.latest.remove(key).map(drop),
        }
        .map_err(|e| db_err(ctx, e))?;
        self.history
            .insert((key, rev), encode_version(data).as_slice())
            .map_err(|e| db_err(ctx, e))?;
        self.log.insert(rev, key).map_err(|e| db_err(ctx, e))?;
        Ok(())
    }
}
