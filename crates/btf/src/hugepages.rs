//! Transparent huge pages for large buffers that are filled at once.
//!
//! A process that encodes one module reads its base's ~100,000 types into
//! fresh memory: every 4 KiB page is a fault, and on a virtual machine a
//! fault costs microseconds (most of a small module's parse). Where the
//! kernel's THP mode is `madvise` (the default of many distributions), a
//! buffer that asks for huge pages is faulted in 2 MiB at a time.

const HUGE: usize = 2 << 20;

/// A vector for at least `min` elements, which the kernel backs with huge
/// pages where it can. glibc gives a large allocation its own mapping, 16
/// bytes into it; a mapping whose length is a multiple of 2 MiB is placed
/// on a 2 MiB boundary (Linux 6.7 and later), so the capacity is rounded up
/// to fill whole huge pages. Pages never touched cost nothing. A huge page
/// comes only from the first fault in its range, and the allocator wrote
/// its header into the first 2 MiB before the advice: those are collapsed
/// into a huge page at once (MADV_COLLAPSE, Linux 6.1 and later), which
/// copies one small page instead of faulting in 511 more.
pub fn vec<T>(min: usize) -> Vec<T> {
    let size = std::mem::size_of::<T>().max(1);
    let bytes = min.saturating_mul(size);
    if bytes < HUGE / 2 {
        return Vec::with_capacity(min);
    }
    // Room for the allocator's header in the last page.
    let mapped = bytes.saturating_add(64).div_ceil(HUGE).saturating_mul(HUGE);
    let v = Vec::with_capacity((mapped - 64) / size);
    advise(&v);
    v
}

/// Asks for huge pages under the 2 MiB-aligned part of the pages that hold
/// `v`'s capacity. A hint: where it does not apply, nothing changes.
fn advise<T>(v: &Vec<T>) {
    const PAGE: usize = 4096;
    let start = v.as_ptr() as usize;
    let Some(end) = v
        .capacity()
        .checked_mul(std::mem::size_of::<T>())
        .and_then(|n| start.checked_add(n))
    else {
        return;
    };
    // The allocator's header shares the first page: whole pages count.
    let first = (start / PAGE * PAGE).next_multiple_of(HUGE);
    let last = end.next_multiple_of(PAGE) / HUGE * HUGE;
    if first < last {
        // SAFETY: madvise(MADV_HUGEPAGE) changes no contents and no
        // mapping, only how the kernel backs the pages of the range, which
        // are mapped: they hold `v`'s buffer.
        unsafe {
            libc::madvise(
                first as *mut libc::c_void,
                last - first,
                libc::MADV_HUGEPAGE,
            );
        }
        if first == start / PAGE * PAGE && first + HUGE <= last {
            // SAFETY: as above; MADV_COLLAPSE copies the range's pages
            // (the allocator's header) into a huge page, contents kept.
            unsafe {
                libc::madvise(first as *mut libc::c_void, HUGE, libc::MADV_COLLAPSE);
            }
        }
    }
}

/// A zeroed array of `u32` for a table that is filled all over at once
/// (random writes: every page of it is touched). At 1 MiB and more it has
/// a mapping of its own, 2 MiB-aligned and advised for huge pages, with
/// no allocator header in it: the kernel's zeroed pages, no memset, and a
/// 2 MiB table costs one fault instead of 512 (~0.2 ms instead of ~0.8 ms
/// on a virtual machine). Smaller ones, or where mapping fails, are an
/// ordinary vector.
pub struct ZeroedWords(Words);

enum Words {
    Mapped {
        map: *mut libc::c_void,
        map_len: usize,
        len: usize,
    },
    Heap(Vec<u32>),
}

// SAFETY: the mapping is owned memory, as a Vec's buffer is: it may move
// to another thread with its owner.
unsafe impl Send for ZeroedWords {}
// SAFETY: shared references give only shared (read) access to the mapping.
unsafe impl Sync for ZeroedWords {}

