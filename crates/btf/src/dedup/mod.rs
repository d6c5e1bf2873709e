//! BTF deduplication: libbpf's `btf__dedup` algorithm (libbpf 1.1), in our
//! own code, giving the same bytes but where this comment says otherwise.
//!
//! # The problem
//!
//! A compiler or pahole describes types one compilation unit (CU) at a time.
//! Concatenated, the descriptions of a kernel repeat `int`, `struct page` and
//! thousands of others once per CU that uses them, and they are not even
//! equal copies: a CU that only sees `struct S;` has a forward declaration
//! (FWD) where another CU has the full struct. Types also form cycles
//! (`struct list_head { struct list_head *next, *prev; }`), so "equal"
//! cannot be decided by comparing referenced ids bottom-up. Dedup keeps one
//! representative of each type, resolves FWDs to the struct or union they
//! stand for where that is unambiguous, and rewrites every reference, losing
//! nothing.
//!
//! # The shape of the algorithm
//!
//! Every type id gets an entry in `map`: the id of its canonical
//! representative, itself if it is one. Canonical types are also entered in a
//! candidate table under a hash of their signature (kind, name, size, and the
//! fields that do not refer to other types); a new type is compared only with
//! the candidates under its hash, in the exact order libbpf's hash map gives
//! them (see `table.rs`: when several candidates would match, the first one
//! wins, so the order is part of the output). The passes, in order:
//!
//! 1. Strings (`strings.rs`). Every referenced string is kept once, in order
//!    of first reference; after this pass equal strings have equal offsets,
//!    so every later comparison of names is a comparison of integers.
//!
//! 2. Primitive types: INT, FLOAT, FWD, ENUM and ENUM64 refer to nothing, so
//!    equal means equal fields. Enums have one twist: an enum with no values
//!    is a forward-declared enum and matches any enum or enum64 of its name
//!    whatever its size. Enums are therefore hashed by name alone. A
//!    forward enum takes the first full enum of its name among the
//!    candidates; a full enum that finds a canonical forward enum of its name
//!    on its way takes that forward enum over (points it at itself) and goes
//!    on looking for an equal full enum.
//!
//! 3. Structs and unions, the heart of it. A struct is hashed without the ids
//!    its members refer to (they are not final yet). For each candidate under
//!    its hash that is shallowly equal (name, size, member names and
//!    offsets), the two type graphs are walked side by side, depth first,
//!    from the new struct (the "candidate" side) and the canonical one. Each
//!    pair of types visited is recorded in a hypothetical map, canonical id
//!    -> candidate id. A pair is fine when both ids already resolve to the
//!    same canonical type, or when the canonical id is already hypothetically
//!    mapped to this very candidate id (that is how cycles close); it is a
//!    contradiction when the canonical id is already mapped to a different
//!    type, unless the two are identical arrays or identical structs (compilers
//!    sometimes emit the same array or struct twice inside one CU). Otherwise
//!    the pair is recorded and compared structurally (kind, name and the
//!    non-id fields), then its referenced types are visited in order. A FWD
//!    is compatible with a struct or union of the same name and matching
//!    kind; FWDs are followed to what they resolve to on the canonical side
//!    only. If the walk finds no contradiction, the graphs are equivalent and
//!    the hypothetical map is merged into `map`: FWDs on either side are
//!    pointed at the struct they met, and structs of the candidate graph are
//!    mapped to their counterparts when those are already canonical (only a
//!    shortcut for later). In split BTF the base is immutable: if the only way
//!    to be equivalent is to resolve a FWD of the base, the base FWD is still
//!    pointed at the struct (so that the split part's FWDs follow), but the
//!    two structs are not merged.
//!
//!    One shortcut that libbpf lacks keeps the walks linear in practice.
//!    The canonical graph is a patchwork: `struct A` may be canonical from
//!    one CU and `struct B` from another, each with its own copy of, say,
//!    `struct C *`. A new CU's single `struct C *` is then met twice in one
//!    walk, paired with each copy, and libbpf walks what it points to twice
//!    (on a kernel, about half of all pairs). Pairs recorded by a walk that
//!    succeeded are equivalent, and a union-find (`proven`) keeps them as
//!    classes. A pair whose candidate this walk already paired with a type
//!    of the canonical one's class is then skipped, subtree and all: its
//!    walk could only repeat the one already under way. Walks that needed a
//!    FWD or a forward enum (compatible, not equal) are not entered, so a
//!    class holds only types equal down to their references. libbpf can
//!    call a skipped pair (or one under it) a contradiction, when the
//!    candidate CU holds two copies of a type and both meet one canonical
//!    type; here the struct merges (test
//!    `a_pair_proven_by_an_earlier_walk_is_not_walked_again`). That makes
//!    fewer duplicates, never more. The encoder's output for Debian's
//!    vmlinux and modules is byte for byte what it was without the
//!    shortcut, and the tests against libbpf's dedup still get its bytes.
//!
//! 4. Forward declarations left over: a FWD that no struct walk resolved is
//!    pointed at the struct or union of its name and kind if exactly one
//!    canonical struct or union has that name.
//!
//! 5. Reference types: PTR, TYPEDEF, CONST, VOLATILE, RESTRICT, TYPE_TAG,
//!    ARRAY, FUNC, FUNC_PROTO and DECL_TAG. Everything they can end at is
//!    final now, and in C a cycle always passes through a struct, so each
//!    reference type is resolved depth first: first the types it refers to
//!    (rewriting its ids to their canonical ones), then the type itself is
//!    hashed with those ids and compared exactly with its candidates. A cycle
//!    of reference types alone is an error, as in libbpf. VAR and DATASEC are
//!    never merged: each is canonical.
//!
//!    Go is not C: its types can form cycles of typedefs and function
//!    prototypes alone (`type F func() F`), which libbpf 1.1 refuses.
//!    libbpf 1.7 (November 2025, "Fix BTF dedup to support recursive typedef
//!    definitions", with the base-hash fix of April 2026 in 1.8) moved
//!    TYPEDEFs from this pass to pass 3: a typedef is hashed by name and
//!    info only and made equal to a candidate typedef by the same graph
//!    walk as a struct, in id order among the structs. That changes which
//!    of several equal typedefs becomes canonical, hence the output bytes,
//!    so [`Rules::Libbpf1_1`] is kept as the default and a cycle of
//!    reference types makes [`dedup`] run again by [`Rules::Libbpf1_8`]:
//!    BTF that libbpf 1.1 deduplicates comes out as from libbpf 1.1, BTF
//!    that only newer libbpf takes comes out as from libbpf 1.8.
//!
//! 6. Compaction: canonical types keep their relative order and get
//!    consecutive ids; all others are dropped.
//!
//! 7. Remapping: every id in a kept type is replaced by the new id of its
//!    canonical type (following FWD resolutions).
//!
//! Each pass has its file: `strings.rs` (1), `primitives.rs` (2), `equiv.rs`
//! and `structs.rs` (3, 4), `references.rs` (5), `compaction.rs` (6, 7); the
//! hashes and equalities that compare types are in `signature.rs`.
//!
//! Split BTF: the base's types are entered first as candidates that are
//!    already canonical (`map[id] = id`), so a split type equal to a base type
//!    maps to the base id, and the base's ids and strings are never changed.
//!
//! Passes 2 to 4 never look at FUNCs, DECL_TAGs or DATASECs, so an encoder
//! may run them before it has added those ([`Appending`], `appending.rs`).
//!
//! # Where we depart from libbpf: the base's representation
//!
//! A module's split BTF is often made by another encoder than its base
//! (a distribution's vmlinux BTF by pahole 1.24 or 1.32, the module by
//! btfkit), and two encoders describe one C type differently. libbpf then
//! re-emits the type in the split part, and with it every type that
//! reaches it: over a pahole 1.32 base, `struct task_struct` and about 150
//! other vmlinux types in every module. The verifier matches kfunc and
//! struct_ops arguments by type, so such a copy is not just bytes. When the
//! walk of pass 3 compares an own type with a *base* type, two more
//! equivalences hold, and the own type then takes the base's type,
//! whatever its representation:
//!
//! - An array nest and a flat array of the same number of the same
//!   elements: `T[a][b]` (pahole >= 1.25: an ARRAY of an ARRAY) against
//!   `T[a*b]` (pahole 1.24: one ARRAY), or any two nests of one total. The
//!   invariant: the base's array has the same size (count times element
//!   size) and puts every element at the same offset, so the struct that
//!   holds it has the same layout member for member. The index types are
//!   not compared (they say nothing of the layout). A base array met again
//!   in the walk, paired already with one own array, takes another own
//!   array of the same flat shape too (two base structs share the base's
//!   `T[a*b]` where the module has `T[a][b]` in one and `T[a*b]` in the
//!   other): by this rule both are the base's array.
//! - A base FWD against an own full struct or union of its name (libbpf
//!   sets `hypot_adjust_canon` and refuses, as the base cannot change):
//!   the base described the struct only by declaration, the module saw its
//!   definition. A FWD is reached only through pointers (it has no size),
//!   so the base's type that holds the pointer has the same layout. The own
//!   definition stays in the split part for the module's types that use it.
//!
//! A walk that needed one of these is not exact (it enters no `proven`
//! class), and when its root is a base type, every own type it paired with
//! a base type of the same kind takes that base type at once
//! (`map_to_base`), pointers, typedefs, arrays and prototypes included:
//! pass 5 would look for an *equal* base type and find none where the
//! representations differ. Own types paired with a base FWD keep their
//! definition. A walk between own types, all of a non-split dedup
//! (vmlinux) and split BTF whose base was made by the same rules are
//! unchanged, byte for byte (the tests against libbpf).
//!
//! # Where we depart from libbpf: FUNCs tied to addresses
//!
//! btfkit ties a FUNC to the function instances it describes with DECL_TAGs
//! named `addr=0x<address>` (component_idx -1). libbpf would merge two
//! static FUNCs with the same name and prototype from two CUs into one, and
//! both address tags would then point at that one FUNC: a BPF program
//! attaching by BTF id could no longer say which instance it means, which is
//! the very ambiguity the tags are there to remove (seed 004). So here the set
//! of `addr=` tags of a FUNC is part of its identity: FUNCs merge only when
//! name, linkage, prototype and address tags are all equal, and since tags
//! on different FUNCs differ in their target, no tag is ever dropped. BTF
//! without `addr=` tags (all BTF that compilers and released paholes write)
//! deduplicates exactly as with libbpf. Other tags (`bpf_kfunc`, source
//! annotations) describe a function rather than pick an instance, and keep
//! libbpf's behaviour.
//!
//! # Robustness
//!
//! libbpf assumes valid input; we check every referenced id first and return
//! an error naming the type instead of reading out of bounds, bound the walks
//! that could loop forever on corrupt input, and use explicit stacks rather
//! than recursion for the graph walks, whose depth the input decides.

