//! The records that follow a type (members, enumerators, parameters, a
//! DATASEC's variables): a slice of their own, a range of an [`Arena`]'s
//! chunk, or read in place from a mapped type section.
//!
//! A module's encode reads the ~100,000 types of the vmlinux BTF it is
//! split over and never changes them. Copying each struct's members, each
//! enum's values and each prototype's parameters into an allocation of its
//! own made ~34,000 allocations per process, whose first touches were most
//! of the base's page faults. On disk these records are already arrays of
//! little-endian 32-bit words laid out as [`Member`], [`EnumValue`],
//! [`Param`] and [`VarSecinfo`] are in memory, so a type parsed from a
//! mapped section of the host's byte order points into the mapping
//! instead. Whoever changes such a list gets its own copy first.
//!
//! An encode makes millions of such lists, and its dedups drop most of
//! them again: one allocation each, then one `free` each, were a tenth of
//! the encode's time. An [`Arena`] lays the lists of many types end to end
//! in shared chunks: making a list is a copy and a reference count, and
//! dropping one is a reference count; a chunk's memory goes with its last
//! list. Each list owns its range of the chunk and changes it in place.
//!
//! [`Member`]: crate::types::Member
//! [`EnumValue`]: crate::types::EnumValue
//! [`Param`]: crate::types::Param
//! [`VarSecinfo`]: crate::types::VarSecinfo

use std::alloc::Layout;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

use crate::bytes::Bytes;

/// A record type that may be read in place from a type section.
///
/// # Safety
/// The type is `#[repr(C)]`, made only of `u32` fields (alignment 4, no
/// padding, every bit pattern valid), and its size is that of its record
/// on disk, whose words are its fields in order.
pub(crate) unsafe trait Record: Copy {}

/// Makes record types of the types named, which their module defines
/// (types.rs) so that this container knows none of them.
macro_rules! record {
    ($($t:ty),*) => {$(
        // SAFETY: each type named is `#[repr(C)]` of `u32` fields in the
        // order of the words of its record on disk (checked by the test
        // `record_sizes_are_those_on_disk` below).
        unsafe impl $crate::records::Record for $t {}
    )*};
}
pub(crate) use record;

/// What the records of a [`Records`] that is not a boxed slice of its own
/// lie in, kept alive by the lists that point into it.
pub(crate) enum Store {
    /// A type section, read only: its lists are shared by their clones,
    /// and copied before a change.
    Section(Bytes),
    /// An [`Arena`]'s chunk: each list owns its range of it, which no
    /// other list reads or writes.
    Chunk { ptr: NonNull<u8>, layout: Layout },
}

// SAFETY: a section's bytes are never written; a chunk is an allocation
// that only its lists use, each its own range, and that any thread may
// free.
unsafe impl Send for Store {}
// SAFETY: as above.
unsafe impl Sync for Store {}

impl Drop for Store {
    fn drop(&mut self) {
        if let Store::Chunk { ptr, layout } = *self {
            // SAFETY: `Arena::alloc` allocated the chunk with this layout,
            // and the store, dropped once, owns it.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) }
        }
    }
}

impl Store {
    /// The section's bytes (a chunk has none to read as a whole).
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Store::Section(b) => b,
            Store::Chunk { .. } => &[],
        }
    }
}

/// The records of one type: a slice that owns its allocation, its own
/// range of an [`Arena`]'s chunk, or one that points into a mapped type
/// section. Each holds what it points into. Either way the slice is a
/// pointer and a length, so that reading it costs what reading a vector
/// does (the dedup's inner loops read little else).
pub struct Records<T> {
    ptr: NonNull<T>,
    len: usize,
    /// The section or chunk `ptr` points into; `None`: `ptr` and `len`
    /// are a boxed slice that this owns.
    store: Option<Arc<Store>>,
}

// SAFETY: a `Records<T>` is a `Box<[T]>`, a range of a chunk that only it
// uses, or a shared, never written slice of a section; the `Arc` keeps
// the chunk or section alive. It is as `Send` and `Sync` as those are.
unsafe impl<T: Send> Send for Records<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Records<T> {}

impl<T> Records<T> {
    fn owned(b: Box<[T]>) -> Records<T> {
        let len = b.len();
        let ptr = NonNull::from(Box::leak(b)).cast::<T>();
        Records {
            ptr,
            len,
            store: None,
        }
    }

    /// `len` records at byte `offset` of the section `store`, read in
    /// place. `None` where that cannot be done soundly: records not 4-byte
    /// aligned in memory, or not all within the section. The caller checks
    /// that the section's byte order is the host's.
    pub(crate) fn in_place(store: &Arc<Store>, offset: usize, len: u32) -> Option<Records<T>>
    where
        T: Record,
    {
        let bytes = (len as usize).checked_mul(std::mem::size_of::<T>())?;
        let records = store.bytes().get(offset..offset.checked_add(bytes)?)?;
        let ptr = NonNull::from(records).cast::<T>();
        if !ptr.is_aligned() {
            return None;
        }
        Some(Records {
            ptr,
            len: len as usize,
            store: Some(Arc::clone(store)),
        })
    }

