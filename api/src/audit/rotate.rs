//! The audit log file, rotated as kube-apiserver's is (`--audit-log-maxsize`, `-maxbackup`,
//! `-maxage`): once the file would pass its size it is renamed to a timestamped backup
//! (`audit-2026-11-26T21-09-30.123.log` beside `audit.log`) and a new one is started; backups
//! beyond the count or older than the age are deleted. With `--audit-log-compress` a backup is
//! gzipped in the background (`....log.gz`; the plain backup is removed only once its
//! compressed copy is whole). A rotation happens only between lines, so every event stays
//! whole in one file, and none is lost across it.
//!
//! Written here rather than with a rotation crate: none keeps kube-apiserver's (lumberjack's)
//! names and both of its limits at once, and the writer thread needs only this much.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// lumberjack's size when `--audit-log-maxsize` is 0.
const DEFAULT_MAX_BYTES: u64 = 100 << 20;

/// When the log rotates and which backups are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogRotation {
    /// The size a file may reach before the next line goes to a new one.
    pub max_bytes: u64,
    /// Backups kept, newest first; 0 keeps them all.
    pub max_backups: usize,
    /// Backups older than this are deleted; `None` keeps them.
    pub max_age: Option<Duration>,
    /// Backups are gzipped.
    pub compress: bool,
}

impl LogRotation {
    /// From kube-apiserver's flags: megabytes (0: 100), a count (0: all), days (0: forever),
    /// whether to gzip backups.
    pub fn from_flags(
        max_size_mb: u64,
        max_backups: usize,
        max_age_days: u64,
        compress: bool,
    ) -> Self {
        Self {
            max_bytes: match max_size_mb {
                0 => DEFAULT_MAX_BYTES,
                mb => mb << 20,
            },
            max_backups,
            max_age: (max_age_days > 0).then(|| Duration::from_secs(max_age_days * 86_400)),
            compress,
        }
    }
}

impl Default for LogRotation {
    fn default() -> Self {
        Self::from_flags(0, 0, 0, false)
    }
}

/// The open log file; see the module documentation.
pub(super) struct RotatingFile {
    path: PathBuf,
    file: File,
    size: u64,
    /// Whether the last byte written ended a line (a rotation may happen here).
    at_line_start: bool,
    rotation: LogRotation,
    /// The time stamp of the latest backup this file made: the next one must be later.
    last_stamp: String,
}

impl RotatingFile {
    /// Opens `path` for appending (created with mode 0600, its directory too).
    pub(super) fn open(path: &Path, rotation: LogRotation) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        Ok(Self {
            path: path.to_path_buf(),
            file,
            size,
            at_line_start: true,
            rotation,
            last_stamp: String::new(),
        })
    }

    /// Renames the file to its backup name, starts a new one, and prunes the backups (after
    /// gzipping the new backup, in the background, when asked to).
    fn rotate(&mut self) -> io::Result<()> {
        self.file.flush()?;
        let backup = self.backup_name();
        std::fs::rename(&self.path, &backup)?;
        self.file = open_append(&self.path)?;
        self.size = 0;
        let backups = Backups {
            path: self.path.clone(),
            rotation: self.rotation,
        };
        if self.rotation.compress {
            std::thread::spawn(move || {
                if let Err(e) = gzip(&backup) {
                    tracing::warn!(error = %e, backup = %backup.display(), "could not compress an audit log backup");
                }
                backups.prune_logging();
            });
        } else {
            backups.prune_logging();
        }
        Ok(())
    }

    /// `<stem>-<UTC time>.<extension>` beside the file, unique: a second rotation within a
    /// millisecond waits for the next one, so names keep sorting oldest first. Whether a name
    /// is taken cannot be read from the directory alone: the backup of that name may have been
    /// gzipped (renamed `.gz`) in the background already, and reusing its name would overwrite
    /// the gzipped file, losing its lines.
    fn backup_name(&mut self) -> PathBuf {
        let (stem, ext) = self.stem_and_extension();
        loop {
            let now = time::OffsetDateTime::now_utc();
            let stamp = format!(
                "{:04}-{:02}-{:02}T{:02}-{:02}-{:02}.{:03}",
                now.year(),
                u8::from(now.month()),
                now.day(),
                now.hour(),
                now.minute(),
                now.second(),
                now.millisecond()
            );
            let candidate = self.path.with_file_name(format!("{stem}-{stamp}{ext}"));
            let gzipped = self.path.with_file_name(format!("{stem}-{stamp}{ext}.gz"));
            if stamp > self.last_stamp && !candidate.exists() && !gzipped.exists() {
                self.last_stamp = stamp;
                return candidate;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The file name's stem and its extension with the dot (`audit`, `.log`).
    fn stem_and_extension(&self) -> (String, String) {
        stem_and_extension(&self.path)
    }
}

/// The backups beside a log file, and which of them to keep.
struct Backups {
    path: PathBuf,
    rotation: LogRotation,
}

impl Backups {
    fn prune_logging(&self) {
        if let Err(e) = self.prune() {
            tracing::warn!(error = %e, "could not remove old audit log backups");
        }
    }

    /// Deletes backups beyond the count and older than the age. A backup is counted once
    /// while it is being gzipped: for a moment both `X.log` and `X.log.gz` exist, and
    /// counting them as two would delete one more (older) backup than the limit asks.
    fn prune(&self) -> io::Result<()> {
        let (stem, ext) = stem_and_extension(&self.path);
        let prefix = format!("{stem}-");
        let dir = match self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) => dir.to_path_buf(),
            None => PathBuf::from("."),
        };
        // Each backup by its plain name (timestamped names sort oldest first), with the files
        // that hold it: the plain one, the gzipped one, or both.
        let mut backups: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let plain = name.strip_suffix(".gz").unwrap_or(name);
            if name.starts_with(&prefix) && plain.ends_with(&ext) && path != self.path {
                backups.entry(plain.to_owned()).or_default().push(path);
            }
        }
        let excess = match self.rotation.max_backups {
            0 => 0,
            keep => backups.len().saturating_sub(keep),
        };
        let now = SystemTime::now();
        for (i, files) in backups.values().enumerate() {
            let too_old = self.rotation.max_age.is_some_and(|age| {
                files.iter().all(|file| {
                    std::fs::metadata(file)
                        .and_then(|m| m.modified())
                        .is_ok_and(|at| now.duration_since(at).is_ok_and(|d| d > age))
                })
            });
            if i < excess || too_old {
                for file in files {
                    match std::fs::remove_file(file) {
                        // The gzip in the background removed its plain copy meanwhile.
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        removed => removed?,
                    }
                }
            }
        }
        Ok(())
    }
}