mod appending;
mod compaction;
mod equiv;
mod primitives;
mod references;
mod signature;
mod strings;
mod structs;
pub(crate) mod table;

use std::hash::BuildHasher;
use std::sync::{Arc, OnceLock};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::format::*;
use crate::types::*;
use crate::{addr_tag, Btf, Error, Result};
use primitives::EnumIndex;
use references::has_ref_cycle;
use signature::*;
use table::{BaseEntries, CandTable};

pub use appending::Appending;

/// Options of the deduplication.
#[derive(Clone, Debug, Default)]
pub struct DedupOptions {
    /// Keep the own string section as it is instead of pass 1. libbpf does
    /// this for a BTF it built itself with `btf__new_empty` and
    /// `btf__add_*` (as pahole does): such strings are already unique, and
    /// their order is the order in which they were added. Set it to match
    /// pahole's output from a BTF built with [`Btf::add_str`]; the strings
    /// must then really be unique, or equal names will not compare equal.
    pub keep_strings: bool,
    /// Whose rules decide. The default, [`Rules::Libbpf1_1`], falls back to
    /// [`Rules::Libbpf1_8`] for input that only those deduplicate.
    pub rules: Rules,
    /// The base's part of the candidate table, shared by the dedups of
    /// split BTF over one base that are given the same options (an
    /// encoder's segment dedups and its final one). The default is a
    /// table of its own, made by the first dedup that needs it.
    pub base_table: BaseTable,
}