    /// Whether the records are a section's, shared and never written.
    fn in_section(&self) -> bool {
        matches!(self.store.as_deref(), Some(Store::Section(_)))
    }
}

impl<T> Drop for Records<T> {
    fn drop(&mut self) {
        if self.store.is_none() {
            // SAFETY: without a store, `ptr` and `len` are the boxed
            // slice that `owned` leaked, dropped once, here.
            drop(unsafe {
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    self.ptr.as_ptr(),
                    self.len,
                ))
            });
        }
    }
}

impl<T> Deref for Records<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` and `len` are an owned boxed slice, a range of a
        // chunk that `Arena::alloc` filled with `T`s and that only `self`
        // uses, or records that `in_place` checked lie in the section and
        // are aligned for `T`, where `T: Record` makes any words a valid
        // `T`; the chunk or section lives as long as `self` holds its
        // `Arc`, and a section is never written.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Clone> DerefMut for Records<T> {
    /// Records read in place are copied into an allocation of their own
    /// first: the section is never written.
    fn deref_mut(&mut self) -> &mut [T] {
        if self.in_section() {
            *self = Records::owned(self.to_vec().into_boxed_slice());
        }
        // SAFETY: an owned boxed slice or a range of a chunk, which only
        // `self` uses and `&mut self` borrows uniquely.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> From<Vec<T>> for Records<T> {
    fn from(v: Vec<T>) -> Records<T> {
        Records::owned(v.into_boxed_slice())
    }
}

impl<T> FromIterator<T> for Records<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Records<T> {
        Records::owned(iter.into_iter().collect())
    }
}

/// Lists of records laid end to end in chunks that the lists share (see
/// the module's comment). A list larger than a quarter of a chunk gets an
/// allocation of its own.
#[derive(Default)]
pub struct Arena {
    /// The chunk being filled, its address, and the bytes of it used.
    chunk: Option<(Arc<Store>, NonNull<u8>)>,
    used: usize,
}

// SAFETY: the arena writes only the unused part of its chunk, which no
// list points into.
unsafe impl Send for Arena {}

impl Arena {
    /// Bytes per chunk: the records of a few hundred kernel types.
    const CHUNK: usize = 64 << 10;
    /// The alignment of a chunk (of `u64`s), and the largest of a record
    /// it takes.
    const ALIGN: usize = std::mem::align_of::<u64>();

    /// An arena with no chunk yet: the first list allocates one.
    pub fn new() -> Arena {
        Arena::default()
    }

    /// A list of `items`, copied into the arena.
    pub fn alloc<T: Copy>(&mut self, items: &[T]) -> Records<T> {
        let size = std::mem::size_of_val(items);
        let align = std::mem::align_of::<T>();
        if items.is_empty() || size > Arena::CHUNK / 4 || align > Arena::ALIGN {
            return items.to_vec().into();
        }
        let mut at = self.used.next_multiple_of(align);
        if self.chunk.is_none() || at + size > Arena::CHUNK {
            self.chunk = Some(Arena::new_chunk());
            at = 0;
        }
        let Some((store, base)) = &self.chunk else {
            return items.to_vec().into();
        };
        // SAFETY: `at + size` is within the chunk, `at` a multiple of
        // `T`'s alignment from a base aligned to `ALIGN` >= it; no list
        // points at or past `used`, which this moves past the copy.
        let ptr = unsafe {
            let dst = base.as_ptr().add(at).cast::<T>();
            std::ptr::copy_nonoverlapping(items.as_ptr(), dst, items.len());
            NonNull::new_unchecked(dst)
        };
        self.used = at + size;
        Records {
            ptr,
            len: items.len(),
            store: Some(Arc::clone(store)),
        }
    }

    fn new_chunk() -> (Arc<Store>, NonNull<u8>) {
        let layout = Layout::new::<[u64; Arena::CHUNK / 8]>();
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            std::alloc::handle_alloc_error(layout)
        };
        (Arc::new(Store::Chunk { ptr, layout }), ptr)
    }
}

impl<T> Default for Records<T> {
    fn default() -> Records<T> {
        Records::owned(Box::default())
    }
}

impl<T: Clone> Clone for Records<T> {
    /// A section's records are shared; any others copied (a chunk's range
    /// has one owner).
    fn clone(&self) -> Records<T> {
        match &self.store {
            Some(store) if self.in_section() => Records {
                ptr: self.ptr,
                len: self.len,
                store: Some(Arc::clone(store)),
            },
            _ => Records::owned(self.to_vec().into_boxed_slice()),
        }
    }
}

impl<'a, T> IntoIterator for &'a Records<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T: Clone> IntoIterator for &'a mut Records<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl<T: PartialEq> PartialEq for Records<T> {
    fn eq(&self, other: &Records<T>) -> bool {
        **self == **other
    }
}

impl<T: Eq> Eq for Records<T> {}

impl<T: Hash> Hash for Records<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self).hash(state)
    }
}

impl<T: fmt::Debug> fmt::Debug for Records<T> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::*;
    use crate::types::{EnumValue, Member, Param, VarSecinfo};

    #[test]
    fn record_sizes_are_those_on_disk() {
        assert_eq!(std::mem::size_of::<Member>(), BTF_MEMBER_LEN);
        assert_eq!(std::mem::size_of::<EnumValue>(), BTF_ENUM_LEN);
        assert_eq!(std::mem::size_of::<Param>(), BTF_PARAM_LEN);
        assert_eq!(std::mem::size_of::<VarSecinfo>(), BTF_VAR_SECINFO_LEN);
        // As small as the vector it replaced: every type holds one.
        assert_eq!(
            std::mem::size_of::<Records<Member>>(),
            std::mem::size_of::<Vec<Member>>()
        );
    }

    #[test]
    fn in_place_reads_the_words_and_copies_on_change() {
        // A Vec<u8> is only byte-aligned (Miri places it anywhere): the
        // words start at its first 4-aligned byte.
        let mut words: Vec<u8> = Vec::with_capacity(3 + 32);
        let pad = words.as_ptr().align_offset(4);
        words.resize(pad, 0);
        words.extend(
            [0u32, 7, 1, 2, 3, 4, 5, 6]
                .iter()
                .flat_map(|w| w.to_ne_bytes()),
        );
        let section = Arc::new(Store::Section(Bytes::from(words)));
        let mut m = Records::<Member>::in_place(&section, pad + 8, 2).expect("aligned");
        let want = [
            Member {
                name_off: 1,
                ty: 2,
                offset: 3,
            },
            Member {
                name_off: 4,
                ty: 5,
                offset: 6,
            },
        ];
        assert_eq!(*m, want);
        assert!(Records::<Member>::in_place(&section, pad + 8, 3).is_none());
        assert!(Records::<Member>::in_place(&section, pad + 2, 1).is_none());
        m[0].ty = 9;
        assert!(m.store.is_none(), "changed records are a copy");
        assert_eq!(m[0].ty, 9);
        assert_eq!(
            section.bytes()[pad + 12..pad + 16],
            2u32.to_ne_bytes(),
            "the section is never written"
        );
    }

    #[test]
    fn arena_lists_own_their_ranges() {
        let mut arena = Arena::new();
        let member = |i: u32| Member {
            name_off: i,
            ty: i + 1,
            offset: 8 * i,
        };
        let members: Vec<Member> = (0..5).map(member).collect();
        // Lists of different record types, and enough of them to need
        // several chunks.
        let mut lists: Vec<Records<Member>> = (0..20_000)
            .map(|i| arena.alloc(&members[..i % 6]))
            .collect();
        let params = arena.alloc(&[Param { name_off: 3, ty: 4 }]);
        for (i, list) in lists.iter().enumerate() {
            assert_eq!(**list, members[..i % 6]);
        }
        // Each list is written in place, and only it changes.
        lists[1][0].ty = 99;
        assert!(lists[1].store.is_some(), "changed in the chunk");
        assert_eq!(lists[1][0].ty, 99);
        assert_eq!(*lists[7], members[..1]);
        assert_eq!(*params, [Param { name_off: 3, ty: 4 }]);
        // A clone of a chunk's list is a copy of its own.
        let mut copy = lists[2].clone();
        assert!(copy.store.is_none());
        copy[1].offset = 1;
        assert_eq!(lists[2][1].offset, 8);
        // A list too large for a chunk, and an empty one, hold no chunk.
        let big = vec![member(1); Arena::CHUNK / 4 / std::mem::size_of::<Member>() + 1];
        assert!(arena.alloc(&big).store.is_none());
        assert!(lists[0].store.is_none());
        // A chunk goes with its last list (and the arena's hold on it).
        let last = lists.pop().expect("a list");
        let store = Arc::clone(last.store.as_ref().expect("in a chunk"));
        drop((lists, last, params, arena));
        assert_eq!(Arc::strong_count(&store), 1);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot map a file")]
    fn a_file_is_read_in_place_and_as_in_memory() {
        let mut b = crate::Btf::new();
        let name = b.add_str("int");
        let int = b.add_type(crate::Type::new(
            name,
            crate::TypeData::Int {
                size: 4,
                encoding: 1,
                offset: 0,
                bits: 32,
            },
        ));
        let members = ["a", "b"]
            .iter()
            .enumerate()
            .map(|(i, n)| Member {
                name_off: b.add_str(n),
                ty: int,
                offset: 32 * i as u32,
            })
            .collect();
        let name = b.add_str("s");
        b.add_type(crate::Type::new(
            name,
            crate::TypeData::Struct { size: 8, members },
        ));
        let bytes = b.to_bytes();
        let file = tempfile::NamedTempFile::new().expect("a temporary file");
        std::fs::write(file.path(), &bytes).expect("written");
        let loaded = crate::load_file(file.path(), None).expect("loads");
        let parsed = crate::Btf::parse(&bytes).expect("parses");
        assert_eq!(loaded.own_types(), parsed.own_types());
        match &loaded.own_types()[1].data {
            crate::TypeData::Struct { members, .. } => {
                assert!(members.in_section(), "read in place")
            }
            other => panic!("not the struct: {other:?}"),
        }
    }
}
