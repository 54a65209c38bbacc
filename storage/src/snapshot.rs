//! Snapshots of a whole store: every object under its prefix as of one revision, in a portable
//! format, for backups, restores and moving between the embedded store and etcd (what
//! `etcdctl snapshot save|restore` and k3s's SQLite-to-etcd migration do).
//!
//! The format is JSON lines: a header `{"kind":"StrategyHostSnapshot","formatVersion":1,
//! "revision":R}`, one line per object `{"key":K,"modRevision":M,"object":{...}}` (the key
//! relative to the store's prefix, the object as stored, without its resourceVersion), and a
//! trailer `{"objects":N}`, so a cut-off file is told from a whole one. Objects come in key order.

use std::io::BufRead;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::error::{Result, StorageError};

/// The header's `kind`.
const KIND: &str = "StrategyHostSnapshot";
/// The version of the format this build writes and reads.
pub const FORMAT_VERSION: u64 = 1;

/// One stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotEntry {
    /// Its key, relative to the store's prefix (`/configmaps/default/settings`).
    pub key: String,
    /// The revision of its last write.
    pub mod_revision: u64,
    /// The object as stored (JSON without its resourceVersion).
    pub data: Vec<u8>,
}

/// A store's objects as of `revision`, streamed in chunks in key order.
pub struct Snapshot {
    /// The revision the snapshot was read at.
    pub revision: u64,
    /// The objects.
    pub entries: BoxStream<'static, Result<Vec<SnapshotEntry>>>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    kind: String,
    format_version: u64,
    revision: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    key: &'a str,
    mod_revision: u64,
    object: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnedLine {
    key: String,
    mod_revision: u64,
    object: Box<RawValue>,
}

#[derive(Serialize, Deserialize)]
struct Trailer {
    objects: u64,
}

/// The header line of a snapshot at `revision`.
pub fn header_line(revision: u64) -> Vec<u8> {
    let header = Header {
        kind: KIND.into(),
        format_version: FORMAT_VERSION,
        revision,
    };
    line(&header)
}

/// The line of one entry.
///
/// # Errors
/// `Internal` when the stored bytes are not JSON.
pub fn entry_line(entry: &SnapshotEntry) -> Result<Vec<u8>> {
    let text = std::str::from_utf8(&entry.data)
        .ok()
        .and_then(|t| serde_json::from_str::<&RawValue>(t).ok())
        .ok_or_else(|| StorageError::Internal(format!("{} is not stored as JSON", entry.key)))?;
    Ok(line(&Line {
        key: &entry.key,
        mod_revision: entry.mod_revision,
        object: text,
    }))
}

/// The trailer line after `objects` entries.
pub fn trailer_line(objects: u64) -> Vec<u8> {
    line(&Trailer { objects })
}

fn line(value: &impl Serialize) -> Vec<u8> {
    let mut out = serde_json::to_vec(value).unwrap_or_default();
    out.push(b'\n');
    out
}

/// Reads a snapshot file: its header, then its entries; checks the trailer.
pub struct SnapshotReader<R> {
    lines: std::io::Lines<R>,
    /// The revision the snapshot was taken at.
    pub revision: u64,
    read: u64,
    done: bool,
}

impl<R: BufRead> SnapshotReader<R> {
    /// Reads the header.
    ///
    /// # Errors
    /// `BadRequest` when the input is not a snapshot, or of a newer format.
    pub fn new(input: R) -> Result<Self> {
        let mut lines = input.lines();
        let first = lines
            .next()
            .transpose()
            .map_err(io_error)?
            .ok_or_else(|| bad("the file is empty"))?;
        let header: Header = serde_json::from_str(&first)
            .ok()
            .filter(|h: &Header| h.kind == KIND)
            .ok_or_else(|| bad("the file is not a strategy-host snapshot"))?;
        if header.format_version > FORMAT_VERSION {
            return Err(bad(&format!(
                "the snapshot's format version is {}, newer than this strategy-host reads ({FORMAT_VERSION})",
                header.format_version
            )));
        }
        Ok(Self {
            lines,
            revision: header.revision,
            read: 0,
            done: false,
        })
    }