/// The dedup's candidates of a base BTF's types, for split BTF over it:
/// made once (about 100,000 types hashed for a vmlinux base) and shared by
/// every dedup whose options hold this table, or made ahead on a core the
/// caller has to spare ([`BaseTable::prepare`]). It holds the candidates of
/// the first base it is used with; a dedup over another base makes its own.
#[derive(Clone, Default)]
pub struct BaseTable(Arc<OnceLock<(BaseKey, Arc<BaseEntries>)>>);

/// Which base a [`BaseTable`] was made of: its address and type count.
type BaseKey = (usize, TypeId);

impl std::fmt::Debug for BaseTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaseTable")
            .field("made", &self.0.get().is_some())
            .finish()
    }
}

impl BaseTable {
    /// Makes the table of `base` now, when a dedup over it can share it:
    /// for a caller with a core to spare before its dedups.
    pub fn prepare(&self, base: &Btf) {
        if shareable(base) {
            self.entries(base);
        }
    }

    /// The candidates of `base` (its own base must be none): FUNCs hashed
    /// without address tags, typedefs by libbpf 1.1. A dedup that needs
    /// them while another thread makes them waits for that.
    fn entries(&self, base: &Btf) -> Arc<BaseEntries> {
        let key = (std::ptr::from_ref(base) as usize, base.type_count());
        let made = self.0.get_or_init(|| (key, Arc::new(base_entries(base))));
        if made.0 == key {
            made.1.clone()
        } else {
            Arc::new(base_entries(base))
        }
    }
}

