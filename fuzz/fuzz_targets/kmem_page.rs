//! Arbitrary bytes as one stored kdump page: the first byte picks the codec
//! flags, the rest is the page. Every codec must fail cleanly on garbage.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, page)) = data.split_first() else {
        return;
    };
    let flags = [0, 1, 2, 4, 0x20, 3][usize::from(sel) % 6];
    if let Ok(out) = kmem::kdump::decompress(page, flags, 4096) {
        assert_eq!(out.len(), 4096);
    }
});
