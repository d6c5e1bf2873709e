//! Fuzz input bytes as kernel memory: the bytes are at `base` in the
//! kernel's virtual address space, everything else is unmapped.

pub struct Flat<'a> {
    pub base: u64,
    pub bytes: &'a [u8],
}

impl kmem::Memory for Flat<'_> {
    fn read_phys(&self, addr: u64, _: &mut [u8]) -> kmem::Result<()> {
        Err(kmem::Error::PhysMissing(addr))
    }
    fn read_virt(&self, addr: u64, buf: &mut [u8]) -> kmem::Result<()> {
        let src = addr
            .checked_sub(self.base)
            .and_then(|o| usize::try_from(o).ok())
            .and_then(|o| self.bytes.get(o..o.checked_add(buf.len())?))
            .ok_or(kmem::Error::Unmapped {
                addr,
                reason: "outside the fuzz input".into(),
            })?;
        buf.copy_from_slice(src);
        Ok(())
    }
}