/// Whether the hashes of `base`'s types depend on nothing but `base`: no
/// base of its own, no DECL_TAGs among its types.
fn shareable(base: &Btf) -> bool {
    base.base.is_none() && base.facts.is_some_and(|f| !f.decl_tags)
}

/// Which libbpf's dedup the output is byte-identical to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rules {
    /// libbpf 1.1; a cycle of reference types (possible only through a
    /// TYPEDEF, in Go) makes the whole dedup run again by libbpf 1.8's rules.
    #[default]
    Libbpf1_1,
    /// libbpf 1.8: TYPEDEFs deduplicated by the graph walk of structs.
    Libbpf1_8,
}

/// What a deduplication did, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DedupStats {
    /// Own types before the dedup.
    pub types_in: u32,
    /// Own types after.
    pub types_out: u32,
    /// Own string section bytes before the dedup.
    pub strings_in: u32,
    /// Own string section bytes after.
    pub strings_out: u32,
}

/// Deduplicates `btf`'s own types in place (its base, if any, is left alone
/// and types equal to base types are replaced by them).
pub fn dedup(btf: &mut Btf, opts: &DedupOptions) -> Result<()> {
    dedup_with_stats(btf, opts).map(|_| ())
}

/// [`dedup`], returning what it did. On error `btf` is left unchanged (the
/// types are copied first; [`dedup_owned`] does without the copy).
pub fn dedup_with_stats(btf: &mut Btf, opts: &DedupOptions) -> Result<DedupStats> {
    check_ids(btf)?;
    let d = match run(btf, btf.types.clone(), opts) {
        Err(Error::DedupCycle { .. }) if opts.rules == Rules::Libbpf1_1 => {
            run(btf, btf.types.clone(), &newer(opts))?
        }
        r => r?,
    };
    btf.set_contents(d.types, d.strings);
    Ok(d.stats)
}

/// `opts` with libbpf 1.8's rules, for the second try.
fn newer(opts: &DedupOptions) -> DedupOptions {
    DedupOptions {
        rules: Rules::Libbpf1_8,
        ..opts.clone()
    }
}

/// [`dedup`] of a BTF the caller gives away: its types are deduplicated in
/// place, without the copy that keeps [`dedup_with_stats`]'s input intact
/// on error (half of the allocations when most types are duplicates).
pub fn dedup_owned(btf: Btf, opts: &DedupOptions) -> Result<Btf> {
    dedup_owned_with_spare(btf, opts).map(|(btf, _)| btf)
}

/// [`dedup_owned`], also giving back the list that held the input's types:
/// empty, with its capacity (`encoder_hooks::dedup_owned_with_spare`).
pub(crate) fn dedup_owned_with_spare(
    mut btf: Btf,
    opts: &DedupOptions,
) -> Result<(Btf, Vec<Type>)> {
    check_ids(&btf)?;
    // The first try works on the types in place; only when it may fail on a
    // cycle is a copy kept for the second.
    let own = std::mem::take(&mut btf.types);
    let copy =
        (opts.rules == Rules::Libbpf1_1 && has_ref_cycle(btf.start_id, &own)).then(|| own.clone());
    let d = match (run(&btf, own, opts), copy) {
        (Err(Error::DedupCycle { .. }), Some(copy)) => run(&btf, copy, &newer(opts))?,
        (r, _) => r?,
    };
    btf.set_contents(d.types, d.strings);
    Ok((btf, d.spare))
}

/// What [`run`] makes.
struct Deduplicated {
    types: Vec<Type>,
    strings: Vec<u8>,
    stats: DedupStats,
    /// The list the input's types came in, emptied, with its capacity.
    spare: Vec<Type>,
}

/// The passes, on `types` (the own types of `btf`, which `btf` may no
/// longer hold: only its base, ids and strings are read).
fn run(btf: &Btf, mut types: Vec<Type>, opts: &DedupOptions) -> Result<Deduplicated> {
    let strings = if opts.keep_strings {
        btf.strings.to_vec()
    } else {
        strings::dedup_strings(btf, &mut types)?
    };
    let stats_in = (types.len() as u32, btf.strings.len() as u32);
    let mut d = Dedup::new(btf.base.as_deref(), btf.start_id, types, opts.rules);
    d.collect_func_tags(btf, &strings);
    d.prep(&opts.base_table)?;
    d.prim_types(0);
    d.struct_types()?;
    d.resolve_fwds();
    d.ref_types()?;
    let (types, spare) = d.compact_and_remap()?;
    let stats = DedupStats {
        types_in: stats_in.0,
        types_out: types.len() as u32,
        strings_in: stats_in.1,
        strings_out: strings.len() as u32,
    };
    Ok(Deduplicated {
        types,
        strings,
        stats,
        spare,
    })
}

