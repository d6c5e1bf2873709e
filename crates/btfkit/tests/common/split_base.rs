//! Module BTF over a base that another encoder made: btfkit's split BTF
//! against that encoder's for the same module and base (shared by
//! split_base_pahole.rs and kernel_boot.rs).

use std::collections::HashSet;
use std::path::Path;

use btf::base_duplicates::{base_duplicates, same_named};
use btf::diff::{diff, Category, DiffOptions};
use btf::format::{BTF_KIND_DECL_TAG, BTF_KIND_FUNC};
use btf::Btf;

/// The bytes of `ours` that the peer has no counterpart for by design:
/// FUNCs whose names the peer's BTF has no FUNC of (instances of a name
/// beyond the kernel's pick, `init_module` aliases), `addr=` tags, and their
/// names; and the ARRAY per dimension of a multi-dimensional array beyond
/// the peer's (btfkit nests them as pahole 1.32 does, 1.24 flattens them).
pub fn extra_bytes(ours: &Btf, theirs: &Btf) -> usize {
    let nested = |b: &Btf| {
        b.iter()
            .filter(|(_, t)| match &t.data {
                btf::TypeData::Array(a) => b
                    .type_by_id(a.elem)
                    .is_some_and(|e| matches!(e.data, btf::TypeData::Array(_))),
                _ => false,
            })
            .count()
    };
    let arrays = nested(ours).saturating_sub(nested(theirs))
        * (btf::format::BTF_TYPE_LEN + btf::format::BTF_ARRAY_LEN);
    arrays + named_extra_bytes(ours, theirs)
}

/// The FUNCs and tags of [`extra_bytes`].
fn named_extra_bytes(ours: &Btf, theirs: &Btf) -> usize {
    let funcs: HashSet<&str> = theirs
        .iter()
        .filter(|(_, t)| t.kind() == BTF_KIND_FUNC)
        .filter_map(|(_, t)| theirs.name_of(t).ok())
        .collect();
    ours.iter()
        .filter_map(|(_, t)| {
            let name = ours.name_of(t).ok()?;
            let extra = (t.kind() == BTF_KIND_FUNC && !funcs.contains(name))
                || (t.kind() == BTF_KIND_DECL_TAG && name.starts_with("addr="));
            extra.then(|| t.encoded_len() + name.len() + 1)
        })
        .sum()
}

/// What [`compare`] found for one module.
pub struct Comparison {
    /// One line: bytes (without btfkit's extras) against the peer's, base
    /// types re-emitted by each, and where own types that only share a
    /// base type's name differ from it.
    pub report: String,
    /// Base types btfkit's split BTF re-emits (must be none).
    pub reemitted: Vec<String>,
    /// btfkit's bytes without its extra FUNCs and tags, and the peer's.
    pub bytes: (usize, usize),
    /// Named types (struct, union, enum, typedef) that differ between the
    /// two, with how (when `named_equal` was asked), but for the base types
    /// the peer copies.
    pub named_differences: Vec<String>,
}

/// btfkit's split BTF `ours` against the peer's `theirs`, both over the
/// vmlinux (or raw BTF) `base`; `named_equal`: also list the named types
/// that differ between the two.
pub fn compare(
    what: &str,
    ours: &Path,
    theirs: &Path,
    base: &Path,
    named_equal: bool,
) -> Comparison {
    let ours_btf = btf::load_file(ours, Some(base)).expect("btfkit's split BTF");
    let theirs_btf = btf::load_file(theirs, Some(base)).expect("the peer's split BTF");
    let reemitted: Vec<String> = base_duplicates(&ours_btf)
        .expect("compare with the base")
        .into_iter()
        .map(|d| d.name)
        .collect();
    let mut report = String::new();
    // Types of the module that only share a name with a base type differ
    // from it somewhere: say where, for the record.
    for (d, diff) in same_named(&ours_btf).expect("compare with the base") {
        if let Some(diff) = diff {
            report.push_str(&format!(
                "  {what}: own {} {} differs from the base's: {}: {}\n",
                d.kind, d.name, diff.path, diff.what
            ));
        }
    }
    let ours_len = std::fs::metadata(ours).expect("size").len() as usize;
    let theirs_len = std::fs::metadata(theirs).expect("size").len() as usize;
    let core = ours_len - extra_bytes(&ours_btf, &theirs_btf).min(ours_len);
    let peer_dups: HashSet<String> = base_duplicates(&theirs_btf)
        .expect("compare with the base")
        .into_iter()
        .map(|d| d.name)
        .collect();
    report.insert_str(
        0,
        &format!(
            "{what}: {ours_len} ({core}) / {theirs_len}; {} / {}\n",
            reemitted.len(),
            peer_dups.len()
        ),
    );
    let mut named_differences = Vec::new();
    if named_equal {
        let d = diff(&ours_btf, &theirs_btf, &DiffOptions::default());
        // A base type the peer copies into its split part is one more
        // definition of that name on its side: not a difference of types.
        let named = |c: Category, name: &str| {
            matches!(
                c,
                Category::Struct | Category::Union | Category::Enum | Category::Typedef
            ) && !peer_dups.contains(name)
        };
        for o in d.only_a.iter().filter(|o| named(o.category, &o.name)) {
            named_differences.push(format!("only btfkit: {:?} {}", o.category, o.name));
        }
        for o in d.only_b.iter().filter(|o| named(o.category, &o.name)) {
            named_differences.push(format!("only the peer: {:?} {}", o.category, o.name));
        }
        for c in d.changed.iter().filter(|c| named(c.category, &c.name)) {
            named_differences.push(format!("changed: {:?} {}", c.category, c.name));
        }
    }
    Comparison {
        report,
        reemitted,
        bytes: (core, theirs_len),
        named_differences,
    }
}
