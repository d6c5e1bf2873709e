//! Placeholder: libbpf's btf__dedup algorithm is being written here.

use crate::{Btf, Result};

/// Options of the deduplication.
#[derive(Clone, Debug, Default)]
pub struct DedupOptions {}

/// Deduplicates `btf`'s own types in place (its base, if any, is left alone
/// and types equal to base types are replaced by them).
pub fn dedup(_btf: &mut Btf, _opts: &DedupOptions) -> Result<()> {
    Ok(())
}
