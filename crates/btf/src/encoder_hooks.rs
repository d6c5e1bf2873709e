//! Hooks for an encoder that builds BTF at scale (btfkit's dwarf2btf):
//! not for other users of this crate.
//!
//! They trade checks for speed: strings interned without looking in the
//! base (the dedup maps them later), types and strings installed with the
//! index their builder kept, and facts about the types that a dedup then
//! trusts without walking them again. Misused, they make a dedup fail in
//! ways ordinary use cannot (see [`set_built_contents`]). Build BTF with
//! [`crate::builder::Builder`] or [`Btf::add_type`] and [`Btf::add_str`]
//! instead.

pub use crate::hugepages::{vec as huge_page_vec, ZeroedWords};
pub use crate::strings::StringIndex;
use crate::{Btf, Type, TypeId};

/// Interns `s` among `btf`'s own strings without looking in the base: for
/// a builder whose types go through a dedup, whose string pass maps every
/// string the base holds to the base's offset, all of them in one pass
/// over the base's strings rather than with an index of the base for
/// lookups one at a time. Returns the string's global offset.
pub fn add_own_str(btf: &mut Btf, s: &str) -> u32 {
    btf.add_own_str(s)
}

/// [`crate::dedup::dedup_owned`] that also gives back the list that held
/// the input's types, emptied, with its capacity: an encoder that
/// deduplicates piece after piece fills the next piece into it, where a
/// new list would fault in every page of its memory again.
pub fn dedup_owned_with_spare(
    btf: Btf,
    opts: &crate::dedup::DedupOptions,
) -> crate::Result<(Btf, Vec<Type>)> {
    crate::dedup::dedup_owned_with_spare(btf, opts)
}

/// [`Btf::set_contents`] of types whose builder saw every id they refer to
/// as it wrote them, the largest being `max_ref`, with the index of
/// `strings` that the builder kept (it must index every string of
/// `strings`): a dedup does not walk the types again to check their ids,
/// and the next [`Btf::add_str`] does not index the strings again. A
/// `max_ref` below an id the types refer to makes the dedup panic rather
/// than fail.
pub fn set_built_contents(
    btf: &mut Btf,
    types: Vec<Type>,
    strings: Vec<u8>,
    index: StringIndex,
    max_ref: TypeId,
) {
    btf.set_built_contents(types, strings, index, max_ref)
}
