//! A PE's last word to its launcher: why it is ending, in a file the launcher names
//! (`RSHMEM_REPORT`, in the launcher's private rendezvous directory).
//!
//! A file rather than a message on the rendezvous socket: writing it needs no launcher thread
//! to answer, so it works from a PE's watchdog or signal-handling thread while the PE's other
//! threads are stuck in the driver, and it is complete before the PE exits (it is written
//! aside and renamed into place), which is when the launcher reads it. The format is a kind
//! line and the text:
//!
//! ```text
//! failed            the program's own error (its Display)
//! hung              its watchdog saw no progress for the hang timeout; what was pending
//! ended             it was ended from outside (the launcher's SIGTERM); what was pending
//! ```

use std::io::{self, Write};
use std::path::Path;

/// What a PE said about its end, in the file `RSHMEM_REPORT` names: the program's error, a
/// hang, or being ended from outside. Written once, before the PE exits, and read by the
/// launcher after it exited (a file, so that a PE whose other threads are stuck can still
/// write it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeReport {
    /// Its program failed with this error, of its own accord.
    Failed(String),
    /// Its watchdog ended it: no progress for the hang timeout; the text says what was
    /// pending (`no progress for 30 s: kernel ...`).
    Hung(String),
    /// It was ended from outside (the launcher's SIGTERM, once another PE failed); the text
    /// says what it was doing then.
    Ended(String),
}

impl PeReport {
    fn kind(&self) -> &'static str {
        match self {
            PeReport::Failed(_) => "failed",
            PeReport::Hung(_) => "hung",
            PeReport::Ended(_) => "ended",
        }
    }

    /// The report's text.
    #[must_use]
    pub fn text(&self) -> &str {
        match self {
            PeReport::Failed(text) | PeReport::Hung(text) | PeReport::Ended(text) => text,
        }
    }

    /// Parses a report file's contents; `None` for anything else (a partly written or foreign
    /// file says nothing reliable).
    pub(crate) fn parse(contents: &str) -> Option<PeReport> {
        let (kind, text) = contents.split_once('\n').unwrap_or((contents, ""));
        let text = text.trim_end().to_string();
        match kind.trim() {
            "failed" => Some(PeReport::Failed(text)),
            "hung" => Some(PeReport::Hung(text)),
            "ended" => Some(PeReport::Ended(text)),
            _ => None,
        }
    }

    /// Reads the report at `path`, if the PE wrote one.
    pub(crate) fn read(path: &Path) -> Option<PeReport> {
        PeReport::parse(&std::fs::read_to_string(path).ok()?)
    }

    /// Writes this report to `path`, whole or not at all: the first report of a PE wins (a
    /// PE ending of its own accord is not turned into one ended by the launcher because the
    /// launcher's SIGTERM arrives while it exits).
    ///
    /// # Errors
    ///
    /// The file system's, e.g. if the launcher is gone and removed its directory.
    pub(crate) fn write(&self, path: &Path) -> io::Result<()> {
        let mut aside = path.as_os_str().to_owned();
        aside.push(".part");
        let aside = std::path::PathBuf::from(aside);
        {
            let mut file = std::fs::File::create(&aside)?;
            writeln!(file, "{}", self.kind())?;
            file.write_all(self.text().as_bytes())?;
        }
        // A hard link fails if the report exists: the first one stays.
        let linked = std::fs::hard_link(&aside, path);
        let _ = std::fs::remove_file(&aside);
        match linked {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip_and_the_first_one_stays() {
        let dir = std::env::temp_dir().join(format!("rshmem-report-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("pe1");
        assert_eq!(PeReport::read(&path), None);
        let failed = PeReport::Failed("kernel `k` failed on PE 1:\nline two".into());
        failed.write(&path).unwrap();
        PeReport::Ended("in synchronize".into())
            .write(&path)
            .unwrap();
        assert_eq!(PeReport::read(&path), Some(failed));
        assert_eq!(
            PeReport::parse("hung\nno progress for 5 s\n"),
            Some(PeReport::Hung("no progress for 5 s".into()))
        );
        assert_eq!(
            PeReport::parse("ended"),
            Some(PeReport::Ended(String::new()))
        );
        assert_eq!(PeReport::parse("garbage\ntext"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