/// Every id a type of `btf` or of its bases refers to must exist: the passes
/// below index by id. An object whose parser found its references in range
/// (a base read from a file: ~100,000 types per module encode) is not
/// walked again.
fn check_ids(btf: &Btf) -> Result<()> {
    let count = btf.type_count();
    let mut b = Some(btf);
    while let Some(cur) = b {
        let checked = cur.facts.is_some_and(|f| f.refs_valid);
        for (id, t) in cur.iter().filter(|_| !checked) {
            if let TypeData::Unknown { kind, .. } = t.data {
                // Its words may hold type ids that renumbering would break.
                return Err(Error::Dedup {
                    id,
                    reason: format!("has kind {kind}, whose type references are unknown"),
                });
            }
            let mut bad = None;
            t.for_each_ref(|r| {
                if r >= count && bad.is_none() {
                    bad = Some(r);
                }
            });
            if let Some(r) = bad {
                return Err(Error::Dedup {
                    id,
                    reason: format!(
                        "refers to type id {r}, but the last type is [{}]",
                        count - 1
                    ),
                });
            }
        }
        b = cur.base.as_deref();
    }
    Ok(())
}

/// The candidate table's part for base BTF `base`.
fn base_entries(base: &Btf) -> BaseEntries {
    let hashes = base.iter().filter_map(|(id, t)| Some((id, plain_hash(t)?)));
    BaseEntries::build(base.type_count(), hashes)
}

/// Not yet given a canonical type.
const UNPROCESSED: u32 = u32::MAX;
/// A reference type whose referenced types are being resolved.
const IN_PROGRESS: u32 = u32::MAX - 1;
/// Map values up to this are type ids, above it the two markers.
const MAX_NR_TYPES: u32 = 0x7fff_ffff;
/// How deep `identical_structs` follows embedded structs, and how many pairs
/// one comparison may visit. Real C nests a handful of levels and compares a
/// few dozen pairs; a cycle of structs embedding each other (impossible in C,
/// possible in a corrupt file) would otherwise recurse forever, and a chain
/// of structs each embedding the next one twice would take exponential time
/// (libbpf hangs on both).
const MAX_EMBED_DEPTH: u32 = 256;
const MAX_IDENTICAL_STEPS: u32 = 1 << 16;

fn is_mapped(v: u32) -> bool {
    v <= MAX_NR_TYPES
}

/// libbpf's `hash_combine` on `long`: wrapping 64-bit arithmetic.
fn combine(h: i64, v: u32) -> i64 {
    h.wrapping_mul(31).wrapping_add(i64::from(v))
}

fn kind_of(t: Option<&Type>) -> Kind {
    t.map_or(BTF_KIND_UNKN, Type::kind)
}

fn name_of(t: Option<&Type>) -> u32 {
    t.map_or(0, |t| t.name_off)
}

/// VAR, DATASEC and the location kinds: never merged, and never entered
/// in the table. (bpf-next's libbpf merges equal LOC_PARAMs and
/// LOC_PROTOs; keeping each is lossless.)
fn never_merged(kind: Kind) -> bool {
    matches!(
        kind,
        BTF_KIND_VAR | BTF_KIND_DATASEC | BTF_KIND_LOC_PARAM | BTF_KIND_LOC_PROTO | BTF_KIND_LOCSEC
    )
}

