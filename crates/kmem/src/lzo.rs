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
    let mut out: Vec<u8> = Vec::with_capacity(expect);
    let mut ip = 0usize;
    let byte = |ip: &mut usize| -> Result<usize, String> {
        let b = *input.get(*ip).ok_or("input ends inside an instruction")?;
        *ip += 1;
        Ok(usize::from(b))
    };
    // Zero bytes extend a length by 255 each, then one byte adds to it.
    let extend = |ip: &mut usize, base: usize| -> Result<usize, String> {
        let mut n = 0usize;
        while input.get(*ip) == Some(&0) {
            *ip += 1;
            n += 255;
            if n > expect + 255 {
                return Err("length run longer than the page".into());
            }
        }
        Ok(n + base + byte(ip)?)
    };
    let literals = |ip: &mut usize, out: &mut Vec<u8>, n: usize| -> Result<(), String> {
        let src = input
            .get(*ip..*ip + n)
            .ok_or("literal run past the input")?;
        if out.len() + n > expect {
            return Err("output longer than the page".into());
        }
        out.extend_from_slice(src);
        *ip += n;
        Ok(())
    };
    let copy_match = |out: &mut Vec<u8>, distance: usize, len: usize| -> Result<(), String> {
        if distance == 0 || distance > out.len() {
            return Err(format!(
                "match {distance} bytes back at output {}",
                out.len()
            ));
        }
        if out.len() + len > expect {
            return Err("output longer than the page".into());
        }
        let from = out.len() - distance;
        for i in 0..len {
            let b = out[from + i];
            out.push(b);
        }
        Ok(())
    };

    let mut state;
    let first = *input.first().ok_or("empty input")?;
    if first > 17 {
        ip = 1;
        let t = usize::from(first) - 17;
        literals(&mut ip, &mut out, t)?;
        state = if t < 4 { t } else { 4 };
    } else {
        state = 0;
    }
    loop {
        let t = byte(&mut ip)?;
        let (distance, len, next);
        if t < 16 {
            if state == 0 {
                let n = if t == 0 { extend(&mut ip, 15)? } else { t };
                literals(&mut ip, &mut out, n + 3)?;
                state = 4;
                continue;
            }
            let h = byte(&mut ip)?;
            next = t & 3;
            if state != 4 {
                distance = 1 + (t >> 2) + (h << 2);
                len = 2;
            } else {
                distance = 1 + 0x800 + (t >> 2) + (h << 2);
                len = 3;
            }
        } else if t >= 64 {
            let h = byte(&mut ip)?;
            next = t & 3;
            distance = 1 + ((t >> 2) & 7) + (h << 3);
            len = (t >> 5) + 1;
        } else if t >= 32 {
            let mut l = t & 31;
            if l == 0 {
                l = extend(&mut ip, 31)?;
            }
            let d = byte(&mut ip)? | byte(&mut ip)? << 8;
            next = d & 3;
            distance = 1 + (d >> 2);
            len = l + 2;
        } else {
            let mut l = t & 7;
            if l == 0 {
                l = extend(&mut ip, 7)?;
            }
            let d = byte(&mut ip)? | byte(&mut ip)? << 8;
            next = d & 3;
            let far = ((t & 8) << 11) + (d >> 2);
            if far == 0 {
                break;
            }
            distance = far + 0x4000;
            len = l + 2;
        }
        copy_match(&mut out, distance, len)?;
        literals(&mut ip, &mut out, next)?;
        state = next;
    }
    if out.len() != expect {
        return Err(format!("{} bytes, expected {expect}", out.len()));
    }
    Ok(out)
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
