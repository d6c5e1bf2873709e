//! Files compressed whole at test time, as distributions ship kernel
//! modules (`.ko.xz` on Debian sid, `.ko.zst`, `.ko.gz`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The codecs: tool, Debian package, file extension.
pub const CODECS: [(&str, &str, &str); 3] = [
    ("xz", "xz-utils", "xz"),
    ("zstd", "zstd", "zst"),
    ("gzip", "gzip", "gz"),
];

/// `file` compressed with `tool` into `dir` as `NAME.EXT`.
pub fn compress(tool: &Path, file: &Path, dir: &Path, ext: &str) -> PathBuf {
    let name = file.file_name().expect("name").to_string_lossy();
    let out = dir.join(format!("{name}.{ext}"));
    let to = std::fs::File::create(&out).expect("create");
    let st = Command::new(tool)
        .arg("-c")
        .arg(file)
        .stdout(Stdio::from(to))
        .status()
        .expect("run the compressor");
    assert!(st.success(), "{} -c {}", tool.display(), file.display());
    out
}