struct Dedup<'a> {
    rules: Rules,
    base: Option<&'a Btf>,
    start_id: TypeId,
    /// Own types, modified in pass 5 as their references are resolved.
    types: Vec<Type>,
    /// Canonical type of every id (base included), or a marker.
    map: Vec<u32>,
    /// Pass 3's hypothetical map, canonical id -> candidate id, and the ids
    /// set in it (to clear it quickly).
    hypot_map: Vec<u32>,
    hypot_list: Vec<TypeId>,
    /// The ids of `hypot_list` whose pair has a struct, union or FWD on
    /// either side, in the same order: merging any other pair changes
    /// nothing (see `merge_hypot_map`), and most pairs are the pointers,
    /// typedefs and qualifiers between structs.
    hypot_merge: Vec<TypeId>,
    /// The last equivalence needed a base FWD resolved: not a match by
    /// libbpf's rules, a match by the base's (see the module comment).
    hypot_adjust_canon: bool,
    /// The walk under way took a base type as equivalent by one of the
    /// rules libbpf lacks (the base's representation; module comment).
    hypot_base_rule: bool,
    /// Own arrays the walk under way took as a base array already paired
    /// with another own array (the base's rule): (own, base).
    hypot_extra: Vec<(TypeId, TypeId)>,
    /// Candidate id -> the canonical id it is paired with in the walk under
    /// way (the reverse of `hypot_map`), 0 if none. A walk that pairs a
    /// type with void fails, so 0 is never a partner that counts.
    hypot_cand: Vec<u32>,
    /// The walk under way met no FWD and no forward enum: every pair it
    /// records is equal down to its references, and may enter `proven`.
    hypot_exact: bool,
    /// Union-find of the pairs of successful exact walks: id -> parent
    /// (0: a class's root; void is in no successful walk). See the module
    /// comment. Both start zeroed, so that the pages of ids no walk meets
    /// (most of a module's base) are never touched.
    proven: Vec<u32>,
    table: CandTable,
    /// Own FWDs canonical after pass 2 and own structs and unions made
    /// canonical by pass 3, in id order: the only types pass 4 needs, which
    /// spares it two sweeps over all types. Neither set grows later (a
    /// canonical struct stays canonical, a FWD only ever gets mapped away).
    canon_fwds: Vec<TypeId>,
    canon_structs: Vec<TypeId>,
    enums: EnumIndex,
    /// FUNC id -> identifier of the set of `addr=` tags on it (absent: none).
    func_tags: FxHashMap<TypeId, u32>,
}

