//! The records that follow a type (members, enumerators, parameters, a
//! DATASEC's variables): a slice of their own, or read in place from a
//! mapped type section.
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
//! [`Member`]: crate::types::Member
//! [`EnumValue`]: crate::types::EnumValue
//! [`Param`]: crate::types::Param
//! [`VarSecinfo`]: crate::types::VarSecinfo

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

macro_rules! record {
    ($($t:ty),*) => {$(
        // SAFETY: each is `#[repr(C)]` of `u32` fields in the order of the
        // words of its record on disk (types.rs; checked by the test below).
        unsafe impl Record for $t {}
    )*};
}
record!(
    crate::types::Member,
    crate::types::EnumValue,
    crate::types::Param,
    crate::types::VarSecinfo
);

/// The records of one type: a slice that owns its allocation, or one that
/// points into a mapped type section and holds the mapping. Either way
/// the slice is a pointer and a length, so that reading it costs what
/// reading a vector does (the dedup's inner loops read little else).
pub struct Records<T> {
    ptr: NonNull<T>,
    len: usize,
    /// The section `ptr` points into; `None`: `ptr` and `len` are a boxed
    /// slice that this owns.
    section: Option<Arc<Bytes>>,
}

// SAFETY: a `Records<T>` is a `Box<[T]>` or a shared, never written slice
// of a section that the `Arc` keeps alive: it is as `Send` and `Sync` as
// those are.
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
            section: None,
        }
    }

    /// `len` records at byte `offset` of `section`, read in place. `None`
    /// where that cannot be done soundly: records not 4-byte aligned in
    /// memory, or not all within the section. The caller checks that the
    /// section's byte order is the host's.
    pub(crate) fn in_place(section: &Arc<Bytes>, offset: usize, len: u32) -> Option<Records<T>>
    where
        T: Record,
    {
        let bytes = (len as usize).checked_mul(std::mem::size_of::<T>())?;
        let records = section.get(offset..offset.checked_add(bytes)?)?;
        let ptr = NonNull::from(records).cast::<T>();
        if !ptr.is_aligned() {
            return None;
        }
        Some(Records {
            ptr,
            len: len as usize,
            section: Some(Arc::clone(section)),
        })
    }
}

impl<T> Drop for Records<T> {
    fn drop(&mut self) {
        if self.section.is_none() {
            // SAFETY: without a section, `ptr` and `len` are the boxed
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
        // SAFETY: `ptr` and `len` are an owned boxed slice, or records
        // that `in_place` checked lie in the section and are aligned for
        // `T`, where `T: Record` makes any words a valid `T`; the section
        // lives as long as `self` holds its `Arc` and is never written.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Clone> DerefMut for Records<T> {
    /// Records read in place are copied into an allocation of their own
    /// first: the section is never written.
    fn deref_mut(&mut self) -> &mut [T] {
        if self.section.is_some() {
            *self = Records::owned(self.to_vec().into_boxed_slice());
        }
        // SAFETY: an owned boxed slice, which `&mut self` borrows uniquely.
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

impl<T> Default for Records<T> {
    fn default() -> Records<T> {
        Records::owned(Box::default())
    }
}

impl<T: Clone> Clone for Records<T> {
    fn clone(&self) -> Records<T> {
        match &self.section {
            Some(section) => Records {
                ptr: self.ptr,
                len: self.len,
                section: Some(Arc::clone(section)),
            },
            None => Records::owned(self.to_vec().into_boxed_slice()),
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
        let words: Vec<u8> = [0u32, 7, 1, 2, 3, 4, 5, 6]
            .iter()
            .flat_map(|w| w.to_ne_bytes())
            .collect();
        let section = Arc::new(Bytes::from(words));
        let mut m = Records::<Member>::in_place(&section, 8, 2).expect("aligned");
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
        assert!(Records::<Member>::in_place(&section, 8, 3).is_none());
        assert!(Records::<Member>::in_place(&section, 2, 1).is_none());
        m[0].ty = 9;
        assert!(m.section.is_none(), "changed records are a copy");
        assert_eq!(m[0].ty, 9);
        assert_eq!(
            section[12..16],
            2u32.to_ne_bytes(),
            "the section is never written"
        );
    }

    #[test]
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
                assert!(members.section.is_some(), "read in place")
            }
            other => panic!("not the struct: {other:?}"),
        }
    }
}