    /// The next entry; `None` after the trailer.
    ///
    /// # Errors
    /// `BadRequest` for a malformed line, a file that ends without its trailer, or a trailer
    /// whose count differs from the entries read.
    pub fn next_entry(&mut self) -> Result<Option<SnapshotEntry>> {
        if self.done {
            return Ok(None);
        }
        let Some(text) = self.lines.next().transpose().map_err(io_error)? else {
            return Err(bad(&format!(
                "the snapshot ends after {} objects without its trailer: it is cut off",
                self.read
            )));
        };
        if let Ok(line) = serde_json::from_str::<OwnedLine>(&text) {
            self.read += 1;
            return Ok(Some(SnapshotEntry {
                key: line.key,
                mod_revision: line.mod_revision,
                data: line.object.get().as_bytes().to_vec(),
            }));
        }
        match serde_json::from_str::<Trailer>(&text) {
            Ok(t) if t.objects == self.read => {
                self.done = true;
                Ok(None)
            }
            Ok(t) => Err(bad(&format!(
                "the snapshot's trailer counts {} objects, the file holds {}",
                t.objects, self.read
            ))),
            Err(_) => Err(bad(&format!("line {} is malformed", self.read + 2))),
        }
    }

    /// The number of entries read so far.
    pub fn objects(&self) -> u64 {
        self.read
    }
}

fn bad(message: &str) -> StorageError {
    StorageError::BadRequest(format!("snapshot: {message}"))
}

fn io_error(e: std::io::Error) -> StorageError {
    StorageError::BadRequest(format!("snapshot: reading it failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, rev: u64) -> SnapshotEntry {
        SnapshotEntry {
            key: key.into(),
            mod_revision: rev,
            data: br#"{"metadata":{"name":"x"}}"#.to_vec(),
        }
    }

    fn file(entries: &[SnapshotEntry], trailer: Option<u64>) -> Vec<u8> {
        let mut out = header_line(9);
        for e in entries {
            out.extend(entry_line(e).unwrap());
        }
        if let Some(n) = trailer {
            out.extend(trailer_line(n));
        }
        out
    }

    #[test]
    fn entries_round_trip_and_the_trailer_is_checked() {
        let entries = [entry("/a/x", 3), entry("/b/y", 7)];
        let bytes = file(&entries, Some(2));
        let mut reader = SnapshotReader::new(&bytes[..]).unwrap();
        assert_eq!(reader.revision, 9);
        assert_eq!(reader.next_entry().unwrap(), Some(entries[0].clone()));
        assert_eq!(reader.next_entry().unwrap(), Some(entries[1].clone()));
        assert_eq!(reader.next_entry().unwrap(), None);

        let cut = file(&entries, None);
        let mut reader = SnapshotReader::new(&cut[..]).unwrap();
        reader.next_entry().unwrap();
        reader.next_entry().unwrap();
        let err = reader.next_entry().unwrap_err().to_string();
        assert!(err.contains("cut off"), "{err}");

        let miscounted = file(&entries, Some(3));
        let mut reader = SnapshotReader::new(&miscounted[..]).unwrap();
        reader.next_entry().unwrap();
        reader.next_entry().unwrap();
        assert!(reader.next_entry().is_err());
    }

    #[test]
    fn other_files_are_refused() {
        assert!(SnapshotReader::new(&b""[..]).is_err());
        assert!(SnapshotReader::new(&b"{\"kind\":\"List\"}\n"[..]).is_err());
        let newer = b"{\"kind\":\"StrategyHostSnapshot\",\"formatVersion\":2,\"revision\":1}\n";
        let err = SnapshotReader::new(&newer[..]).err().unwrap().to_string();
        assert!(err.contains("newer"), "{err}");
        let not_json = SnapshotEntry {
            key: "/k".into(),
            mod_revision: 2,
            data: vec![0xff],
        };
        assert!(entry_line(&not_json).is_err());
    }
}
