//! LZO1X decompression, bounds-checked at every step: a corrupt page must
//! give an error, and the crates at hand index out of bounds on one.
//!
//! The stream (lzo1x_decompress_safe in the kernel's lib/lzo) is a series of
//! instructions; `state` is how many literals the previous instruction
//! copied (0, 1-3, or 4 for "a literal run"), which decides what a byte
//! below 16 means. Matches copy `len` bytes from `distance` back in the
//! output; the 16..31 instruction with distance 0 ends the stream.

/// Decompresses `input` into exactly `expect` bytes.
pub fn decompress(input: &[u8], expect: usize) -> Result<Vec<u8>, String> {
    let mut s = Stream {
        input,
        ip: 0,
        out: Vec::with_capacity(expect),
        expect,
    };
    let mut state;
    let first = *input.first().ok_or("empty input")?;
    if first > 17 {
        s.ip = 1;
        let t = usize::from(first) - 17;
        s.literals(t)?;
        state = if t < 4 { t } else { 4 };
    } else {
        state = 0;
    }
    loop {
        let t = s.byte()?;
        if t < 16 && state == 0 {
            let n = if t == 0 { s.extend(15)? } else { t };
            s.literals(n + 3)?;
            state = 4;
            continue;
        }
        let Some((distance, len, next)) = s.instruction(t, state)? else {
            break;
        };
        s.copy_match(distance, len)?;
        s.literals(next)?;
        state = next;
    }
    if s.out.len() != expect {
        return Err(format!("{} bytes, expected {expect}", s.out.len()));
    }
    Ok(s.out)
}

/// The input read so far and the output written.
struct Stream<'a> {
    input: &'a [u8],
    ip: usize,
    out: Vec<u8>,
    expect: usize,
}

impl Stream<'_> {
    fn byte(&mut self) -> Result<usize, String> {
        let b = *self
            .input
            .get(self.ip)
            .ok_or("input ends inside an instruction")?;
        self.ip += 1;
        Ok(usize::from(b))
    }

    /// Zero bytes extend a length by 255 each, then one byte adds to it.
    fn extend(&mut self, base: usize) -> Result<usize, String> {
        let mut n = 0usize;
        while self.input.get(self.ip) == Some(&0) {
            self.ip += 1;
            n += 255;
            if n > self.expect + 255 {
                return Err("length run longer than the page".into());
            }
        }
        Ok(n + base + self.byte()?)
    }

    fn literals(&mut self, n: usize) -> Result<(), String> {
        let src = self
            .input
            .get(self.ip..self.ip + n)
            .ok_or("literal run past the input")?;
        if self.out.len() + n > self.expect {
            return Err("output longer than the page".into());
        }
        self.out.extend_from_slice(src);
        self.ip += n;
        Ok(())
    }

    fn copy_match(&mut self, distance: usize, len: usize) -> Result<(), String> {
        let out = &mut self.out;
        if distance == 0 || distance > out.len() {
            return Err(format!(
                "match {distance} bytes back at output {}",
                out.len()
            ));
        }
        if out.len() + len > self.expect {
            return Err("output longer than the page".into());
        }
        let from = out.len() - distance;
        for i in 0..len {
            let b = out[from + i];
            out.push(b);
        }
        Ok(())
    }

    /// The match instruction `t` starts, after an instruction that copied
    /// `state` literals (not 0 for `t` below 16): its distance, length and
    /// the literals that follow it; `None` for the end of the stream.
    fn instruction(
        &mut self,
        t: usize,
        state: usize,
    ) -> Result<Option<(usize, usize, usize)>, String> {
        let (distance, len, next);
        if t < 16 {
            let h = self.byte()?;
            next = t & 3;
            if state != 4 {
                distance = 1 + (t >> 2) + (h << 2);
                len = 2;
            } else {
                distance = 1 + 0x800 + (t >> 2) + (h << 2);
                len = 3;
            }
        } else if t >= 64 {
            let h = self.byte()?;
            next = t & 3;
            distance = 1 + ((t >> 2) & 7) + (h << 3);
            len = (t >> 5) + 1;
        } else if t >= 32 {
            let mut l = t & 31;
            if l == 0 {
                l = self.extend(31)?;
            }
            let d = self.byte()? | self.byte()? << 8;
            next = d & 3;
            distance = 1 + (d >> 2);
            len = l + 2;
        } else {
            let mut l = t & 7;
            if l == 0 {
                l = self.extend(7)?;
            }
            let d = self.byte()? | self.byte()? << 8;
            next = d & 3;
            let far = ((t & 8) << 11) + (d >> 2);
            if far == 0 {
                return Ok(None);
            }
            distance = far + 0x4000;
            len = l + 2;
        }
        Ok(Some((distance, len, next)))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips_what_lzokay_compresses_and_rejects_garbage() {
        let mut page = vec![0u8; 4096];
        for (i, b) in page.iter_mut().enumerate() {
            *b = ((i * 7) % 13) as u8 ^ if i % 100 < 50 { 0 } else { (i / 3) as u8 };
        }
        let packed = lzokay_native::compress(&page).unwrap();
        assert_eq!(super::decompress(&packed, 4096).unwrap(), page);
        let zeros = lzokay_native::compress(&[0u8; 4096]).unwrap();
        assert_eq!(super::decompress(&zeros, 4096).unwrap(), vec![0u8; 4096]);
        let mut bad = packed.clone();
        for b in &mut bad[4..40] {
            *b ^= 0x5a;
        }
        assert!(super::decompress(&bad, 4096).is_err());
        assert!(super::decompress(&packed[..packed.len() / 2], 4096).is_err());
    }
}