impl<'a> Dedup<'a> {
    /// A dedup of `types`, the own types of a BTF whose ids start at
    /// `start_id` over `base`. The FUNCs' address tags are not gathered yet
    /// ([`Dedup::collect_func_tags`]).
    fn new(base: Option<&'a Btf>, start_id: TypeId, types: Vec<Type>, rules: Rules) -> Dedup<'a> {
        let count = start_id as usize + types.len();
        let mut map = vec![UNPROCESSED; count];
        map[0] = 0;
        for id in 1..start_id {
            // The base is canonical by definition.
            map[id as usize] = id;
        }
        // VARs and DATASECs are made canonical by pass 2's sweep.
        Dedup {
            rules,
            base,
            start_id,
            types,
            map,
            hypot_map: vec![UNPROCESSED; count],
            hypot_list: Vec::new(),
            hypot_merge: Vec::new(),
            hypot_adjust_canon: false,
            hypot_base_rule: false,
            hypot_extra: Vec::new(),
            hypot_cand: vec![0; count],
            hypot_exact: true,
            proven: vec![0; count],
            // Not sized by `count`: only canonical types are entered, and
            // when most types are duplicates (the encoder's case) a table
            // sized for all of them is mostly empty memory that every
            // lookup misses the cache in. Growth costs less.
            table: CandTable::default(),
            canon_fwds: Vec::new(),
            canon_structs: Vec::new(),
            enums: EnumIndex::new(base.is_none()),
            func_tags: FxHashMap::default(),
        }
    }

    /// Makes room in the maps for the types added to `types` since
    /// [`Dedup::new`].
    fn grow_maps(&mut self) {
        let count = self.start_id as usize + self.types.len();
        self.map.resize(count, UNPROCESSED);
        self.hypot_map.resize(count, UNPROCESSED);
        self.hypot_cand.resize(count, 0);
        self.proven.resize(count, 0);
    }

    /// The type with this id; `None` for void.
    fn ty(&self, id: TypeId) -> Option<&Type> {
        if id >= self.start_id {
            self.types.get((id - self.start_id) as usize)
        } else {
            self.base?.type_by_id(id)
        }
    }

    /// Gathers the `addr=` DECL_TAGs on FUNCs (see the module comment),
    /// giving each distinct set of tag names a number. Names are compared by
    /// offset, which pass 1 has made unique per string; `strings` is the new
    /// own string section (own types already point into it).
    fn collect_func_tags(&mut self, btf: &Btf, strings: &[u8]) {
        let is_addr_tag = |off: u32| -> bool {
            if off < btf.start_str_off {
                btf.str_bytes(off).is_ok_and(addr_tag::has_prefix)
            } else {
                // No need to find the string's end: see `has_prefix`.
                strings
                    .get((off - btf.start_str_off) as usize..)
                    .is_some_and(addr_tag::has_prefix)
            }
        };
        let mut tags: Vec<(TypeId, u32)> = Vec::new();
        let end = self.start_id + self.types.len() as TypeId;
        // Bases whose parser saw no DECL_TAG of a whole type (every base
        // pahole or a compiler wrote) have no `addr=` tags to look for.
        let bases = std::iter::successors(btf.base.as_deref(), |b| b.base.as_deref());
        let mut first = 1;
        for b in bases.collect::<Vec<_>>().into_iter().rev() {
            if b.start_id != first || b.facts.is_none_or(|f| f.decl_tags) {
                break;
            }
            first = b.type_count();
        }
        for id in first..end {
            let Some(t) = self.ty(id) else { continue };
            if let TypeData::DeclTag {
                ty,
                component_idx: -1,
            } = t.data
            {
                if kind_of(self.ty(ty)) == BTF_KIND_FUNC && is_addr_tag(t.name_off) {
                    tags.push((ty, t.name_off));
                }
            }
        }
        tags.sort_unstable();
        tags.dedup();
        // Each FUNC's tag names are a run of `names`: a set is keyed by
        // its run, not by a vector of its own (one per FUNC with
        // `--addr-tags all`, ~70,000 on vmlinux).
        let names: Vec<u32> = tags.iter().map(|&(_, n)| n).collect();
        let mut sets: FxHashMap<&[u32], u32> = FxHashMap::default();
        let mut start = 0;
        for group in tags.chunk_by(|a, b| a.0 == b.0) {
            let run = &names[start..start + group.len()];
            start += group.len();
            let next = sets.len() as u32 + 1;
            let set = *sets.entry(run).or_insert(next);
            self.func_tags.insert(group[0].0, set);
        }
    }

    /// libbpf's `resolve_type_id`: follow `map` to a canonical type.
    fn resolve(&self, mut id: TypeId) -> TypeId {
        // Bounded, so that a cycle in the map (a bug, never valid input)
        // cannot hang us.
        for _ in 0..self.map.len() {
            let m = self.map[id as usize];
            if !is_mapped(m) || m == id {
                break;
            }
            id = m;
        }
        id
    }

    /// libbpf's `resolve_fwd_id`: a FWD's struct, if it has been resolved.
    fn resolve_fwd(&self, id: TypeId) -> TypeId {
        if kind_of(self.ty(id)) != BTF_KIND_FWD {
            return id;
        }
        let r = self.resolve(id);
        if kind_of(self.ty(r)) != BTF_KIND_FWD {
            r
        } else {
            id
        }
    }

    fn func_tag_set(&self, id: TypeId) -> u32 {
        self.func_tags.get(&id).copied().unwrap_or(0)
    }

    /// The hash of any type as it is entered in the table.
    fn hash_of(&self, id: TypeId, t: &Type) -> Option<i64> {
        match t.kind() {
            BTF_KIND_FUNC => Some(self.hash_func(id, t)),
            BTF_KIND_TYPEDEF if self.rules == Rules::Libbpf1_8 => Some(hash_typedef(t)),
            _ => plain_hash(t),
        }
    }

    /// Whether pass 3 deduplicates this kind: structs and unions, and with
    /// libbpf 1.8's rules typedefs.
    fn in_struct_pass(&self, kind: Kind) -> bool {
        matches!(kind, BTF_KIND_STRUCT | BTF_KIND_UNION)
            || (kind == BTF_KIND_TYPEDEF && self.rules == Rules::Libbpf1_8)
    }

    /// A FUNC's hash: libbpf's, mixed with its address tags if it has any.
    fn hash_func(&self, id: TypeId, t: &Type) -> i64 {
        match self.func_tag_set(id) {
            0 => hash_common(t),
            set => combine(hash_common(t), set),
        }
    }

    /// Split BTF: enter the base's types as canonical candidates.
    fn prep(&mut self, table: &BaseTable) -> Result<()> {
        if self.start_id <= 1 {
            return Ok(());
        }
        // A base's own table, shared by every dedup over it, when the
        // hashes of its types depend on nothing else: no tags of this BTF
        // on base FUNCs, libbpf 1.1's typedefs.
        let shared = match self.base {
            Some(b)
                if self.rules == Rules::Libbpf1_1
                    && b.start_id == 1
                    && b.type_count() == self.start_id
                    && shareable(b)
                    && self.func_tags.keys().all(|&id| id >= self.start_id) =>
            {
                Some(table.entries(b))
            }
            _ => None,
        };
        let base = match shared {
            Some(t) => t,
            None => {
                let mut hashes = Vec::new();
                for id in 1..self.start_id {
                    let Some(t) = self.ty(id) else {
                        return Err(Error::TypeId(id));
                    };
                    if let Some(h) = self.hash_of(id, t) {
                        hashes.push((id, h));
                    }
                }
                Arc::new(BaseEntries::build(self.start_id, hashes.into_iter()))
            }
        };
        self.table = CandTable::over_base(base);
        Ok(())
    }
}

/// A signed 32-bit INT named `name_off`, for the tests.
#[cfg(test)]
fn int_type(name_off: u32) -> Type {
    Type::new(
        name_off,
        TypeData::Int {
            size: 4,
            encoding: 1,
            offset: 0,
            bits: 32,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF with `int` and a pointer to it, parsed (so its ids were
    /// checked once), then a pointer to `added_to` added.
    fn parsed_then_added(added_to: TypeId) -> Btf {
        let mut b = Btf::new();
        let int = b.add_str("int");
        b.add_type(int_type(int));
        b.add_type(Type::new(0, TypeData::Ptr { ty: 1 }));
        let mut parsed = Btf::parse(&b.to_bytes()).unwrap();
        parsed.add_type(Type::new(0, TypeData::Ptr { ty: added_to }));
        parsed
    }

    /// What the parser vouched for stays true as types are added: an id
    /// past the last type, added later, is an error, not an index.
    #[test]
    fn ids_added_after_a_parse_are_checked() {
        let mut good = parsed_then_added(1);
        dedup(&mut good, &DedupOptions::default()).unwrap();
        assert_eq!(good.type_count(), 3);
        let mut bad = parsed_then_added(7);
        let e = dedup(&mut bad, &DedupOptions::default()).unwrap_err();
        assert!(e.to_string().contains("refers to type id 7"), "{e}");
    }

    /// The spare list is the input's, emptied: the next piece of an encoder
    /// fills it without allocating; the output is `dedup_owned`'s.
    #[test]
    fn dedup_owned_with_spare_gives_back_the_input_list() {
        let mut b = Btf::new();
        let int = b.add_str("int");
        for _ in 0..100 {
            b.add_type(int_type(int));
            b.add_type(Type::new(0, TypeData::Ptr { ty: 1 }));
        }
        let want = dedup_owned(b.clone(), &DedupOptions::default()).unwrap();
        let (got, spare) = dedup_owned_with_spare(b, &DedupOptions::default()).unwrap();
        assert_eq!(got.to_bytes(), want.to_bytes());
        assert_eq!(got.type_count(), 3);
        assert!(spare.is_empty());
        assert!(spare.capacity() >= 200, "{}", spare.capacity());
    }

    /// Three CUs of `struct c { int v; }` and `struct a { struct c *x, *y,
    /// *z; }`. The first has two copies of `struct c *` (x; y and z), the
    /// second one copy, which proves the two copies equivalent. The third
    /// has two copies the other way round (x and z; y): its walk meets its
    /// first copy again beside the first CU's second, and skips it as
    /// proven, where libbpf would see `*y`'s pair contradicted and keep the
    /// third `struct a`. Everything merges.
    #[test]
    fn a_pair_proven_by_an_earlier_walk_is_not_walked_again() {
        let mut b = Btf::new();
        let (int, c, v, a) = (
            b.add_str("int"),
            b.add_str("c"),
            b.add_str("v"),
            b.add_str("a"),
        );
        let fields = [b.add_str("x"), b.add_str("y"), b.add_str("z")];
        for copies in [[0, 1, 1], [0, 0, 0], [0, 1, 0]] {
            let i = b.add_type(int_type(int));
            let member = |name_off, ty, offset| Member {
                name_off,
                ty,
                offset,
            };
            let st = b.add_type(Type::new(
                c,
                TypeData::Struct {
                    size: 4,
                    members: vec![member(v, i, 0)].into(),
                },
            ));
            let ptrs = [
                b.add_type(Type::new(0, TypeData::Ptr { ty: st })),
                b.add_type(Type::new(0, TypeData::Ptr { ty: st })),
            ];
            let members = (0..3)
                .map(|k| member(fields[k], ptrs[copies[k]], 64 * k as u32))
                .collect();
            b.add_type(Type::new(a, TypeData::Struct { size: 24, members }));
        }
        dedup(&mut b, &DedupOptions::default()).unwrap();
        let kinds: Vec<Kind> = (1..b.type_count())
            .map(|id| b.type_by_id(id).unwrap().kind())
            .collect();
        assert_eq!(
            kinds,
            [BTF_KIND_INT, BTF_KIND_STRUCT, BTF_KIND_PTR, BTF_KIND_STRUCT]
        );
    }
}