/// The file name's stem and its extension with the dot (`audit`, `.log`).
fn stem_and_extension(path: &Path) -> (String, String) {
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let ext = path
        .extension()
        .map_or_else(String::new, |e| format!(".{}", e.to_string_lossy()));
    (stem, ext)
}

/// Replaces `backup` with `backup.gz`, written beside it first so that neither is ever partial.
fn gzip(backup: &Path) -> io::Result<()> {
    let mut name = backup.as_os_str().to_owned();
    name.push(".gz");
    let target = PathBuf::from(name);
    let mut partial = target.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    // Another rotation's pruning may have removed the backup already (it was past the count).
    let mut source = match File::open(backup) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        opened => opened?,
    };
    let written = (|| {
        let mut encoder =
            flate2::write::GzEncoder::new(open_append(&partial)?, flate2::Compression::default());
        io::copy(&mut source, &mut encoder)?;
        encoder.finish()?.sync_all()?;
        std::fs::rename(&partial, &target)
    })();
    if written.is_err() {
        // No half-written file is left behind to be mistaken for a backup.
        let _ = std::fs::remove_file(&partial);
    }
    written?;
    match std::fs::remove_file(backup) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        removed => removed,
    }
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.at_line_start
            && self.size > 0
            && self.size + buf.len() as u64 > self.rotation.max_bytes
        {
            self.rotate()?;
        }
        let written = self.file.write(buf)?;
        self.size += written as u64;
        if written > 0 {
            self.at_line_start = buf[written - 1] == b'\n';
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Rotation by size and count alone, with no age limit.
    fn by_size(max_bytes: u64, max_backups: usize, compress: bool) -> LogRotation {
        LogRotation {
            max_bytes,
            max_backups,
            max_age: None,
            compress,
        }
    }

    /// A fresh directory and the path of `audit.log` in it.
    fn log_in_tempdir() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        (dir, path)
    }

    /// `kept` is the end of `all`, whole lines in order, and at least `lines` of them.
    #[track_caller]
    fn assert_kept_last(all: &str, kept: &str, lines: usize) {
        assert!(
            all.ends_with(kept),
            "the kept lines are the last ones, in order"
        );
        assert!(kept.lines().count() >= lines);
    }

    fn files(dir: &Path) -> Vec<(String, String)> {
        let mut found: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect();
        found.sort();
        found
    }

    #[test]
    fn rotates_between_lines_keeps_every_line_and_prunes_by_count() {
        let (dir, path) = log_in_tempdir();
        let rotation = by_size(100, 3, false);
        let mut log = RotatingFile::open(&path, rotation).unwrap();
        let mut all = String::new();
        for i in 0..40 {
            let line = format!("{{\"event\":{i},\"padding\":\"xxxxxxxxxx\"}}\n");
            // Lines arrive in pieces, as a buffered writer hands them over.
            let (a, b) = line.as_bytes().split_at(7);
            log.write_all(a).unwrap();
            log.write_all(b).unwrap();
            all.push_str(&line);
        }
        log.flush().unwrap();
        let found = files(dir.path());
        assert_eq!(found.len(), 4, "the file and three backups: {found:?}");
        assert_eq!(found.last().unwrap().0, "audit.log");
        for (name, text) in &found {
            assert!(text.ends_with('\n'), "{name} ends between lines");
            if name != "audit.log" {
                assert!(
                    name.starts_with("audit-20") && name.ends_with(".log"),
                    "{name}"
                );
                assert!(text.len() <= 100 + 40, "{name}: {}", text.len());
            }
        }
        // What is kept is the newest part of the log, whole and in order.
        let kept: String = found.iter().map(|(_, t)| t.as_str()).collect();
        assert_kept_last(&all, &kept, 10);
    }

    #[test]
    fn kube_apiserver_flag_defaults() {
        let r = LogRotation::from_flags(0, 0, 0, false);
        assert_eq!(
            (r.max_bytes, r.max_backups, r.max_age),
            (100 << 20, 0, None)
        );
        let r = LogRotation::from_flags(5, 2, 7, true);
        assert!(r.compress);
        assert_eq!(r.max_bytes, 5 << 20);
        assert_eq!(r.max_age, Some(Duration::from_secs(7 * 86_400)));
    }

    #[test]
    fn compressed_backups_are_whole_gzip_files_pruned_like_plain_ones() {
        let (dir, path) = log_in_tempdir();
        let rotation = by_size(200, 2, true);
        let all = write_events(&path, rotation, 30);
        let kept = gzipped_log(dir.path(), Some(2));
        assert_kept_last(&all, &kept, 6);
    }

    #[test]
    fn a_backup_being_gzipped_counts_once_when_pruning() {
        let (dir, path) = log_in_tempdir();
        // The moment a gzip has written B's `.gz` and not yet removed its plain copy.
        for name in [
            "audit-2026-11-28T00-00-00.001.log.gz",
            "audit-2026-11-28T00-00-00.002.log",
            "audit-2026-11-28T00-00-00.002.log.gz",
            "audit.log",
        ] {
            std::fs::write(dir.path().join(name), b"{}\n").unwrap();
        }
        let backups = Backups {
            path,
            rotation: by_size(200, 2, true),
        };
        let names = || {
            files(dir.path())
                .into_iter()
                .map(|(n, _)| n)
                .collect::<Vec<_>>()
        };
        backups.prune().unwrap();
        assert_eq!(names().len(), 4, "two backups are within the limit");
        // One past the limit: the oldest goes, the plain and gzipped copies alike.
        let newest = dir.path().join("audit-2026-11-28T00-00-00.003.log");
        std::fs::write(newest, b"{}\n").unwrap();
        backups.prune().unwrap();
        assert_eq!(
            names(),
            [
                "audit-2026-11-28T00-00-00.002.log",
                "audit-2026-11-28T00-00-00.002.log.gz",
                "audit-2026-11-28T00-00-00.003.log",
                "audit.log"
            ]
        );
    }

    #[test]
    fn rotations_within_a_millisecond_lose_no_gzipped_line() {
        let (dir, path) = log_in_tempdir();
        let rotation = by_size(40, 0, true);
        // Every line rotates; a backup's name used to be reused once its gzip had renamed it,
        // and the second gzip then overwrote the first's lines.
        let all = write_events(&path, rotation, 300);
        assert_eq!(gzipped_log(dir.path(), None), all);
    }

    #[test]
    fn a_backup_name_gzipped_already_is_not_used_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut log =
            RotatingFile::open(&dir.path().join("audit.log"), LogRotation::default()).unwrap();
        let first = log.backup_name();
        // Its backup was gzipped in the background: the plain name is free again.
        let mut gzipped = first.clone().into_os_string();
        gzipped.push(".gz");
        std::fs::write(&gzipped, b"").unwrap();
        let second = log.backup_name();
        assert!(second > first, "{second:?} after {first:?}");
    }

    /// Writes `count` audit-like lines of ~50 bytes to a log at `path`; answers what it wrote.
    fn write_events(path: &Path, rotation: LogRotation, count: usize) -> String {
        let mut log = RotatingFile::open(path, rotation).unwrap();
        let mut all = String::new();
        for i in 0..count {
            let line = format!("{{\"event\":{i},\"padding\":\"xxxxxxxxxxxxxxxxxxxx\"}}\n");
            log.write_all(line.as_bytes()).unwrap();
            all.push_str(&line);
        }
        log.flush().unwrap();
        all
    }

    /// The log's text, backups (gzipped) first and oldest first, once compression in the
    /// background has left only gzipped backups (`backups` of them, when given).
    fn gzipped_log(dir: &Path, backups: Option<usize>) -> String {
        let names = || -> Vec<String> {
            let mut n: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            n.sort();
            n
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while names()
            .iter()
            .any(|n| n != "audit.log" && !n.ends_with(".log.gz"))
            || backups.is_some_and(|b| names().len() != b + 1)
        {
            assert!(std::time::Instant::now() < deadline, "{:?}", names());
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut text = String::new();
        for name in names() {
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            if name.ends_with(".gz") {
                flate2::read::GzDecoder::new(&bytes[..])
                    .read_to_string(&mut text)
                    .unwrap();
            } else {
                text.push_str(std::str::from_utf8(&bytes).unwrap());
            }
        }
        text
    }
}
