//! Placeholder: being written.

use crate::Btf;

/// Writes `btf` in bpftool's json format.
pub fn dump<W: std::io::Write>(_btf: &Btf, _out: &mut W) -> std::io::Result<()> {
    Err(std::io::Error::other("json dump is not built yet"))
}
