use std::path::PathBuf;

/// Why a symbol source could not be read. Every variant names the file, and
/// parse errors the line and byte offset, so that a bad line can be found.
/// A cause is part of the message, not also a chained source, so that
/// anyhow's `{:#}` says it once.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}:{line}: {reason} (byte offset {offset})")]
    Parse {
        path: PathBuf,
        line: usize,
        offset: usize,
        reason: String,
    },
    #[error(
        "{path}: all {count} addresses read as zero: the kernel hides them from this process. \
         It shows them when kernel.kptr_restrict is 0 and kernel.perf_event_paranoid <= 1 \
         (now {kptr_restrict} and {perf_event_paranoid}), or to a process with CAP_SYSLOG \
         while kptr_restrict <= 1; run as root, or lower these sysctls"
    )]
    AddressesHidden {
        path: PathBuf,
        count: usize,
        /// The sysctl values at the time of the error, "?" when unreadable.
        kptr_restrict: String,
        perf_event_paranoid: String,
    },
    #[error("{path}: not an ELF file with a symbol table: {reason}")]
    Elf { path: PathBuf, reason: String },
    /// ELF that the object crate does not read (`section`: where, if in one).
    #[error("{path}: not an ELF file with a symbol table: {}{error}", section.as_deref().map(|s| format!("{s}: ")).unwrap_or_default())]
    Object {
        path: PathBuf,
        section: Option<String>,
        error: object::read::Error,
    },
    #[error(
        "cannot compute the KASLR offset: neither _stext nor _text is in both {linked} and {live}"
    )]
    NoKaslrAnchor { linked: PathBuf, live: PathBuf },
}

impl Error {
    pub(crate) fn parse(path: &std::path::Path, buf: &[u8], offset: usize, reason: &str) -> Error {
        // Counting lines only here keeps the scanner's hot loop free of it.
        let line = buf
            .get(..offset)
            .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
            + 1;
        Error::Parse {
            path: path.to_owned(),
            line,
            offset,
            reason: reason.to_owned(),
        }
    }

    pub(crate) fn hidden(path: &std::path::Path, count: usize) -> Error {
        let sysctl = |name: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
                .map(|s| s.trim().to_owned())
                .unwrap_or_else(|_| "?".to_owned())
        };
        Error::AddressesHidden {
            path: path.to_owned(),
            count,
            kptr_restrict: sysctl("kptr_restrict"),
            perf_event_paranoid: sysctl("perf_event_paranoid"),
        }
    }
}
