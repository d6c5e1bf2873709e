//! A BTF object's string section: its own bytes, or a range of a mapped
//! file.
//!
//! A module's encode reads the vmlinux BTF it is split over and never
//! changes it: the base's strings stay in the file's mapping (its pages are
//! shared with the page cache and with every other encode of the build)
//! instead of being copied. A writer that changes a mapped section gets its
//! own copy first.

use std::ops::Deref;
use std::sync::Arc;

#[derive(Clone, Debug, Default)]
pub(crate) struct Bytes {
    /// The bytes, unless `mapped` holds them.
    owned: Vec<u8>,
    /// A mapping of exactly the section.
    mapped: Option<Arc<memmap2::Mmap>>,
}

impl Bytes {
    pub(crate) fn mapped(map: memmap2::Mmap) -> Bytes {
        Bytes {
            owned: Vec::new(),
            mapped: Some(Arc::new(map)),
        }
    }

    /// The bytes, to change: a mapped section is copied first.
    pub(crate) fn to_mut(&mut self) -> &mut Vec<u8> {
        if let Some(map) = self.mapped.take() {
            self.owned = map.to_vec();
        }
        &mut self.owned
    }

    pub(crate) fn into_vec(mut self) -> Vec<u8> {
        std::mem::take(self.to_mut())
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(owned: Vec<u8>) -> Bytes {
        Bytes {
            owned,
            mapped: None,
        }
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.mapped {
            Some(map) => map,
            None => &self.owned,
        }
    }
}
