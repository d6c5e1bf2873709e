//! pahole's classic layout view (`btfkit pahole -C NAME FILE`): placeholder
//! until the layout view lands; `btfkit pahole` without -J calls `run`.

use std::path::PathBuf;
use std::process::ExitCode;

/// What `btfkit pahole` passes to the layout view.
pub struct LayoutArgs {
    pub file: PathBuf,
    /// --btf_base
    pub base: Option<PathBuf>,
    /// -C, comma list already split; empty = every struct/union
    pub classes: Vec<String>,
    /// -F btf|dwarf; None = pahole's default
    pub format: Option<String>,
    /// --sizes
    pub sizes: bool,
    /// -H/--holes N
    pub holes: Option<usize>,
}

pub fn run(args: LayoutArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "{}: layout view: not in this build (base {:?}, classes {:?}, format {:?}, sizes {}, holes {:?})",
        args.file.display(),
        args.base,
        args.classes,
        args.format,
        args.sizes,
        args.holes
    )
}
