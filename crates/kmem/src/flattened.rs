//! makedumpfile's flattened format (what QEMU writes for `kdump-*`): a
//! 4096-byte header ("makedumpfile", type, version, big-endian), then records
//! `{i64 offset; i64 size}` (big-endian) each followed by `size` bytes that
//! belong at `offset` of the real dump, ended by offset = size = -1.
//!
//! The records are indexed, not copied: [`Flattened::index`] maps each range
//! of the reassembled file to where its bytes are in the flattened file, a
//! later record overriding an earlier one where they overlap (makedumpfile
//! -R writes them in file order, so the last write wins there too).

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::file::Bytes;

/// The first bytes of a flattened file.
pub const SIGNATURE: &[u8] = b"makedumpfile\0";
const HEADER_LEN: u64 = 4096;

/// Reassembled-file offset -> (length, offset in the flattened file).
pub struct Flattened {
    map: BTreeMap<u64, (u64, u64)>,
    len: u64,
}

/// True when `head`, the first bytes of a file, is a flattened header.
pub fn is_flattened(head: &[u8]) -> bool {
    head.starts_with(SIGNATURE)
}

impl Flattened {
    /// Walks the records of a flattened file. A record that runs past the
    /// end of the file, or a negative offset or size other than the end
    /// marker, is [`Error::Truncated`] or [`Error::Corrupt`] at its file offset.
    pub fn index(bytes: &Bytes) -> Result<Flattened> {
        let mut map: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        let mut pos = HEADER_LEN;
        let mut len = 0u64;
        loop {
            let mut rec = [0u8; 16];
            bytes.read_at("flattened record header", pos, &mut rec)?;
            let off = i64::from_be_bytes(rec[..8].try_into().unwrap_or_default());
            let size = i64::from_be_bytes(rec[8..].try_into().unwrap_or_default());
            if off == -1 && size == -1 {
                break;
            }
            if off < 0 || size < 0 {
                return Err(Error::corrupt(
                    "flattened record header",
                    pos,
                    format!("offset {off} size {size}"),
                ));
            }
            let (off, size) = (off as u64, size as u64);
            let data = pos + 16;
            if data.checked_add(size).is_none_or(|e| e > bytes.len()) {
                return Err(Error::Truncated {
                    what: "flattened record",
                    offset: pos,
                    need: size + 16,
                    have: bytes.len().saturating_sub(pos),
                });
            }
            insert(&mut map, off, size, data);
            len = len.max(off + size);
            pos = data + size;
        }
        Ok(Flattened { map, len })
    }

    /// True when no record wrote anything.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The size of the reassembled file in bytes: the end of the
    /// highest-reaching record.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Reads the reassembled file. Ranges no record wrote are zeros (the
    /// reassembled file is sparse there); reading past its end is
    /// [`Error::Truncated`].
    pub fn read_at(
        &self,
        bytes: &Bytes,
        what: &'static str,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<()> {
        let end = offset.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.len) {
            return Err(Error::Truncated {
                what,
                offset,
                need: buf.len() as u64,
                have: self.len.saturating_sub(offset),
            });
        }
        let mut done = 0usize;
        while done < buf.len() {
            let a = offset + done as u64;
            let rest = buf.len() - done;
            let here = self
                .map
                .range(..=a)
                .next_back()
                .filter(|(&s, &(l, _))| a < s + l);
            match here {
                Some((&start, &(len, file_off))) => {
                    let n = ((start + len - a) as usize).min(rest);
                    bytes.read_at(what, file_off + (a - start), &mut buf[done..done + n])?;
                    done += n;
                }
                None => {
                    let next = self.map.range(a..).next().map_or(u64::MAX, |(&s, _)| s);
                    let n = (next.saturating_sub(a) as usize).min(rest);
                    buf[done..done + n].fill(0);
                    done += n;
                }
            }
        }
        Ok(())
    }
}

/// Puts `[off, off+size)` -> `data` into `map`, cutting what it overlaps.
fn insert(map: &mut BTreeMap<u64, (u64, u64)>, off: u64, size: u64, data: u64) {
    if size == 0 {
        return;
    }
    let end = off + size;
    // A range starting before `off` that reaches into it: keep its head, and
    // its tail if it also reaches past `end`.
    if let Some((&s, &(l, d))) = map.range(..off).next_back() {
        if s + l > off {
            map.insert(s, (off - s, d));
            if s + l > end {
                map.insert(end, (s + l - end, d + (end - s)));
            }
        }
    }
    let inside: Vec<u64> = map.range(off..end).map(|(&s, _)| s).collect();
    for s in inside {
        if let Some((l, d)) = map.remove(&s) {
            if s + l > end {
                map.insert(end, (s + l - end, d + (end - s)));
            }
        }
    }
    map.insert(off, (size, data));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_records_override_earlier_ones() {
        let mut m = BTreeMap::new();
        insert(&mut m, 0, 100, 1000);
        insert(&mut m, 10, 10, 5000);
        insert(&mut m, 95, 10, 6000);
        let v: Vec<_> = m.into_iter().collect();
        assert_eq!(
            v,
            vec![
                (0, (10, 1000)),
                (10, (10, 5000)),
                (20, (75, 1020)),
                (95, (10, 6000))
            ]
        );
    }
}