impl ZeroedWords {
    /// `len` words (`u32`s, so `4 * len` bytes), all zero.
    pub fn new(len: usize) -> ZeroedWords {
        let bytes = len.saturating_mul(4);
        if bytes < HUGE / 2 {
            return ZeroedWords(Words::Heap(vec![0; len]));
        }
        match map_aligned(bytes.next_multiple_of(HUGE)) {
            Some((map, map_len)) => ZeroedWords(Words::Mapped { map, map_len, len }),
            None => ZeroedWords(Words::Heap(vec![0; len])),
        }
    }
}

/// `len` bytes (a multiple of 2 MiB) of fresh anonymous memory on a 2 MiB
/// boundary, advised for huge pages: more is mapped and the ends cut off.
fn map_aligned(len: usize) -> Option<(*mut libc::c_void, usize)> {
    let span = len.checked_add(HUGE)?;
    // SAFETY: a new private anonymous mapping; nothing else refers to it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let start = (p as usize).next_multiple_of(HUGE);
    let head = start - p as usize;
    let tail = span - head - len;
    // SAFETY: the cut ends and the advised range lie in the mapping made
    // above, which nothing has used yet.
    unsafe {
        if head > 0 {
            libc::munmap(p, head);
        }
        if tail > 0 {
            libc::munmap((start + len) as *mut libc::c_void, tail);
        }
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    Some((start as *mut libc::c_void, len))
}

impl std::ops::Deref for ZeroedWords {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        match &self.0 {
            // SAFETY: the mapping holds `len` u32s (zero until written),
            // page-aligned, and lives as long as `self`.
            Words::Mapped { map, len, .. } => unsafe {
                std::slice::from_raw_parts(map.cast::<u32>(), *len)
            },
            Words::Heap(v) => v,
        }
    }
}

impl std::ops::DerefMut for ZeroedWords {
    fn deref_mut(&mut self) -> &mut [u32] {
        match &mut self.0 {
            // SAFETY: as in `deref`; `&mut self` makes the access unique.
            Words::Mapped { map, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(map.cast::<u32>(), *len)
            },
            Words::Heap(v) => v,
        }
    }
}

impl Drop for ZeroedWords {
    fn drop(&mut self) {
        if let Words::Mapped { map, map_len, .. } = self.0 {
            // SAFETY: the mapping is ours and no reference to it outlives
            // `self`.
            unsafe { libc::munmap(map, map_len) };
        }
    }
}

impl Default for ZeroedWords {
    fn default() -> ZeroedWords {
        ZeroedWords(Words::Heap(Vec::new()))
    }
}

impl std::fmt::Debug for ZeroedWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ZeroedWords({} words)", self.len())
    }
}

impl Clone for ZeroedWords {
    fn clone(&self) -> ZeroedWords {
        let mut copy = ZeroedWords::new(self.len());
        copy.copy_from_slice(self);
        copy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_words_small_and_mapped_read_back_what_was_written() {
        // Below 1 MiB a vector; at 1 MiB and more a mapping of its own.
        for len in [0, 1, 1000, HUGE / 4 - 1, HUGE / 4, HUGE / 4 * 3 + 5] {
            let mut w = ZeroedWords::new(len);
            assert_eq!(w.len(), len);
            assert!(w.iter().all(|&x| x == 0), "{len} words start zeroed");
            for (i, x) in w.iter_mut().enumerate() {
                *x = i as u32 ^ 0x5a5a;
            }
            let copy = w.clone();
            drop(w);
            assert_eq!(copy.len(), len);
            assert!(copy
                .iter()
                .enumerate()
                .all(|(i, &x)| x == i as u32 ^ 0x5a5a));
        }
    }

    #[test]
    fn mapped_words_lie_on_a_huge_page_boundary() {
        let w = ZeroedWords::new(HUGE / 4 + 1);
        assert!(matches!(w.0, Words::Mapped { .. }), "{w:?} is mapped");
        assert_eq!(w.as_ptr() as usize % HUGE, 0);
    }

    #[test]
    fn huge_page_vectors_hold_at_least_what_was_asked() {
        for min in [0, 10, HUGE / 8, HUGE / 8 * 3] {
            let mut v: Vec<u64> = vec(min);
            assert!(v.capacity() >= min);
            v.extend(0..min as u64);
            assert_eq!(v.iter().sum::<u64>(), (0..min as u64).sum());
        }
    }
}
