//! Little-endian reads that cannot panic: every read of file data goes
//! through these and returns `None` past the end.

pub(crate) fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(array(b, off)?))
}

pub(crate) fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(array(b, off)?))
}

pub(crate) fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(array(b, off)?))
}

pub(crate) fn array<const N: usize>(b: &[u8], off: usize) -> Option<[u8; N]> {
    b.get(off..off.checked_add(N)?)?.try_into().ok()
}

pub(crate) fn slice(b: &[u8], off: usize, len: usize) -> Option<&[u8]> {
    b.get(off..off.checked_add(len)?)
}

/// Rounds up to a multiple of 8, the alignment of every perf record field
/// that has a variable length (names, paths).
pub(crate) fn align8(n: usize) -> Option<usize> {
    Some(n.checked_add(7)? & !7)
}

/// A NUL-terminated string starting at `off`: the text (lossily decoded) and
/// the offset just past its NUL. `None` when no NUL comes before the end.
pub(crate) fn cstr_at(b: &[u8], off: usize) -> Option<(String, usize)> {
    let rest = b.get(off..)?;
    let nul = rest.iter().position(|&c| c == 0)?;
    let text = String::from_utf8_lossy(rest.get(..nul)?).into_owned();
    Some((text, off + nul + 1))
}

/// Text up to the first NUL (or the whole slice): fixed-size name fields.
pub(crate) fn fixed_str(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(b.get(..end).unwrap_or_default()).into_owned()
}

/// Converts a file or stream position to u64 for errors and reports.
pub(crate) fn pos(n: usize) -> u64 {
    n as u64
}
