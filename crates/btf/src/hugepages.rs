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
/// to fill whole huge pages. Pages never touched cost nothing. The first
/// 2 MiB keep small pages: the allocator wrote its header there before the
/// advice, and a huge page comes only from the first fault in its range.
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
    }
}
